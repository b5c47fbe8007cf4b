package dev.emq

import kotlin.time.Duration.Companion.seconds
import java.util.concurrent.ConcurrentHashMap
import kotlinx.coroutines.delay
import kotlinx.coroutines.runBlocking
import org.junit.jupiter.api.Assertions.assertEquals
import org.junit.jupiter.api.Assertions.assertNotEquals
import org.junit.jupiter.api.Assertions.assertTrue
import org.junit.jupiter.api.Test
import org.junit.jupiter.api.TestInstance
import org.junit.jupiter.api.Timeout

/** The queue's extras from Kotlin: dedup (live and with a TTL), limits and job schedulers. */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
@Timeout(90)
class ExtrasTest {

    @Test
    fun `a dedup key returns the live job, and a TTL hold outlives it`() = withQueue("kt-dedup") { q ->
        val first = q.add("charge", "{}", JobOptions(dedup = "order-1"))
        assertEquals(first, q.add("charge", "{}", JobOptions(dedup = "order-1")))
        val held = q.add("mail", "{}", JobOptions(dedup = "mail-1", dedupTtlMs = 60_000.0, removeOnComplete = true))
        val worker = WorkerOptions(concurrency = 2, lease = 5.seconds).start(listOf(q), object : JobHandler {
            override suspend fun handle(job: JobRecord) = "null"
        })
        try {
            eventually(15_000, "both jobs to finish") { q.counts().takeIf { it.completed == 1uL && it.waiting == 0uL && it.active == 0uL } }
            assertEquals(null, q.get(held), "removed on completion")
            // The live key is free once its job completed; the TTL hold is not.
            assertNotEquals(first, q.add("charge", "{}", JobOptions(dedup = "order-1")))
            assertEquals(held, q.add("mail", "{}", JobOptions(dedup = "mail-1", dedupTtlMs = 60_000.0)))
        } finally {
            worker.shutdown()
            worker.close()
        }
        assertCode(ErrorCode.INVALID_OPTION) {
            runBlocking { q.add("x", "{}", JobOptions(dedupTtlMs = 10.0)) }
        }
    }

    @Test
    fun `a scheduler's runs are processed by a Kotlin worker`() = withQueue("kt-sched") { q ->
        val runs = ConcurrentHashMap.newKeySet<String>()
        val worker = WorkerOptions(concurrency = 1, lease = 5.seconds).start(listOf(q), object : JobHandler {
            override suspend fun handle(job: JobRecord): String {
                runs.add(job.id)
                assertEquals("tick", job.name)
                return "null"
            }
        })
        try {
            assertTrue(q.upsertScheduler("ticker", Schedule(name = "tick", dataJson = """{"k":1}""", everyMs = 100.0, limit = 3uL)))
            eventually(15_000, "three runs") { runs.size.takeIf { it >= 3 } }
            delay(400)
            assertEquals(3, runs.size, "the limit holds")
            assertTrue(q.schedulers().none { it.id == "ticker" }, "a scheduler at its limit is removed")
            assertTrue(q.upsertScheduler("nightly", Schedule(name = "n", dataJson = "{}", cron = "0 3 * * *", tz = "Europe/Berlin")))
            val listed = q.schedulers().single { it.id == "nightly" }
            assertEquals("0 3 * * *", listed.cron)
            assertTrue(listed.nextInMs!! in 1uL..(25uL * 3_600_000uL), "next run within a day: ${listed.nextInMs}")
            assertTrue(q.removeScheduler("nightly"))
        } finally {
            worker.shutdown()
            worker.close()
        }
        assertCode(ErrorCode.INVALID_OPTION) {
            runBlocking { q.upsertScheduler("bad", Schedule(name = "n", dataJson = "{}", cron = "61 * * * *")) }
        }
        assertCode(ErrorCode.INVALID_OPTION) {
            runBlocking { q.upsertScheduler("bad", Schedule(name = "n", dataJson = "{}", cron = "* * * * *", tz = "Mars/Olympus")) }
        }
        assertCode(ErrorCode.INVALID_OPTION) {
            runBlocking { q.upsertScheduler("bad", Schedule(name = "n", dataJson = "{}")) }
        }
    }

    @Test
    fun `limits are set, checked and lifted`() = withQueue("kt-limits") { q ->
        q.setGlobalConcurrency(2u)
        q.setRateLimit(RateLimit(10u, 1_000.0))
        q.setGroupRateLimit(RateLimit(1u, 400.0))
        val starts = ConcurrentHashMap<String, Long>()
        val ids = (0 until 3).map { q.add("g", "{}", JobOptions(group = "tenant-a")) }
        val worker = WorkerOptions(concurrency = 4, lease = 5.seconds).start(listOf(q), object : JobHandler {
            override suspend fun handle(job: JobRecord): String {
                starts[job.id] = System.nanoTime()
                return "null"
            }
        })
        try {
            eventually(15_000, "three grouped jobs") { starts.size.takeIf { it == 3 } }
            val sorted = ids.map { starts[it]!! }.sorted()
            for (i in 1 until sorted.size) {
                val gapMs = (sorted[i] - sorted[i - 1]) / 1_000_000
                assertTrue(gapMs >= 300, "one start of the group per 400 ms window, saw a gap of $gapMs ms")
            }
        } finally {
            worker.shutdown()
            worker.close()
        }
        assertCode(ErrorCode.INVALID_OPTION) { runBlocking { q.setRateLimit(RateLimit(0u, 1_000.0)) } }
        assertCode(ErrorCode.INVALID_OPTION) { runBlocking { q.setGlobalConcurrency(0u) } }
        q.setGlobalConcurrency(null)
        q.setRateLimit(null)
        q.setGroupRateLimit(null)
    }
}
