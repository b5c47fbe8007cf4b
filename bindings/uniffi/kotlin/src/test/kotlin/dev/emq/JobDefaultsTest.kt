package dev.emq

import kotlinx.coroutines.delay
import kotlinx.coroutines.runBlocking
import org.junit.jupiter.api.Assertions.assertEquals
import org.junit.jupiter.api.Test
import org.junit.jupiter.api.TestInstance
import org.junit.jupiter.api.Timeout
import java.util.Collections

/**
 * A queue's job defaults from Kotlin (the core's `job_defaults.rs`), on a real server: a job added
 * with no options runs with the queue's attempts and backoff and is removed on completion as the
 * defaults say; the defaults read back as given; bad ones are refused with `InvalidOption` and
 * change nothing.
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
@Timeout(90)
class JobDefaultsTest {

    @Test
    fun `a job without options runs with the queue's defaults`() = withQueue("kt-defaults") { q ->
        q.setJobDefaults(JobDefaults(attempts = 3, backoff = Backoff.Fixed(20.0), removeOnComplete = true))
        assertEquals(JobDefaults(attempts = 3, backoff = Backoff.Fixed(20.0), removeOnComplete = true), q.jobDefaults())
        val id = q.add("charge", "{\"n\":1}")
        val seen = Collections.synchronizedList(mutableListOf<UInt>())
        val handler = object : JobHandler {
            override suspend fun handle(job: JobRecord): String {
                seen.add(job.attempts)
                if (seen.size < 3) throw IllegalStateException("not yet")
                return "1"
            }
        }
        val worker = q.startWorker(handler, 1, 5_000.0)
        try {
            for (i in 0 until 200) {
                if (q.get(id) == null) break
                delay(100)
            }
        } finally {
            worker.shutdown()
        }
        assertEquals(listOf(3u, 3u, 3u), seen.toList())
        val counts = q.counts()
        assertEquals(0uL, counts.completed, "$counts")
        assertEquals(0uL, counts.failed, "$counts")
    }

    @Test
    fun `defaults read back and bad ones change nothing`() = withQueue("kt-defaults-back") { q ->
        val given = JobDefaults(
            attempts = 5,
            backoff = Backoff.Exponential(500.0, 30_000.0),
            jitter = 0.25,
            keepCompleted = Retention(count = 100uL, ageMs = 3_600_000.0),
            removeOnFail = true,
        )
        q.setJobDefaults(given)
        assertEquals(given, q.jobDefaults())
        assertCode(ErrorCode.INVALID_OPTION) { runBlocking { q.setJobDefaults(JobDefaults(attempts = 0)) } }
        assertCode(ErrorCode.INVALID_OPTION) { runBlocking { q.setJobDefaults(JobDefaults(jitter = 1.5)) } }
        assertCode(ErrorCode.INVALID_OPTION) {
            runBlocking { q.setJobDefaults(JobDefaults(removeOnFail = true, keepFailed = Retention(count = 1uL))) }
        }
        assertEquals(given, q.jobDefaults(), "unchanged by the refusals")
        q.setJobDefaults(JobDefaults())
        assertEquals(JobDefaults(), q.jobDefaults())
    }
}
