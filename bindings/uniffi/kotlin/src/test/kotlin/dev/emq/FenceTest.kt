package dev.emq

import java.util.Collections
import org.junit.jupiter.api.Assertions.assertEquals
import org.junit.jupiter.api.Assertions.assertTrue
import org.junit.jupiter.api.Test
import org.junit.jupiter.api.Timeout

/**
 * `job.fence`, the run's fencing token (the core's `JobContext::fence`), on a real server: a job
 * whose first run fails and second succeeds sees a positive fence on each run, the second greater
 * than the first; a job read back carries none (0).
 */
@Timeout(120)
class FenceTest {
    @Test
    fun `the fence is positive on each run and grows across the runs of one job`() = withQueue("kt-fence") { q ->
        val fences = Collections.synchronizedList(mutableListOf<ULong>())
        val handler = object : JobHandler {
            override suspend fun handle(job: JobRecord): String {
                fences.add(job.fence)
                if (job.attemptsMade == 0u) throw HandlerFailure.Failed("first run fails", false)
                return "\"${job.fence}\""
            }
        }
        val worker = q.startWorker(handler, 1, 5_000.0)
        try {
            val id = q.add("charge", "{}", JobOptions(attempts = 2, backoff = Backoff.Fixed(50.0)))
            val done = q.waitFor(id, JobState.COMPLETED)
            assertEquals(2, fences.size, "runs: $fences")
            assertTrue(fences.all { it > 0uL }, "fences: $fences")
            assertTrue(fences[1] > fences[0], "fences: $fences")
            assertEquals("\"${fences[1]}\"", done.resultJson)
            assertEquals(0uL, done.fence, "a job read back carries no fence")
        } finally {
            worker.shutdown()
            worker.close()
        }
    }
}
