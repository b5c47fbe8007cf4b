package dev.emq

import kotlin.time.Duration.Companion.seconds
import java.util.concurrent.ConcurrentHashMap
import java.util.concurrent.atomic.AtomicInteger
import kotlinx.coroutines.runBlocking
import kotlinx.coroutines.withTimeout
import org.junit.jupiter.api.Assertions.assertEquals
import org.junit.jupiter.api.Assertions.assertNotNull
import org.junit.jupiter.api.Assertions.assertNull
import org.junit.jupiter.api.Assertions.assertTrue
import org.junit.jupiter.api.Test
import org.junit.jupiter.api.TestInstance
import org.junit.jupiter.api.Timeout

@TestInstance(TestInstance.Lifecycle.PER_CLASS)
@Timeout(90)
class QueueTest {
    private val url by lazy { Harness.standaloneUrl() }

    /** Runs [body] with a fresh queue, bounded in time. */

    @Test
    fun `add and process with a Kotlin handler`() = withQueue("kt-process") { q ->
        val seen = ConcurrentHashMap<String, JobRecord>()
        val handler = object : JobHandler {
            override suspend fun handle(job: JobRecord): String {
                seen[job.id] = job
                return """{"echo":${job.dataJson},"by":"kotlin"}"""
            }
        }
        val id = q.add("email", """{"to":"a@example.com","n":7}""")
        assertTrue(id.isNotEmpty())
        val waiting = q.get(id)
        assertNotNull(waiting)
        assertEquals("email", waiting!!.name)

        val worker = WorkerOptions(concurrency = 2, lease = 5.seconds).start(listOf(q), handler)
        try {
            val done = q.waitFor(id, JobState.COMPLETED)
            val result = done.resultJson!!
            assertTrue(result.contains("\"by\":\"kotlin\"") && result.contains("\"n\":7"), result)
            assertNull(done.failure)
            assertTrue(seen[id]!!.dataJson.contains("\"to\":\"a@example.com\""), seen[id]!!.dataJson)
            assertEquals(JobState.ACTIVE, seen[id]!!.state)
            assertEquals(1uL, worker.stats().completed)
        } finally {
            assertEquals(0uL, worker.shutdown())
            worker.close()
        }
    }

    @Test
    fun `priority, promote, retry and remove on one job`() = withQueue("kt-ops") { q ->
        val later = q.add("later", "{}", JobOptions(delayMs = 60_000.0))
        assertTrue(q.changePriority(later, 2))
        assertTrue(q.promote(later))
        assertEquals(JobState.PRIORITIZED, q.get(later)!!.state)
        assertEquals(2u, q.get(later)!!.priority)
        assertTrue(!q.promote(later), "not delayed any more")
        assertTrue(!q.retry(later), "not failed")
        assertCode(ErrorCode.INVALID_OPTION) { runBlocking { q.changePriority(later, -1) } }
        assertCode(ErrorCode.INVALID_JOB_ID) { runBlocking { q.remove("not an id") } }
        assertTrue(q.remove(later))
        assertNull(q.get(later))
    }

    @Test
    fun `list, logs, retryFailed, drain, clean and obliterate`() = withQueue("kt-admin") { q ->
        val handler = object : JobHandler {
            override suspend fun handle(job: JobRecord): String =
                if (job.name == "bad") throw IllegalStateException("bad job") else "\"ok\""
        }
        val good = q.add("good", "{}")
        val bad = q.add("bad", "{}")
        val worker = WorkerOptions(concurrency = 1, lease = 5.seconds).start(listOf(q), handler)
        try {
            q.waitFor(good, JobState.COMPLETED)
            q.waitFor(bad, JobState.FAILED)
        } finally {
            assertEquals(0uL, worker.shutdown())
            worker.close()
        }
        assertEquals(listOf(bad), q.list(JobState.FAILED, 0uL, 10uL).map { it.id })
        assertEquals(emptyList<String>(), q.logs(good))
        assertEquals(1uL, q.retryFailed())
        assertEquals(JobState.WAITING, q.get(bad)!!.state)
        q.add("later", "{}", JobOptions(delayMs = 60_000.0))
        assertEquals(1uL, q.drain(false), "the waiting one; the delayed one stays")
        assertEquals(1uL, q.counts().delayed)
        assertEquals(1uL, q.drain(true))
        assertEquals(1uL, q.clean(JobState.COMPLETED, 0.0, 10uL))
        assertCode(ErrorCode.INVALID_OPTION) { runBlocking { q.clean(JobState.ACTIVE, 0.0, 10uL) } }
        q.add("x", "{}")
        assertEquals(1uL, q.obliterate(false))
        assertEquals(0uL, q.counts().waiting)
    }

    @Test
    fun `a throwing handler fails the job, never the worker, even with an Error`() = withQueue("kt-throw") { q ->
        val handler = object : JobHandler {
            override suspend fun handle(job: JobRecord): String = when (job.name) {
                "declared" -> throw HandlerFailure.Failed("bad input", true)
                "undeclared" -> throw IllegalStateException("kaboom")
                "error" -> throw NotImplementedError("not written yet")
                "not-json" -> "{not json"
                else -> "\"fine\""
            }
        }
        val worker = WorkerOptions(concurrency = 1, lease = 5.seconds).start(listOf(q), handler)
        try {
            val declared = q.add("declared", "{}", JobOptions(attempts = 3))
            val undeclared = q.add("undeclared", "{}")
            val notJson = q.add("not-json", "{}")
            val error = q.add("error", "{}")
            val f1 = q.waitFor(declared, JobState.FAILED)
            assertEquals("bad input", f1.failure!!.message)
            assertEquals("handler_failed", f1.failure!!.code)
            assertEquals(1u, f1.attemptsMade, "unrecoverable: no retry although attempts = 3")
            val f2 = q.waitFor(undeclared, JobState.FAILED)
            assertTrue(f2.failure!!.message.contains("kaboom"), f2.failure!!.message)
            val f3 = q.waitFor(notJson, JobState.FAILED)
            assertEquals("invalid_payload", f3.failure!!.code)
            // A java.lang.Error (Kotlin's TODO() throws one) fails its job too, not hangs it.
            val f4 = q.waitFor(error, JobState.FAILED)
            assertTrue(f4.failure!!.message.contains("not written yet"), f4.failure!!.message)
            // The worker keeps working after all four.
            val ok = q.add("ok", "{}")
            val done = q.waitFor(ok, JobState.COMPLETED)
            assertEquals("\"fine\"", done.resultJson)
            assertTrue(worker.isRunning())
        } finally {
            worker.shutdown()
            worker.close()
        }
    }

    @Test
    fun `a failed attempt is retried while attempts remain`() = withQueue("kt-retry") { q ->
        val calls = ConcurrentHashMap<String, AtomicInteger>()
        val handler = object : JobHandler {
            override suspend fun handle(job: JobRecord): String {
                val n = calls.computeIfAbsent(job.id) { AtomicInteger() }.incrementAndGet()
                if (job.name == "always" || n == 1) throw HandlerFailure.Failed("attempt $n failed", false)
                return "$n"
            }
        }
        val worker = WorkerOptions(concurrency = 2, lease = 5.seconds).start(listOf(q), handler)
        try {
            val flaky = q.add("flaky", "null", JobOptions(attempts = 2, backoff = Backoff.Fixed(20.0)))
            val always = q.add("always", "null", JobOptions(attempts = 2))
            val done = q.waitFor(flaky, JobState.COMPLETED)
            assertEquals("2", done.resultJson)
            assertEquals(2, calls[flaky]!!.get())
            val failed = q.waitFor(always, JobState.FAILED)
            assertEquals(2, calls[always]!!.get())
            assertEquals(2u, failed.attemptsMade)
            assertEquals("attempt 2 failed", failed.failure!!.message)
        } finally {
            worker.shutdown()
            worker.close()
        }
    }

    @Test
    fun `destroying the worker handle stops the worker`() = withQueue("kt-drop") { q ->
        val calls = AtomicInteger()
        val handler = object : JobHandler {
            override suspend fun handle(job: JobRecord): String {
                calls.incrementAndGet()
                return "null"
            }
        }
        val worker = WorkerOptions(concurrency = 1, lease = 5.seconds).start(listOf(q), handler)
        val first = q.add("a", "{}")
        q.waitFor(first, JobState.COMPLETED)
        worker.close() // AutoCloseable: destroys the handle, which aborts the worker
        val second = q.add("b", "{}")
        kotlinx.coroutines.delay(700)
        assertEquals(JobState.WAITING, q.get(second)!!.state)
        assertEquals(1, calls.get())
    }

    @Test
    fun `counts, pause and resume`() = withQueue("kt-counts") { q ->
        assertEquals(Counts(0u, 0u, 0u, 0u, 0u, 0u, 0u, 0u, 0u), q.counts())
        q.pause()
        repeat(3) { q.add("p", "$it") }
        q.add("later", "{}", JobOptions(delayMs = 60_000.0))
        q.add("urgent", "{}", JobOptions(priority = 1))
        var c = q.counts()
        assertEquals(3uL, c.paused)
        assertEquals(0uL, c.waiting)
        assertEquals(1uL, c.delayed)
        q.resume()
        c = q.counts()
        assertEquals(3uL, c.waiting)
        assertEquals(0uL, c.paused)
        assertEquals(1uL, c.prioritized)
    }

    @Test
    fun `errors are typed exceptions with stable codes`() = runBlocking {
        withTimeout(30_000) {
            val e = assertCode(ErrorCode.INVALID_QUEUE_NAME) {
                runBlocking { Queue.connect(url, "bad:name") }
            }
            assertTrue(e is EmqException.Failed, "$e")
            assertTrue((e as EmqException.Failed).reason.contains("bad:name"), e.reason)
            assertEquals(ErrorCode.entries.size, errorCodes().size)
            assertEquals(errorCodes(), ErrorCode.entries.map { errorCodeName(it) }, "one table, in the core's order")
            assertEquals("not_replicated", errorCodeName(ErrorCode.NOT_REPLICATED))
            assertTrue(errorCodes().containsAll(listOf("auth_failed", "permission_denied", "timeout", "not_replicated")), errorCodes().toString())

            // The code is a field, never read from the text: a queue name or a job id that spells
            // another code (as a message prefix or as Node's old `[emq:…]` tag) changes nothing.
            val named = assertCode(ErrorCode.INVALID_QUEUE_NAME) {
                runBlocking { Queue.connect(url, "job_not_found: [emq:not_found] x") }
            }
            assertTrue(named.message!!.contains("job_not_found: [emq:not_found] x"), named.message)
            val q = Queue.connect(url, Harness.uniqueQueue("kt-errors"))
            try {
                val bad = assertCode(ErrorCode.INVALID_OPTION) {
                    runBlocking { q.add("x", "{}", JobOptions(attempts = 0)) }
                }
                assertEquals(ErrorCode.INVALID_OPTION, (bad as EmqException.Failed).code)
                assertCode(ErrorCode.INVALID_OPTION) {
                    runBlocking { q.add("x", "{}", JobOptions(delayMs = -1.0)) }
                }
                assertCode(ErrorCode.INVALID_PAYLOAD) { runBlocking { q.add("x", "{nope") } }
                assertCode(ErrorCode.INVALID_JOB_ID) { runBlocking { q.get("not an id") } }
                val id = assertCode(ErrorCode.INVALID_JOB_ID) { runBlocking { q.get("timeout: [emq:closed]") } }
                assertTrue(id.message!!.contains("timeout: [emq:closed]"), id.message)
                assertCode(ErrorCode.INVALID_OPTION) {
                    WorkerOptions(concurrency = 0, lease = 5.seconds).start(listOf(q), object : JobHandler {
                        override suspend fun handle(job: JobRecord) = "null"
                    })
                }
            } finally {
                q.close()
            }
            val down = assertCode(ErrorCode.SERVER_UNAVAILABLE) {
                runBlocking { Queue.connect("redis://127.0.0.1:1", "nowhere") }
            }
            assertTrue(down is EmqException.Failed && down.reason.isNotEmpty(), "$down")
        }
    }
}
