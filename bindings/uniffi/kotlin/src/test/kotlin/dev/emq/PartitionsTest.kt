package dev.emq

import java.util.Collections
import kotlinx.coroutines.runBlocking
import kotlinx.coroutines.withTimeout
import org.junit.jupiter.api.Assertions.assertEquals
import org.junit.jupiter.api.Assertions.assertTrue
import org.junit.jupiter.api.Test
import org.junit.jupiter.api.Timeout

/**
 * Partitioned queues (`Queue.connect(url, name, partitions = N)`, the core's partitions.rs) on a
 * real server: the count reads back and is the queue's (found without it, another count refused
 * with `INVALID_OPTION`), bad counts refused, one worker runs every job of every partition,
 * groups and schedulers span the partitions, a flow spans partitioned queues, the queue-wide
 * limits split over the partitions, and a queue grows while its worker runs (`growPartitions`).
 */
@Timeout(180)
class PartitionsTest {
    @Test
    fun `the partition count reads back and is the queue's`() = runBlocking {
        withTimeout(150_000) {
            val name = Harness.uniqueQueue("kt-part")
            val q = Queue.connect(Harness.standaloneUrl(), name, partitions = 6)
            try {
                assertEquals(6.toUShort(), q.partitions())
                val again = Queue.connect(Harness.standaloneUrl(), name)
                assertEquals(6.toUShort(), again.partitions())
                again.close()
                val e = assertCode(ErrorCode.INVALID_OPTION, "another count") {
                    runBlocking { Queue.connect(Harness.standaloneUrl(), name, partitions = 4) }
                }
                assertTrue((e as EmqException.Failed).reason.contains("has 6 partitions"), e.reason)
                for (bad in listOf(0L, -1L, 257L)) {
                    val b = assertCode(ErrorCode.INVALID_OPTION, "partitions = $bad") {
                        runBlocking { Queue.connect(Harness.standaloneUrl(), "$name-bad", partitions = bad) }
                    }
                    assertTrue((b as EmqException.Failed).reason.contains("got $bad"), b.reason)
                }
            } finally {
                q.close()
            }
        }
    }

    @Test
    fun `one worker runs every job of every partition`() = runBlocking {
        withTimeout(150_000) {
            val q = Queue.connect(Harness.standaloneUrl(), Harness.uniqueQueue("kt-part-work"), partitions = 4)
            try {
                q.addBulk(List(200) { NewJob("x", "{\"i\":$it}") })
                assertEquals(200uL, q.counts().waiting)
                val seen = Collections.synchronizedList(mutableListOf<String>())
                val h = object : JobHandler {
                    override suspend fun handle(job: JobRecord): String {
                        seen.add(job.dataJson)
                        return "null"
                    }
                }
                val w = q.startWorker(h, 4, 5_000.0)
                try {
                    assertEquals(4, w.queues().size)
                    eventually(60_000, "200 jobs done") { w.stats().completed.takeIf { it == 200uL } }
                } finally {
                    w.shutdown()
                    w.close()
                }
                assertEquals((0 until 200).map { "{\"i\":$it}" }.toSet(), seen.toSet())
                assertEquals(200uL, q.counts().completed)
            } finally {
                q.close()
            }
        }
    }

    @Test
    fun `a partitioned queue grows while a worker runs`() = runBlocking {
        withTimeout(150_000) {
            val q = Queue.connect(Harness.standaloneUrl(), Harness.uniqueQueue("kt-part-grow"), partitions = 2)
            try {
                val seen = Collections.synchronizedList(mutableListOf<String>())
                val h = object : JobHandler {
                    override suspend fun handle(job: JobRecord): String {
                        seen.add(job.dataJson)
                        return "null"
                    }
                }
                val w = q.startWorker(h, 4, 5_000.0)
                try {
                    q.addBulk(List(50) { NewJob("x", "{\"i\":$it}") })
                    assertEquals(3.toUShort(), q.growPartitions(3L))
                    assertEquals(3.toUShort(), q.partitions())
                    q.addBulk(List(150) { NewJob("x", "{\"i\":${it + 50}}") })
                    // The worker restarts itself over all three partitions and runs every job.
                    eventually(60_000, "the worker serves 3 partitions") { w.queues().size.takeIf { it == 3 } }
                    eventually(60_000, "200 jobs done") { q.counts().completed.takeIf { it == 200uL } }
                } finally {
                    w.shutdown()
                    w.close()
                }
                assertEquals((0 until 200).map { "{\"i\":$it}" }.toSet(), seen.toSet())
                assertEquals(200, seen.size)
                for (bad in listOf(3L, 1L, 257L)) {
                    val e = assertCode(ErrorCode.INVALID_OPTION, "grow to $bad") {
                        runBlocking { q.growPartitions(bad) }
                    }
                    assertTrue((e as EmqException.Failed).reason.isNotEmpty())
                }
            } finally {
                q.close()
            }
        }
    }

    @Test
    fun `groups and schedulers span the partitions`() = runBlocking {
        withTimeout(150_000) {
            val q = Queue.connect(Harness.standaloneUrl(), Harness.uniqueQueue("kt-part-gs"), partitions = 3)
            try {
                val names = (0 until 12).map { "t%02d".format(it) }
                q.addBulk(names.map { NewJob("g", "\"$it\"", JobOptions(group = it)) })
                assertEquals(names, q.groups(0uL, 100uL).map { it.name }, "every group once, by name")
                assertEquals(names.subList(4, 7), q.groups(4uL, 3uL).map { it.name })
                q.drain(false)
                val tick = Schedule(name = "tick", dataJson = "{}", everyMs = 40.0, limit = 3uL, options = JobOptions(group = "t01"))
                assertTrue(q.upsertScheduler("tick", tick))
                assertTrue(q.upsertScheduler("later", Schedule(name = "later", dataJson = "{}", everyMs = 60_000.0, firstAfterMs = 60_000.0)))
                assertEquals(listOf("later", "tick"), q.schedulers().map { it.id })
                val ran = Collections.synchronizedList(mutableListOf<String>())
                val h = object : JobHandler {
                    override suspend fun handle(job: JobRecord): String {
                        ran.add(job.id)
                        return "null"
                    }
                }
                val w = q.startWorker(h, 2, 5_000.0)
                try {
                    eventually(60_000, "three runs") { q.counts().completed.takeIf { it == 3uL } }
                } finally {
                    w.shutdown()
                    w.close()
                }
                assertEquals(listOf("later"), q.schedulers().map { it.id }, "removed at its limit")
                assertTrue(q.removeScheduler("later"))
                assertTrue(!q.removeScheduler("later"))
            } finally {
                q.close()
            }
        }
    }

    @Test
    fun `a flow spans partitioned queues`() = runBlocking {
        withTimeout(150_000) {
            val parents = Queue.connect(Harness.standaloneUrl(), Harness.uniqueQueue("kt-part-flow"), partitions = 3)
            val kids = Queue.connect(Harness.standaloneUrl(), Harness.uniqueQueue("kt-part-kids"), partitions = 3)
            try {
                val ids = parents.addFlow(
                    FlowJob(
                        name = "sum", dataJson = "null",
                        children = (1..4).map { FlowJob(name = "c", dataJson = "$it", queue = kids.name()) },
                    ),
                )
                assertEquals(parents.name(), ids.queue)
                assertEquals(List(4) { kids.name() }, ids.children.map { it.queue })
                assertEquals(JobState.WAITING_CHILDREN, parents.get(ids.id)!!.state)
                val h = object : JobHandler {
                    override suspend fun handle(job: JobRecord): String =
                        if (job.name == "c") "${job.dataJson.toInt() * 10}" else "\"parent\""
                }
                val wp = parents.startWorker(h, 2, 5_000.0)
                val wk = kids.startWorker(h, 2, 5_000.0)
                try {
                    parents.waitFor(ids.id, JobState.COMPLETED)
                } finally {
                    for (w in listOf(wp, wk)) {
                        w.shutdown()
                        w.close()
                    }
                }
                // The children's results are named by the logical queue.
                val results = parents.childrenResults(ids.id)
                assertEquals(ids.children.associate { "${kids.name()}:${it.id}" to "${(ids.children.indexOf(it) + 1) * 10}" }, results)
            } finally {
                parents.close()
                kids.close()
            }
        }
    }

    @Test
    fun `the queue-wide limits hold over the partitions`() = runBlocking {
        withTimeout(150_000) {
            val q = Queue.connect(Harness.standaloneUrl(), Harness.uniqueQueue("kt-part-limits"), partitions = 3)
            try {
                // The global concurrency holds over all partitions, below their count too.
                q.setGlobalConcurrency(2u)
                q.addBulk(List(24) { NewJob("c", "$it") })
                val running = java.util.concurrent.atomic.AtomicInteger(0)
                val most = java.util.concurrent.atomic.AtomicInteger(0)
                val h = object : JobHandler {
                    override suspend fun handle(job: JobRecord): String {
                        most.accumulateAndGet(running.incrementAndGet()) { a, b -> maxOf(a, b) }
                        kotlinx.coroutines.delay(30)
                        running.decrementAndGet()
                        return "null"
                    }
                }
                val w = q.startWorker(h, 10, 5_000.0)
                try {
                    eventually(60_000, "24 jobs done") { w.stats().completed.takeIf { it == 24uL } }
                } finally {
                    w.shutdown()
                    w.close()
                }
                assertEquals(2, most.get(), "${most.get()} ran at once (limit 2)")
                q.setGlobalConcurrency(null)
            } finally {
                q.close()
            }
        }
    }
}
