package dev.emq

import java.io.BufferedReader
import java.io.InputStreamReader
import java.util.Collections
import java.util.concurrent.TimeUnit
import kotlin.time.Duration.Companion.milliseconds
import kotlinx.coroutines.CompletableDeferred
import kotlinx.coroutines.Dispatchers
import kotlinx.coroutines.awaitCancellation
import kotlinx.coroutines.cancelAndJoin
import kotlinx.coroutines.flow.first
import kotlinx.coroutines.launch
import kotlinx.coroutines.runBlocking
import kotlinx.coroutines.withTimeout
import org.junit.jupiter.api.Assertions.assertEquals
import org.junit.jupiter.api.Assertions.assertFalse
import org.junit.jupiter.api.Assertions.assertNull
import org.junit.jupiter.api.Assertions.assertTrue
import org.junit.jupiter.api.Test
import org.junit.jupiter.api.TestInstance
import org.junit.jupiter.api.Timeout

/** Worker events as a Kotlin `Flow` (issue 14, item 5): completed, failed, progress, stalled, error. */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
@Timeout(90)
class WorkerEventsTest {
    private val url by lazy { Harness.standaloneUrl() }

    private fun bounded(body: suspend kotlinx.coroutines.CoroutineScope.() -> Unit) = runBlocking { withTimeout(60_000) { body() } }

    @Test
    fun `completed, failed and progress of the worker's jobs arrive on the flow`() = bounded {
        val q = Queue.connect(url, Harness.uniqueQueue("kt-wev"))
        val gate = CompletableDeferred<Unit>()
        val flakyRuns = java.util.concurrent.atomic.AtomicInteger()
        val worker = q.startWorker(object : JobHandler {
            override suspend fun handle(job: JobRecord): String {
                gate.await()
                return when (job.name) {
                    "ok" -> {
                        q.updateProgress(job.id, """{"pct":50}""")
                        """{"n":${job.dataJson}}"""
                    }
                    "flaky" -> if (flakyRuns.incrementAndGet() == 1) throw HandlerFailure.Failed("first try", false) else "1"
                    else -> throw HandlerFailure.Failed("bad job", true)
                }
            }
        }, 2)
        val events = worker.eventsFlow(200.milliseconds)
        val seen = Collections.synchronizedList(mutableListOf<WorkerEvent>())
        val collector = launch(Dispatchers.Default) { events.collect { seen.add(it) } }
        try {
            val ok = q.add("ok", "7")
            val bad = q.add("bad", "0")
            val flaky = q.add("flaky", "0", JobOptions(attempts = 2))
            gate.complete(Unit)
            eventually(20_000, "4 outcome events") {
                // A synchronized list is iterated under its lock: the collector adds to it meanwhile.
                synchronized(seen) { seen.count { it.kind == WorkerEventKind.COMPLETED || it.kind == WorkerEventKind.FAILED } }
                    .takeIf { it >= 4 }
            }
            val byJob = synchronized(seen) { seen.groupBy { it.jobId } }
            val okEvents = byJob[ok]!!
            assertTrue(okEvents.any { it.kind == WorkerEventKind.PROGRESS && it.progressJson == """{"pct":50}""" }, "$okEvents")
            val done = okEvents.single { it.kind == WorkerEventKind.COMPLETED }
            assertEquals("""{"n":7}""", done.resultJson)
            val failed = byJob[bad]!!.single { it.kind == WorkerEventKind.FAILED }
            assertFalse(failed.willRetry)
            assertEquals("bad job", failed.failureMessage)
            assertEquals("handler_failed", failed.failureCode)
            val flakyKinds = byJob[flaky]!!.map { it.kind to it.willRetry }
            assertEquals(listOf(WorkerEventKind.FAILED to true, WorkerEventKind.COMPLETED to false), flakyKinds)
            val all = synchronized(seen) { seen.toList() }
            assertTrue(all.none { it.kind == WorkerEventKind.ERROR }, "$all")
        } finally {
            collector.cancelAndJoin()
            worker.shutdown()
            worker.close()
            q.close()
        }
    }

    @Test
    fun `a job another worker left behind shows as stalled`() = bounded {
        val name = Harness.uniqueQueue("kt-wev-stall")
        val q = Queue.connect(url, name)
        val started = CompletableDeferred<String>()
        // A handler that never returns; the worker is aborted, so its job stays leased.
        val lost = WorkerOptions(concurrency = 1, lease = 500.milliseconds).start(listOf(q), object : JobHandler {
            override suspend fun handle(job: JobRecord): String {
                started.complete(job.id)
                awaitCancellation()
            }
        })
        val id = q.add("stuck", "{}", JobOptions(attempts = 3))
        assertEquals(id, withTimeout(15_000) { started.await() })
        lost.abort()
        lost.close()
        val rescuer = WorkerOptions(concurrency = 1, lease = 500.milliseconds, stalledInterval = 200.milliseconds, maxStalls = 2u).start(listOf(q), object : JobHandler {
            override suspend fun handle(job: JobRecord): String = "\"rescued\""
        })
        try {
            val stalled = withTimeout(20_000) {
                rescuer.eventsFlow(200.milliseconds).first { it.kind == WorkerEventKind.STALLED }
            }
            assertEquals(id, stalled.jobId)
            q.waitFor(id, JobState.COMPLETED)
        } finally {
            rescuer.shutdown()
            rescuer.close()
            q.close()
        }
    }

    @Test
    fun `a lost connection is an error event and the flow keeps going`() = bounded {
        // A private server of our own, stopped under the subscription.
        val p = ProcessBuilder(System.getProperty("emq.harness"), "up", "--standalone")
            .redirectError(ProcessBuilder.Redirect.INHERIT)
            .start()
        try {
            val line = BufferedReader(InputStreamReader(p.inputStream)).readLine()
            val own = Regex("\"standalone\"\\s*:\\s*\"([^\"]+)\"").find(line)!!.groupValues[1]
            val q = Queue.connect(own, Harness.uniqueQueue("kt-wev-err"))
            val worker = q.startWorker(object : JobHandler {
                override suspend fun handle(job: JobRecord): String = ""
            }, 1)
            try {
                val events = worker.eventsFlow(200.milliseconds)
                p.outputStream.close()
                assertTrue(p.waitFor(20, TimeUnit.SECONDS), "the private harness did not stop")
                val errors = Collections.synchronizedList(mutableListOf<WorkerEvent>())
                val collector = launch(Dispatchers.Default) {
                    events.collect { if (it.kind == WorkerEventKind.ERROR) errors.add(it) }
                }
                // Two errors in a row: the flow went on after the first.
                eventually(20_000, "two error events") { errors.size.takeIf { it >= 2 } }
                collector.cancelAndJoin()
                val e = errors.first()
                assertEquals("server_unavailable", e.failureCode)
                assertNull(e.jobId)
            } finally {
                worker.abort()
                worker.close()
                q.close()
            }
        } finally {
            runCatching { p.outputStream.close() }
            if (!p.waitFor(15, TimeUnit.SECONDS)) p.destroy()
        }
    }
}
