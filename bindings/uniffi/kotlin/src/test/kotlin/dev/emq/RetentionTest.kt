package dev.emq

import kotlinx.coroutines.delay
import kotlinx.coroutines.runBlocking
import org.junit.jupiter.api.Assertions.assertEquals
import org.junit.jupiter.api.Assertions.assertNotNull
import org.junit.jupiter.api.Test
import org.junit.jupiter.api.TestInstance
import org.junit.jupiter.api.Timeout

/**
 * Retention as options from Kotlin, on a real server: a job's own `keepCompleted` (BullMQ's
 * `removeOnComplete: {count, age}`) by count, the queue-wide retention as worker options, and a
 * bad retention refused with `InvalidOption`.
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
@Timeout(90)
class RetentionTest {

    private val ok = object : JobHandler {
        override suspend fun handle(job: JobRecord) = "1"
    }

    @Test
    fun `a job's count keeps the newest completed jobs`() = withQueue("kt-ret-count") { q ->
        val keep2 = JobOptions(keepCompleted = Retention(count = 2uL))
        val ids = (0 until 5).map { q.add("ok", "$it", keep2) }
        val keepAll = Retention(count = ULong.MAX_VALUE shr 11)
        val worker = q.startWorker(ok, 1, 5_000.0, completed = keepAll, failed = keepAll)
        try {
            var counts = q.counts()
            for (i in 0 until 150) {
                if (counts.completed == 2uL && counts.waiting == 0uL && counts.active == 0uL) break
                delay(100)
                counts = q.counts()
            }
            assertEquals(2uL, counts.completed, "$counts")
            assertEquals(listOf(false, false, false, true, true), ids.map { q.get(it) != null })
            assertEquals(keep2, q.get(ids[4])!!.options)
        } finally {
            worker.shutdown()
        }
    }

    @Test
    fun `bad retentions are refused`() = withQueue("kt-ret-bad") { q ->
        assertCode(ErrorCode.INVALID_OPTION) {
            runBlocking { q.add("x", "{}", JobOptions(keepCompleted = Retention())) }
        }
        assertCode(ErrorCode.INVALID_OPTION) {
            runBlocking { q.add("x", "{}", JobOptions(removeOnFail = true, keepFailed = Retention(count = 1uL))) }
        }
        assertCode(ErrorCode.INVALID_OPTION) {
            q.startWorker(ok, 1, 5_000.0, completed = Retention(ageMs = -1.0))
        }
        assertNotNull(q.add("x", "{}", JobOptions(keepFailed = Retention(ageMs = 60_000.0))))
    }
}
