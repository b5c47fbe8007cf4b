package dev.emq

import kotlin.time.Duration.Companion.milliseconds
import java.util.Collections
import kotlinx.coroutines.runBlocking
import kotlinx.coroutines.withTimeout
import org.junit.jupiter.api.Assertions.assertEquals
import org.junit.jupiter.api.Assertions.assertTrue
import org.junit.jupiter.api.Test
import org.junit.jupiter.api.Timeout

/**
 * One worker on several queues (`startWorkerMany`, the core's `Worker::builder_many`) on a real
 * server: strict order, weights 5:1, bad orders refused with `INVALID_OPTION`, `queues()` and
 * `statsByQueue()` read back.
 */
@Timeout(180)
class MultiQueueTest {
    private fun two(prefix: String, body: suspend (Queue, Queue) -> Unit) = runBlocking {
        withTimeout(150_000) {
            val base = Harness.uniqueQueue(prefix)
            val a = Queue.connect(Harness.standaloneUrl(), "$base-a")
            val b = Queue.connect(Harness.standaloneUrl(), "$base-b")
            try {
                body(a, b)
            } finally {
                a.close()
                b.close()
            }
        }
    }

    private fun recorder(starts: MutableList<String>) = object : JobHandler {
        override suspend fun handle(job: JobRecord): String {
            starts.add(job.name)
            return "null"
        }
    }

    /** By the worker's counters: the queues' `completed` counts stop at the default retention (1,000). */
    private suspend fun done(w: WorkerHandle, n: ULong) =
        eventually(60_000, "$n jobs done") { w.stats().completed.takeIf { it == n } }

    @Test
    fun `strict starts every job of the first queue before the second's first`() = two("kt-strict") { a, b ->
        b.addBulk(List(30) { NewJob("b", "{}") })
        a.addBulk(List(30) { NewJob("a", "{}") })
        val starts = Collections.synchronizedList(mutableListOf<String>())
        val w = WorkerOptions(strict = true, concurrency = 2, blockTimeout = 200.milliseconds).start(listOf(a, b), recorder(starts))
        try {
            assertEquals(listOf(a.name(), b.name()), w.queues())
            done(w, 60uL)
            val per = w.statsByQueue()
            assertEquals(listOf(a.name() to 30uL, b.name() to 30uL), per.map { it.queue to it.completed })
        } finally {
            w.shutdown()
            w.close()
        }
        assertEquals(30, starts.indexOf("b"), "$starts")
        assertTrue(starts.take(30).all { it == "a" }, "$starts")
    }

    @Test
    fun `weights 5 to 1 share the first 1200 starts by weight`() = two("kt-weights") { a, b ->
        a.addBulk(List(1_200) { NewJob("a", "{}") })
        b.addBulk(List(1_200) { NewJob("b", "{}") })
        val starts = Collections.synchronizedList(mutableListOf<String>())
        val weights = mapOf(a.name() to 5u, b.name() to 1u)
        val w = WorkerOptions(weights = weights, concurrency = 4, blockTimeout = 200.milliseconds).start(listOf(a, b), recorder(starts))
        try {
            done(w, 2_400uL)
        } finally {
            w.shutdown()
            w.close()
        }
        val aStarts = starts.take(1_200).count { it == "a" }
        // The weights reach the core: 5:1 is 1,000 of 1,200; equal weights would be 600. The core's exact
        // share is measured in bench/RESULTS.md ("Multi-queue worker"), not asserted here.
        assertTrue(aStarts in 900..1_140, "5:1 means about 1,000 of the first 1,200 starts, saw $aStarts")
    }

    @Test
    fun `bad orders and queue lists are refused with INVALID_OPTION`() = two("kt-bad") { a, b ->
        val h = recorder(Collections.synchronizedList(mutableListOf()))
        val cases: List<Pair<String, () -> Unit>> = listOf(
            "exclude each other" to { startWorkerMany(listOf(a, b), h, strict = true, weights = mapOf(a.name() to 1u)) },
            "not one of the worker's queues" to { startWorkerMany(listOf(a, b), h, weights = mapOf("nope" to 2u)) },
            "between 1 and 1000" to { startWorkerMany(listOf(a, b), h, weights = mapOf(a.name() to 0u)) },
            "got 1001" to { startWorkerMany(listOf(a, b), h, weights = mapOf(a.name() to 1_001u)) },
            "at least one queue" to { startWorkerMany(listOf(), h) },
            "named twice" to { startWorkerMany(listOf(a, a), h) },
        )
        for ((says, start) in cases) {
            val e = assertCode(ErrorCode.INVALID_OPTION, says) { start() }
            val reason = (e as EmqException.Failed).reason
            assertTrue(reason.contains(says), "$reason should say $says")
        }
        assertEquals(0uL, a.counts().active)
    }
}
