package dev.emq

import kotlin.time.Duration.Companion.seconds
import kotlin.time.Duration.Companion.milliseconds
import java.io.BufferedReader
import java.io.File
import java.io.InputStreamReader
import java.util.Collections
import java.util.concurrent.TimeUnit
import java.util.concurrent.atomic.AtomicInteger
import kotlin.coroutines.cancellation.CancellationException
import kotlinx.coroutines.CompletableDeferred
import kotlinx.coroutines.NonCancellable
import kotlinx.coroutines.async
import kotlinx.coroutines.coroutineScope
import kotlinx.coroutines.delay
import kotlinx.coroutines.runBlocking
import kotlinx.coroutines.withContext
import kotlinx.coroutines.withTimeout
import org.junit.jupiter.api.Assertions.assertEquals
import org.junit.jupiter.api.Assertions.assertNotNull
import org.junit.jupiter.api.Assertions.assertTrue
import org.junit.jupiter.api.Test
import org.junit.jupiter.api.TestInstance
import org.junit.jupiter.api.Timeout

/** A handler failure message that spells other codes (a prefix, Node's old `[emq:…]` tag). */
private const val TRICKY = "job_not_found: [emq:not_found] timeout: not the code of this failure"

/**
 * Worker control (issue 14): a timeout, a cancel and a shutdown cancel the handler's coroutine and
 * are recorded only once it stopped; `cancel`, `wait`, `abort`, `closeOnShutdown`, `mintId` with
 * `JobOptions(id)`, `workers`, and the worker options' bounds.
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
@Timeout(120)
class WorkerControlTest {
    private val url by lazy { Harness.standaloneUrl() }

    /** A handler that suspends until cancelled, then takes [cleanupMs] (non-cancellable) to stop. */
    private class Suspending(val cleanupMs: Long = 0) : JobHandler {
        val started = CompletableDeferred<String>()
        val runs = Collections.synchronizedList(mutableListOf<Pair<Long, Long>>())
        val cancelled = AtomicInteger()
        val active = AtomicInteger()
        val maxActive = AtomicInteger()

        override suspend fun handle(job: JobRecord): String {
            val start = System.nanoTime()
            maxActive.accumulateAndGet(active.incrementAndGet()) { a, b -> maxOf(a, b) }
            started.complete(job.id)
            try {
                delay(60_000)
                return "\"not cancelled\""
            } catch (e: CancellationException) {
                cancelled.incrementAndGet()
                throw e
            } finally {
                if (cleanupMs > 0) withContext(NonCancellable) { delay(cleanupMs) }
                active.decrementAndGet()
                runs.add(start to System.nanoTime())
            }
        }
    }

    @Test
    fun `a timeout cancels the coroutine and no two runs of a job overlap at concurrency 1`() =
        withQueue("kt-timeout", 90_000) { q ->
            // Each run is cancelled at 300 ms and takes 400 ms more to stop: a retry that started
            // when the timeout fired, rather than when the coroutine ended, would overlap it.
            val h = Suspending(cleanupMs = 400)
            val id = q.add("slow", "{}", JobOptions(timeoutMs = 300.0, attempts = 2))
            val worker = WorkerOptions(concurrency = 1, lease = 5.seconds).start(listOf(q), h)
            try {
                val failed = q.waitFor(id, JobState.FAILED)
                assertEquals("timeout", failed.failure!!.code, failed.failure!!.message)
                assertEquals(2u, failed.attemptsMade)
                assertEquals(2, h.cancelled.get(), "each run's coroutine saw CancellationException")
                assertEquals(1, h.maxActive.get(), "never two runs at once")
                val runs = h.runs.sortedBy { it.first }
                assertEquals(2, runs.size)
                assertTrue(runs[1].first >= runs[0].second, "the retry started before the first run ended: $runs")
                assertEquals(0uL, worker.stats().running)
            } finally {
                worker.shutdown()
                worker.close()
            }
        }

    @Test
    fun `cancel a waiting, a delayed, a running and a finished job`() = withQueue("kt-cancel", 90_000) { q ->
        val waiting = q.add("w", "{}", JobOptions(attempts = 3))
        val delayed = q.add("d", "{}", JobOptions(delayMs = 60_000.0))
        assertEquals("cancelled", q.cancel(waiting, "not needed"))
        assertEquals("cancelled", q.cancel(delayed, "too late"))
        for ((id, reason) in listOf(waiting to "not needed", delayed to "too late")) {
            val j = q.get(id)!!
            assertEquals(JobState.FAILED, j.state)
            assertEquals("cancelled", j.failure!!.code)
            assertTrue(j.failure!!.message.contains(reason), j.failure!!.message)
        }
        assertEquals("finished", q.cancel(waiting, "again"))
        assertEquals("not_found", q.cancel(q.mintId(), "never added"))
        assertCode(ErrorCode.INVALID_JOB_ID) { runBlocking { q.cancel("not an id", "") } }

        val h = Suspending()
        val running = q.add("r", "{}", JobOptions(attempts = 3))
        val worker = WorkerOptions(concurrency = 1, lease = 5.seconds).start(listOf(q), h)
        try {
            assertEquals(running, withTimeout(15_000) { h.started.await() })
            val asked = System.nanoTime()
            assertEquals("requested", q.cancel(running, "customer left"))
            val j = q.waitFor(running, JobState.FAILED)
            val tookMs = (System.nanoTime() - asked) / 1_000_000
            assertEquals(1, h.cancelled.get(), "the running coroutine was cancelled")
            assertEquals("cancelled", j.failure!!.code)
            assertTrue(j.failure!!.message.contains("customer left"), j.failure!!.message)
            assertEquals(1u, j.attemptsMade, "not retried although attempts remain")
            println("cancel of a running job: failed (cancelled) ${tookMs} ms after cancel()")
            assertTrue(tookMs < 5_000, "took $tookMs ms")
        } finally {
            worker.shutdown()
            worker.close()
        }
    }

    @Test
    fun `wait returns the result or throws the failure or a timeout`() = withQueue("kt-wait", 90_000) { q ->
        val handler = object : JobHandler {
            override suspend fun handle(job: JobRecord): String = when (job.name) {
                "bad" -> throw HandlerFailure.Failed("boom at the end", true)
                "tricky" -> throw HandlerFailure.Failed(TRICKY, true)
                "slow" -> { delay(300); """{"slow":true}""" }
                else -> """{"n":${job.dataJson}}"""
            }
        }
        val before = q.add("fast", "1")
        val worker = WorkerOptions(concurrency = 2, lease = 5.seconds).start(listOf(q), handler)
        try {
            q.waitFor(before, JobState.COMPLETED)
            assertEquals("""{"n":1}""", q.wait(before, 5_000.0), "finished before the wait began")
            val after = q.add("slow", "{}")
            assertEquals("""{"slow":true}""", q.wait(after, 10_000.0), "finished while waiting")
            val bad = q.add("bad", "{}")
            val e = assertJobFailed { runBlocking { q.wait(bad, 10_000.0) } }
            assertEquals("handler_failed", e.failureCode)
            assertEquals("boom at the end", e.reason)
            assertEquals(null, e.stack, "a Kotlin handler gives no stack")
            // A failure message that spells other codes is only the reason: the codes are fields.
            val tricky = q.add("tricky", "{}")
            val te = assertJobFailed { runBlocking { q.wait(tricky, 10_000.0) } }
            assertEquals(ErrorCode.HANDLER_FAILED, te.code)
            assertEquals("handler_failed", te.failureCode)
            assertEquals(TRICKY, te.reason)
            val cancelled = q.add("c", "{}", JobOptions(delayMs = 60_000.0))
            q.cancel(cancelled, "stop")
            val ce = assertJobFailed { runBlocking { q.wait(cancelled, 5_000.0) } }
            assertEquals("cancelled", ce.failureCode)
            assertEquals("the job was cancelled: stop", ce.reason)
        } finally {
            worker.shutdown()
            worker.close()
        }
        val never = q.add("never", "{}")
        val t0 = System.nanoTime()
        assertCode(ErrorCode.TIMEOUT) { runBlocking { q.wait(never, 300.0) } }
        val waitedMs = (System.nanoTime() - t0) / 1_000_000
        assertTrue(waitedMs in 250..5_000, "waited $waitedMs ms")
        assertCode(ErrorCode.JOB_NOT_FOUND) { runBlocking { q.wait(q.mintId(), 1_000.0) } }
        assertCode(ErrorCode.INVALID_OPTION) { runBlocking { q.wait(never, -1.0) } }
    }

    @Test
    fun `a graceful shutdown gives a running job back uncounted, abort stops at once`() =
        withQueue("kt-shutdown", 90_000) { q ->
            val h = Suspending()
            val id = q.add("long", "{}")
            val worker = WorkerOptions(concurrency = 1, lease = 5.seconds, shutdownTimeout = 200.milliseconds).start(listOf(q), h)
            withTimeout(15_000) { h.started.await() }
            assertEquals(1uL, worker.shutdown(), "one job given back")
            worker.close()
            assertEquals(1, h.cancelled.get(), "the coroutine was cancelled after the grace period")
            val j = q.get(id)!!
            assertEquals(JobState.WAITING, j.state)
            assertEquals(0u, j.attemptsMade, "the attempt is not counted")

            // abort(): a close that would wait 30 s ends at once and gives nothing back.
            val h2 = Suspending()
            val w2 = WorkerOptions(concurrency = 1, lease = 5.seconds, shutdownTimeout = 30.seconds).start(listOf(q), h2)
            assertEquals(id, withTimeout(15_000) { h2.started.await() })
            val t0 = System.nanoTime()
            val released = coroutineScope {
                val closing = async { w2.shutdown() }
                delay(200)
                w2.abort()
                withTimeout(10_000) { closing.await() }
            }
            assertEquals(0uL, released, "nothing given back")
            val tookMs = (System.nanoTime() - t0) / 1_000_000
            assertTrue(tookMs < 5_000, "close took $tookMs ms after abort")
            assertEquals(JobState.ACTIVE, q.get(id)!!.state, "left to its lease, as after a crash")
            eventually(10_000, "the aborted run's coroutine to be cancelled") { h2.cancelled.get().takeIf { it == 1 } }
            w2.close()
        }

    @Test
    fun `SIGTERM to a JVM worker process gives its running job back to waiting, attempts intact`() =
        withQueue("kt-sigterm", 90_000) { q ->
            val id = q.add("long", "{}", JobOptions(attempts = 2))
            val cp = System.getProperty("surefire.test.class.path") ?: System.getProperty("java.class.path")
            val java = File(System.getProperty("java.home"), "bin/java").path
            val p = ProcessBuilder(
                java, "-cp", cp,
                "-Djna.library.path=" + System.getProperty("jna.library.path"),
                "dev.emq.SigtermWorkerMain", url, q.name(),
            ).redirectError(ProcessBuilder.Redirect.INHERIT).start()
            try {
                val reader = BufferedReader(InputStreamReader(p.inputStream))
                val line = arrayOfNulls<String>(1)
                val t = Thread {
                    while (true) {
                        val l = reader.readLine() ?: break
                        if (l.startsWith("started ")) { line[0] = l; break }
                    }
                }
                t.isDaemon = true
                t.start()
                t.join(60_000)
                assertEquals("started $id", line[0], "the worker process took the job")
                assertEquals(JobState.ACTIVE, q.get(id)!!.state)
                p.destroy() // SIGTERM
                assertTrue(p.waitFor(30, TimeUnit.SECONDS), "the worker process exited")
                println("worker process exit status after SIGTERM: ${p.exitValue()}")
                val j = q.get(id)!!
                assertEquals(JobState.WAITING, j.state, "back in waiting at once, not left to its lease")
                assertEquals(0u, j.attemptsMade)
                assertEquals(null, j.failure)
            } finally {
                if (p.isAlive) p.destroyForcibly()
            }
            // Another worker runs it to completion.
            val done = object : JobHandler {
                override suspend fun handle(job: JobRecord): String = "\"done\""
            }
            val w = WorkerOptions(concurrency = 1, lease = 5.seconds).start(listOf(q), done)
            try {
                assertEquals("\"done\"", q.wait(id, 15_000.0))
                assertEquals(1u, q.get(id)!!.attemptsMade)
            } finally {
                w.shutdown()
                w.close()
            }
        }

    @Test
    fun `mintId makes an add idempotent, workers lists this worker`() = withQueue("kt-mint", 90_000) { q ->
        val id = q.mintId()
        assertEquals(id, q.add("once", "{}", JobOptions(id = id)))
        assertEquals(id, q.add("once", "{}", JobOptions(id = id)), "the same id adds one job")
        assertEquals(1uL, q.counts().waiting)
        assertCode(ErrorCode.INVALID_JOB_ID) { runBlocking { q.add("x", "{}", JobOptions(id = "nope")) } }

        val idle = object : JobHandler {
            override suspend fun handle(job: JobRecord): String = "null"
        }
        val worker = WorkerOptions(concurrency = 3, lease = 5.seconds).start(listOf(q), idle)
        try {
            val ws = eventually(15_000, "the worker to register") { q.workers().takeIf { it.isNotEmpty() } }
            assertEquals(1, ws.size)
            val w = ws[0]
            assertEquals("kotlin", w.language)
            assertEquals(3uL, w.concurrency)
            assertEquals(q.name(), w.queue)
            assertEquals(ProcessHandle.current().pid().toUInt(), w.pid)
            assertTrue(w.lapseMs > w.beatMs && w.beatMs >= w.startedMs && w.id.isNotEmpty(), w.toString())
        } finally {
            worker.shutdown()
            worker.close()
        }
        val gone = eventually(5_000, "the worker to leave the registry") { q.workers().takeIf { it.isEmpty() } }
        assertEquals(0, gone.size)
    }

    @Test
    fun `worker options are checked by the core`() = withQueue("kt-wopts", 90_000) { q ->
        val h = object : JobHandler {
            override suspend fun handle(job: JobRecord): String = "null"
        }
        for (bad in listOf<() -> WorkerHandle>(
            { q.startWorker(h, maxStalls = 1_000_000u) },
            { WorkerOptions(stalledInterval = 0.milliseconds).start(listOf(q), h) },
            { WorkerOptions(blockTimeout = 0.milliseconds).start(listOf(q), h) },
            { WorkerOptions(shutdownTimeout = (-1.0).milliseconds).start(listOf(q), h) },
            { WorkerOptions(shutdownTimeout = (1e12).milliseconds).start(listOf(q), h) },
            { q.startWorker(h, concurrency = 0) },
        )) {
            assertCode(ErrorCode.INVALID_OPTION) { bad() }
        }
        val w = WorkerOptions(concurrency = 2, lease = 5.seconds, shutdownTimeout = 0.milliseconds, stalledInterval = 1.seconds, maxStalls = 3u, blockTimeout = 500.milliseconds).start(listOf(q), h)
        val id = q.add("ok", "{}")
        assertEquals("null", q.wait(id, 10_000.0))
        assertNotNull(w.stats())
        w.shutdown()
        w.close()
    }

    @Test
    fun `stats count a job failed for good once, its retried runs apart, and keep them after shutdown`() = withQueue("kstats", 90_000) { q ->
        val handler = object : JobHandler {
            override suspend fun handle(job: JobRecord): String = throw IllegalStateException("always")
        }
        val w = WorkerOptions(concurrency = 1, lease = 5.seconds, blockTimeout = 500.milliseconds).start(listOf(q), handler)
        try {
            val id = q.add("bad", "{}", JobOptions(attempts = 3))
            assertJobFailed { runBlocking { q.wait(id, 15_000.0) } }
            assertEquals(3u, q.waitFor(id, JobState.FAILED).attemptsMade)
        } finally {
            w.shutdown()
        }
        val s = w.stats()
        assertEquals(listOf(0uL, 1uL, 2uL), listOf(s.completed, s.failed, s.retried), "$s")
        assertEquals(0uL, s.running)
        w.close()
    }
}

/** The worker process of the SIGTERM test: takes jobs that never end, closes on JVM shutdown. */
object SigtermWorkerMain {
    @JvmStatic
    fun main(args: Array<String>) = runBlocking {
        val q = Queue.connect(args[0], args[1])
        val handler = object : JobHandler {
            override suspend fun handle(job: JobRecord): String {
                println("started ${job.id}")
                System.out.flush()
                delay(120_000)
                return "\"not interrupted\""
            }
        }
        val worker = WorkerOptions(concurrency = 1, lease = 5.seconds, shutdownTimeout = 300.milliseconds).start(listOf(q), handler)
        worker.closeOnShutdown()
        // Bounded: the test sends SIGTERM long before.
        delay(100_000)
    }
}
