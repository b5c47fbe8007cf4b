package dev.emq

import kotlinx.coroutines.async
import kotlinx.coroutines.awaitAll
import kotlinx.coroutines.runBlocking
import kotlinx.coroutines.withTimeout
import org.junit.jupiter.api.Assertions.assertEquals
import org.junit.jupiter.api.Test
import org.junit.jupiter.api.Timeout

/**
 * A processing benchmark hook: times 2000 no-op jobs through a Kotlin handler at concurrency 10
 * and prints jobs/s. It asserts only that every job completed (throughput varies with the
 * machine). Set -Demq.bench.jobs=N to change the number of jobs.
 */
@Timeout(120)
class BenchTest {
    @Test
    fun `process no-op jobs at concurrency 10`() = runBlocking {
        val jobs = System.getProperty("emq.bench.jobs")?.toIntOrNull() ?: 2000
        withTimeout(110_000) {
            val q = Queue.connect(Harness.standaloneUrl(), Harness.uniqueQueue("kt-bench"))
            try {
                // Add in batches of 200 concurrent adds.
                val addStart = System.nanoTime()
                for (batch in (0 until jobs).chunked(200)) {
                    batch.map { i -> async { q.add("noop", "$i", JobOptions(removeOnComplete = true)) } }.awaitAll()
                }
                val addSecs = (System.nanoTime() - addStart) / 1e9
                val handler = object : JobHandler {
                    override suspend fun handle(job: JobRecord): String = "null"
                }
                val start = System.nanoTime()
                val worker = q.startWorker(handler, 10, 30_000.0)
                try {
                    eventually(100_000, "$jobs jobs to complete") {
                        worker.stats().completed.takeIf { it >= jobs.toULong() }
                    }
                    val secs = (System.nanoTime() - start) / 1e9
                    println(
                        "emq-uniffi bench: added %d jobs in %.2f s (%.0f adds/s); processed in %.2f s: %.0f jobs/s (concurrency 10, Kotlin no-op handler)"
                            .format(jobs, addSecs, jobs / addSecs, secs, jobs / secs),
                    )
                    assertEquals(0uL, q.counts().waiting)
                } finally {
                    worker.shutdown()
                    worker.close()
                }
            } finally {
                q.close()
            }
        }
    }
}
