package dev.emq

import java.util.Collections
import java.util.concurrent.atomic.AtomicBoolean
import kotlin.time.Duration
import kotlin.time.Duration.Companion.days
import kotlin.time.Duration.Companion.milliseconds
import kotlin.time.Duration.Companion.minutes
import kotlin.time.Duration.Companion.seconds
import kotlinx.coroutines.CompletableDeferred
import kotlinx.coroutines.CoroutineScope
import kotlinx.coroutines.Dispatchers
import kotlinx.coroutines.Job
import kotlinx.coroutines.SupervisorJob
import kotlinx.coroutines.awaitCancellation
import kotlinx.coroutines.cancel
import kotlinx.coroutines.cancelAndJoin
import kotlinx.coroutines.launch
import kotlinx.coroutines.runBlocking
import kotlinx.coroutines.withTimeout
import kotlinx.serialization.Serializable
import org.junit.jupiter.api.Assertions.assertEquals
import org.junit.jupiter.api.Assertions.assertFalse
import org.junit.jupiter.api.Assertions.assertNull
import org.junit.jupiter.api.Assertions.assertTrue
import org.junit.jupiter.api.Test
import org.junit.jupiter.api.TestInstance
import org.junit.jupiter.api.Timeout

@Serializable
data class Order(val id: Long, val customer: String, val lines: List<Line>, val note: String? = null, val rush: Boolean = false)

@Serializable
data class Line(val sku: String, val qty: Int, val price: Double)

@Serializable
data class Receipt(val order: Long, val total: Double, val items: Int)

/** The idiomatic Kotlin layer (issue 31, item 2): Durations, typed data, the scope-bound worker, events. */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
@Timeout(90)
class IdiomaticTest {
    private val url by lazy { Harness.standaloneUrl() }

    private fun bounded(body: suspend CoroutineScope.() -> Unit) = runBlocking { withTimeout(60_000) { body() } }

    private val order = Order(
        id = (1L shl 53) - 1,
        customer = "Zoë \"quoted\" 東京 \uD83D\uDE80",
        lines = listOf(Line("a-1", 2, 9.99), Line("b/2", 1, 0.1 + 0.2)),
        note = null,
        rush = true,
    )

    @Test
    fun `typed data and result round-trip exactly`() = bounded {
        val q = Queue.connect(url, Harness.uniqueQueue("kt-typed"))
        val scope = CoroutineScope(SupervisorJob() + Dispatchers.Default)
        val seen = CompletableDeferred<Order>()
        val worker = scope.worker(q, WorkerOptions(concurrency = 2)) { job ->
            val o = job.data<Order>()
            seen.complete(o)
            Receipt(o.id, o.lines.sumOf { it.qty * it.price }, o.lines.size)
        }
        try {
            val id = q.add("order", order, AddOptions(attempts = 2))
            val receipt: Receipt = q.wait(id, 20.seconds)
            assertEquals(order, seen.await())
            assertEquals(Receipt(order.id, 2 * 9.99 + (0.1 + 0.2), 2), receipt)
            val job = q.get(id)!!
            assertEquals(order, job.data<Order>())
            assertEquals(receipt, job.result<Receipt>())
            // A Unit handler stores no result.
            val unitQ = Queue.connect(url, Harness.uniqueQueue("kt-typed-unit"))
            val w2 = scope.worker(unitQ) { _ -> }
            val u = unitQ.add("x", listOf(1, 2, 3))
            assertEquals(listOf(1, 2, 3), unitQ.waitFor(u, JobState.COMPLETED).data<List<Int>>())
            assertNull(unitQ.get(u)!!.result<Receipt>())
            w2.stop()
            unitQ.close()
        } finally {
            worker.stop()
            scope.cancel()
            q.close()
        }
    }

    @Test
    fun `Duration options reach the core and read back`() = bounded {
        val q = Queue.connect(url, Harness.uniqueQueue("kt-dur"))
        try {
            val opts = AddOptions(
                delay = 1.minutes,
                attempts = 4,
                backoff = Backoffs.exponential(1.5.seconds, max = 1.minutes),
                jitter = 0.25,
                lease = 45.seconds,
                timeout = 20.seconds,
                keepCompleted = Keep(count = 10u, age = 1.days),
                dedup = "k-1",
                dedupTtl = 90.seconds,
                group = "tenant-a",
                description = "durations",
            )
            val id = q.add("d", mapOf("a" to 1), opts)
            val back = q.get(id)!!
            assertEquals(JobState.DELAYED, back.state)
            assertEquals(60_000.0, back.options.delayMs)
            assertEquals(Backoff.Exponential(1_500.0, 60_000.0), back.options.backoff)
            assertEquals(opts, back.options.toAddOptions())
            // Fixed backoff converts too.
            assertEquals(Backoff.Fixed(250.0), Backoffs.fixed(250.milliseconds))
            // The core checks the values: negative and infinite durations are refused there.
            assertCode(ErrorCode.INVALID_OPTION) { runBlocking { q.add("bad", 1, AddOptions(delay = (-1).seconds)) } }
            assertCode(ErrorCode.INVALID_OPTION) { runBlocking { q.add("bad", 1, AddOptions(timeout = Duration.INFINITE)) } }
            assertCode(ErrorCode.INVALID_OPTION) { runBlocking { CoroutineScope(Dispatchers.Default).worker(q, WorkerOptions(lease = Duration.ZERO)) { _ -> } } }
            assertCode(ErrorCode.INVALID_OPTION) { runBlocking { CoroutineScope(Dispatchers.Default).worker(q, WorkerOptions(concurrency = 0)) { _ -> } } }
        } finally {
            q.close()
        }
    }

    @Test
    fun `worker options reach the core`() = bounded {
        val q = Queue.connect(url, Harness.uniqueQueue("kt-wopt"))
        val scope = CoroutineScope(SupervisorJob() + Dispatchers.Default)
        val worker = scope.worker(q, WorkerOptions(concurrency = 3, lease = 2.seconds, blockTimeout = 500.milliseconds)) { _ -> "ok" }
        try {
            val info = eventually(15_000, "the worker registered") { q.workers().firstOrNull() }
            assertEquals(3uL, info.concurrency)
            assertEquals("kotlin", info.language)
        } finally {
            worker.stop()
            scope.cancel()
            q.close()
        }
    }

    @Test
    fun `cancelling the scope stops the worker gracefully`() = bounded {
        val q = Queue.connect(url, Harness.uniqueQueue("kt-scope"))
        val scope = CoroutineScope(Job() + Dispatchers.Default)
        val started = CompletableDeferred<Unit>()
        val release = CompletableDeferred<Unit>()
        val worker = scope.worker(q, WorkerOptions(shutdownTimeout = 10.seconds)) { _ ->
            started.complete(Unit)
            release.await()
            "done"
        }
        try {
            val id = q.add("slow", 1)
            started.await()
            assertTrue(worker.isRunning)
            scope.cancel()
            // The graceful stop waits for the running job within its grace.
            assertFalse(worker.job.isCompleted)
            release.complete(Unit)
            worker.job.join()
            assertFalse(worker.isRunning)
            assertEquals(JobState.COMPLETED, q.get(id)!!.state)
            assertEquals(1uL, worker.stats().completed)
            // Nothing takes new jobs any more.
            val later = q.add("later", 2)
            kotlinx.coroutines.delay(500)
            assertEquals(JobState.WAITING, q.get(later)!!.state)
        } finally {
            q.close()
        }
    }

    @Test
    fun `a job cancel cancels the handler's coroutine`() = bounded {
        val q = Queue.connect(url, Harness.uniqueQueue("kt-jcancel"))
        val scope = CoroutineScope(SupervisorJob() + Dispatchers.Default)
        val started = CompletableDeferred<String>()
        val cancelled = AtomicBoolean(false)
        val worker = scope.worker<String>(q) { job ->
            started.complete(job.id)
            try {
                awaitCancellation()
            } finally {
                cancelled.set(true)
            }
        }
        try {
            val id = q.add("long", 1, AddOptions(attempts = 3))
            assertEquals(id, started.await())
            assertEquals("requested", q.cancel(id, "customer left"))
            val failed = q.waitFor(id, JobState.FAILED)
            assertEquals("cancelled", failed.failure!!.code)
            assertTrue(cancelled.get(), "the handler's coroutine was cancelled")
            assertTrue(worker.isRunning, "the worker goes on")
        } finally {
            worker.stop()
            scope.cancel()
            q.close()
        }
    }

    @Test
    fun `events flow receives completed and failed from the core's hook`() = bounded {
        val q = Queue.connect(url, Harness.uniqueQueue("kt-evflow"))
        val scope = CoroutineScope(SupervisorJob() + Dispatchers.Default)
        val worker = scope.worker(q) { job ->
            if (job.name == "bad") failJob("no such customer", unrecoverable = true)
            q.updateProgress(job.id, """{"pct":100}""")
            Receipt(job.data<Order>().id, 1.0, 1)
        }
        val events = worker.events(200.milliseconds)
        val seen = Collections.synchronizedList(mutableListOf<WorkerEvent>())
        val collector = launch(Dispatchers.Default) { events.collect { seen.add(it) } }
        try {
            val ok = q.add("ok", order)
            val bad = q.add("bad", order)
            eventually(20_000, "2 outcome events") {
                synchronized(seen) { seen.count { it.kind == WorkerEventKind.COMPLETED || it.kind == WorkerEventKind.FAILED } }.takeIf { it >= 2 }
            }
            val all = synchronized(seen) { seen.toList() }
            val done = all.single { it.kind == WorkerEventKind.COMPLETED }
            assertEquals(ok, done.jobId)
            assertEquals(Receipt(order.id, 1.0, 1), kotlinx.serialization.json.Json.decodeFromString<Receipt>(done.resultJson!!))
            assertTrue(all.any { it.kind == WorkerEventKind.PROGRESS && it.jobId == ok && it.progressJson == """{"pct":100}""" }, "$all")
            val failed = all.single { it.kind == WorkerEventKind.FAILED }
            assertEquals(bad, failed.jobId)
            assertEquals("handler_failed", failed.failureCode)
            assertEquals("no such customer", failed.failureMessage)
            assertFalse(failed.willRetry)
            assertEquals(1u, failed.attemptsMade)
            assertEquals("", failed.streamId)
        } finally {
            collector.cancelAndJoin()
            worker.stop()
            scope.cancel()
            q.close()
        }
    }
}
