package dev.emq

import kotlin.time.Duration.Companion.seconds
import kotlinx.coroutines.async
import kotlinx.coroutines.coroutineScope
import kotlinx.coroutines.delay
import kotlinx.coroutines.runBlocking
import kotlinx.coroutines.withTimeout
import org.junit.jupiter.api.Assertions.assertEquals
import org.junit.jupiter.api.Assertions.assertFalse
import org.junit.jupiter.api.Assertions.assertNull
import org.junit.jupiter.api.Assertions.assertTrue
import org.junit.jupiter.api.Test
import org.junit.jupiter.api.TestInstance
import org.junit.jupiter.api.Timeout

/**
 * Events, metrics, progress and logs, isPaused, every job option read back by `get`, and the
 * queue's graceful close, from Kotlin.
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
@Timeout(90)
class EventsMetricsTest {
    private val url by lazy { Harness.standaloneUrl() }

    /** Reads [stream] until [want] returns true for one of the events seen, bounded in reads. */
    private suspend fun awaitEvent(stream: EventStream, what: String, want: (Event) -> Boolean): List<Event> {
        val seen = mutableListOf<Event>()
        repeat(40) {
            seen += stream.next(250.0, 100u)
            if (seen.any(want)) return seen
        }
        throw AssertionError("no event $what within 40 reads; saw ${seen.map { "${it.kind}:${it.jobId}" }}")
    }

    @Test
    fun `events of an added and processed job are seen in order`() = withQueue("kt-events") { q ->
        val stream = q.events()
        try {
            val id = q.add("e", """{"x":1}""")
            val added = awaitEvent(stream, "added $id") { it.kind == "added" && it.jobId == id }
            assertTrue(added.single { it.jobId == id }.streamId.matches(Regex("""\d+-\d+""")))
            val worker = WorkerOptions(concurrency = 1, lease = 5.seconds).start(listOf(q), object : JobHandler {
                override suspend fun handle(job: JobRecord) = "null"
            })
            try {
                val seen = awaitEvent(stream, "completed $id") { it.kind == "completed" && it.jobId == id }
                val kinds = seen.filter { it.jobId == id }.map { it.kind }
                assertTrue(kinds.indexOf("active") in 0 until kinds.indexOf("completed"), "$kinds")
            } finally {
                worker.shutdown()
                worker.close()
            }
            // A stream opened after an event's id replays what followed it.
            val replay = q.events(added.first { it.jobId == id }.streamId)
            assertTrue(awaitEvent(replay, "replayed completed") { it.kind == "completed" && it.jobId == id }.none { it.kind == "added" && it.jobId == id })
            replay.shutdown()
            val recent = q.recentEvents(50u)
            assertEquals(listOf("added", "active", "completed"), recent.filter { it.jobId == id }.map { it.kind }.filter { it in setOf("added", "active", "completed") })
        } finally {
            stream.shutdown()
            stream.close()
        }
        assertCode(ErrorCode.INVALID_OPTION) { runBlocking { q.events().next(-1.0, 10u) } }
    }

    @Test
    fun `closing an event stream ends a read in progress`() = withQueue("kt-events-close") { q ->
        val stream = q.events()
        var ms = 0L
        val got = coroutineScope {
            val read = async { stream.next(20_000.0, 10u) }
            delay(300)
            val t0 = System.nanoTime()
            stream.shutdown()
            withTimeout(5_000) { read.await() }.also { ms = (System.nanoTime() - t0) / 1_000_000 }
        }
        assertEquals(emptyList<Event>(), got)
        assertTrue(ms < 3_000, "the read ended $ms ms after close")
        q.add("after", "{}")
        assertEquals(emptyList<Event>(), stream.next(200.0, 10u), "a closed stream reads nothing")
        stream.close()
    }

    @Test
    fun `metrics count added, completed, failed and deleted jobs`() = withQueue("kt-metrics") { q ->
        val ids = q.addBulk(
            listOf(
                NewJob("ok", "{}"), NewJob("ok", "{}"), NewJob("bad", "{}"),
                NewJob("bad", "{}", JobOptions(removeOnFail = true)),
            ),
        )
        val worker = WorkerOptions(concurrency = 2, lease = 5.seconds).start(listOf(q), object : JobHandler {
            override suspend fun handle(job: JobRecord): String {
                if (job.name == "bad") throw HandlerFailure.Failed("no", true)
                return "null"
            }
        })
        try {
            eventually(15_000, "two completed, one failed") {
                q.counts().takeIf { it.completed == 2uL && it.failed == 1uL && it.active == 0uL && it.waiting == 0uL }
            }
        } finally {
            worker.shutdown()
            worker.close()
        }
        assertNull(q.get(ids[3]), "removeOnFail deleted the failed job")
        assertEquals(JobState.FAILED, q.get(ids[2])!!.state)
        val m = eventually(5_000, "the per-minute counts") {
            q.metrics().takeIf { it.failedPerMinute.sumOf { c -> c.count } == 2uL }
        }
        assertEquals(q.name(), m.queue)
        assertEquals(4uL, m.added)
        assertEquals(1uL, m.deleted)
        assertEquals(2uL, m.counts.completed)
        assertEquals(1uL, m.counts.failed)
        assertEquals(2uL, m.completedPerMinute.sumOf { it.count })
        val nowMinute = System.currentTimeMillis().toULong() / 60_000uL
        assertTrue(m.completedPerMinute.all { it.minute in (nowMinute - 2uL)..(nowMinute + 1uL) }, "${m.completedPerMinute}")
        assertEquals(0uL, m.leaseLost)
        assertEquals(0uL, m.stalled)
        // The latency histograms: each completed run counted once, in one of the core's buckets.
        assertEquals(latencyBucketsMs().size + 1, m.run.counts.size)
        assertEquals(2uL, m.run.counts.sum(), "run lengths counted: ${m.run}")
        assertEquals(2uL, m.wait.counts.sum(), "first-run waits counted: ${m.wait}")
    }

    @Test
    fun `progress and log lines are recorded and read back`() = withQueue("kt-progress") { q ->
        val id = q.add("p", "{}")
        val stream = q.events()
        q.updateProgress(id, """{"pct":40}""")
        assertEquals("""{"pct":40}""", q.get(id)!!.progressJson)
        val seen = awaitEvent(stream, "progress") { it.kind == "progress" && it.jobId == id }
        assertTrue(seen.any { it.kind == "progress" && it.jobId == id })
        stream.shutdown()
        stream.close()
        assertEquals(1uL, q.log(id, "first"))
        assertEquals(2uL, q.log(id, "second ✓"))
        assertEquals(listOf("first", "second ✓"), q.logs(id))
        val missing = q.add("gone", "{}").also { q.remove(it) }
        assertCode(ErrorCode.JOB_NOT_FOUND) { runBlocking { q.log(missing, "x") } }
        assertCode(ErrorCode.JOB_NOT_FOUND) { runBlocking { q.updateProgress(missing, "1") } }
        assertCode(ErrorCode.INVALID_PAYLOAD) { runBlocking { q.updateProgress(id, "{nope") } }
        assertCode(ErrorCode.INVALID_JOB_ID) { runBlocking { q.log("not-an-id", "x") } }
    }

    @Test
    fun `isPaused follows pause and resume`() = withQueue("kt-paused") { q ->
        assertFalse(q.isPaused())
        q.pause()
        assertTrue(q.isPaused())
        q.resume()
        assertFalse(q.isPaused())
    }

    @Test
    fun `every job option round-trips through get`() = withQueue("kt-options") { q ->
        val all = JobOptions(
            delayMs = 60_000.0, priority = 7, attempts = 5,
            backoff = Backoff.Exponential(100.0, 5_000.0), jitter = 0.5, leaseMs = 12_000.0,
            lifo = true, removeOnComplete = true, removeOnFail = true, timeoutMs = 3_000.0,
            dedup = "opt-key", debounce = true, dedupTtlMs = 90_000.0,
            parentPolicy = ParentPolicy.REMOVE, group = "tenant-7",
        )
        val id = q.add("all", "{}", all)
        val job = q.get(id)!!
        assertEquals(all, job.options)
        assertEquals(JobState.DELAYED, job.state)
        assertEquals(7u, job.priority)
        assertEquals(5u, job.attempts)
        assertTrue(job.createdMs > 0uL)

        val fixed = JobOptions(backoff = Backoff.Fixed(250.0), parentPolicy = ParentPolicy.IGNORE)
        assertEquals(fixed, q.get(q.add("fixed", "{}", fixed))!!.options)
        // Defaults read back as the defaults (null backoff: retry at once; null policy: Fail).
        assertEquals(JobOptions(), q.get(q.add("plain", "{}"))!!.options)
        assertEquals(JobOptions(), q.get(q.add("fail", "{}", JobOptions(parentPolicy = ParentPolicy.FAIL)))!!.options)

        for (bad in listOf(
            JobOptions(jitter = 1.5),
            JobOptions(leaseMs = -1.0),
            JobOptions(backoff = Backoff.Fixed(-1.0)),
            JobOptions(backoff = Backoff.Exponential(10.0, Double.NaN)),
            JobOptions(debounce = true),
        )) {
            assertCode(ErrorCode.INVALID_OPTION, "$bad") { runBlocking { q.add("bad", "{}", bad) } }
        }
    }

    @Test
    fun `exponential backoff spaces the retries`() = withQueue("kt-backoff") { q ->
        val starts = java.util.concurrent.CopyOnWriteArrayList<Long>()
        val worker = WorkerOptions(concurrency = 1, lease = 5.seconds).start(listOf(q), object : JobHandler {
            override suspend fun handle(job: JobRecord): String {
                starts += System.nanoTime()
                throw HandlerFailure.Failed("again", false)
            }
        })
        try {
            val id = q.add("x", "{}", JobOptions(attempts = 3, backoff = Backoff.Exponential(200.0, 0.0)))
            eventually(15_000, "job $id to fail") { q.get(id)?.takeIf { it.state == JobState.FAILED } }
        } finally {
            worker.shutdown()
            worker.close()
        }
        assertEquals(3, starts.size)
        val gaps = (1 until 3).map { (starts[it] - starts[it - 1]) / 1_000_000 }
        assertTrue(gaps[0] >= 180 && gaps[1] >= 380, "waits of 200 then 400 ms, saw $gaps")
    }

    @Test
    fun `after shutdown the queue mints no more ids`() = runBlocking {
        withTimeout(30_000) {
            val q = Queue.connect(url, Harness.uniqueQueue("kt-qclose"))
            val id = q.add("before", "{}")
            q.shutdown()
            assertCode(ErrorCode.NODE_LEASE_LOST) { runBlocking { q.add("after", "{}") } }
            assertEquals("before", q.get(id)!!.name, "reads still work")
            q.close()
        }
    }
}
