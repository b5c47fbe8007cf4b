package dev.emq

import kotlin.time.Duration.Companion.seconds
import java.util.concurrent.ConcurrentHashMap
import kotlinx.coroutines.runBlocking
import org.junit.jupiter.api.Assertions.assertEquals
import org.junit.jupiter.api.Assertions.assertNotNull
import org.junit.jupiter.api.Assertions.assertNull
import org.junit.jupiter.api.Assertions.assertTrue
import org.junit.jupiter.api.Test
import org.junit.jupiter.api.TestInstance
import org.junit.jupiter.api.Timeout

/** Bulk adds and flows (a parent waiting for its children, across queues) from Kotlin. */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
@Timeout(90)
class BulkFlowTest {
    private val url by lazy { Harness.standaloneUrl() }

    @Test
    fun `addBulk returns the ids in order and stores each job`() = withQueue("kt-bulk") { q ->
        val held = q.add("charge", """{"n":0}""", JobOptions(dedup = "order-9"))
        val jobs = listOf(
            NewJob("mail", """{"n":1}"""),
            NewJob("mail", """{"n":2}""", JobOptions(priority = 5, attempts = 3)),
            NewJob("charge", """{"n":3}""", JobOptions(dedup = "order-9")),
            NewJob("later", """{"n":4}""", JobOptions(delayMs = 60_000.0)),
        )
        val ids = q.addBulk(jobs)
        assertEquals(4, ids.size)
        assertEquals(held, ids[2], "a held dedup key gives the holder's id")
        assertEquals(4, ids.toSet().size, "the other three are new jobs")
        val first = q.get(ids[0])!!
        assertEquals("mail", first.name)
        assertEquals("""{"n":1}""", first.dataJson)
        assertEquals(JobState.WAITING, first.state)
        val second = q.get(ids[1])!!
        assertEquals("""{"n":2}""", second.dataJson)
        assertEquals(JobState.PRIORITIZED, second.state)
        assertEquals(5u, second.priority)
        assertEquals(3u, second.attempts)
        assertEquals("""{"n":0}""", q.get(held)!!.dataJson, "the holder keeps its data")
        assertEquals(JobState.DELAYED, q.get(ids[3])!!.state)
        val c = q.counts()
        assertEquals(Triple(2uL, 1uL, 1uL), Triple(c.waiting, c.prioritized, c.delayed))

        // One bad job refuses the whole batch before anything is written.
        assertCode(ErrorCode.INVALID_PAYLOAD) {
            runBlocking { q.addBulk(listOf(NewJob("ok", "{}"), NewJob("bad", "{not json"))) }
        }
        assertCode(ErrorCode.INVALID_OPTION) {
            runBlocking { q.addBulk(listOf(NewJob("ok", "{}"), NewJob("bad", "{}", JobOptions(attempts = 0)))) }
        }
        assertEquals(c, q.counts())
        assertEquals(emptyList<String>(), q.addBulk(emptyList()))
    }

    @Test
    fun `a flow's parent runs after its children, in this queue and another`() = withQueue("kt-flow") { q ->
        val other = Queue.connect(url, Harness.uniqueQueue("kt-flow-other"))
        val finishedAt = ConcurrentHashMap<String, Long>()
        val seenResults = ConcurrentHashMap<String, Map<String, String>>()
        val handler = object : JobHandler {
            override suspend fun handle(job: JobRecord): String {
                if (job.name == "parent") seenResults[job.id] = q.childrenResults(job.id)
                finishedAt[job.id] = System.nanoTime()
                return """{"from":"${job.name}"}"""
            }
        }
        try {
            val ids = q.addFlow(
                FlowJob(
                    name = "parent", dataJson = """{"p":1}""",
                    children = listOf(
                        FlowJob(name = "here", dataJson = """{"c":1}"""),
                        FlowJob(name = "there", dataJson = """{"c":2}""", queue = other.name()),
                    ),
                ),
            )
            assertEquals(q.name(), ids.queue)
            assertEquals(listOf(q.name(), other.name()), ids.children.map { it.queue })
            assertEquals(JobState.WAITING_CHILDREN, q.get(ids.id)!!.state)
            val here = ids.children[0].id
            val there = ids.children[1].id
            assertEquals("${q.name()}:${ids.id}", q.get(here)!!.parent)
            assertEquals("${q.name()}:${ids.id}", other.get(there)!!.parent)

            val w1 = WorkerOptions(concurrency = 2, lease = 5.seconds).start(listOf(q), handler)
            val w2 = WorkerOptions(concurrency = 1, lease = 5.seconds).start(listOf(other), handler)
            try {
                val parent = q.waitFor(ids.id, JobState.COMPLETED)
                assertEquals("""{"from":"parent"}""", parent.resultJson)
                assertTrue(finishedAt[ids.id]!! > finishedAt[here]!! && finishedAt[ids.id]!! > finishedAt[there]!!)
                assertEquals(
                    mapOf("${q.name()}:$here" to """{"from":"here"}""", "${other.name()}:$there" to """{"from":"there"}"""),
                    seenResults[ids.id],
                )
                assertEquals(seenResults[ids.id], q.childrenResults(ids.id))
            } finally {
                w1.shutdown(); w1.close()
                w2.shutdown(); w2.close()
            }
        } finally {
            other.close()
        }
        // A parent takes no delay (its children may).
        assertCode(ErrorCode.INVALID_OPTION) {
            runBlocking {
                q.addFlow(FlowJob("p", "{}", JobOptions(delayMs = 10.0), children = listOf(FlowJob("c", "{}"))))
            }
        }
        assertCode(ErrorCode.INVALID_JOB_ID) { runBlocking { q.childrenResults("nope") } }
    }

    @Test
    fun `parentPolicy Ignore lets the parent complete past a failed child`() = withQueue("kt-policy") { q ->
        val ids = q.addFlow(
            FlowJob(
                name = "parent", dataJson = "{}",
                children = listOf(
                    FlowJob("ok", "{}"),
                    FlowJob("boom", "{}", JobOptions(parentPolicy = ParentPolicy.IGNORE)),
                ),
            ),
        )
        val strict = q.addFlow(
            FlowJob("strict-parent", "{}", children = listOf(FlowJob("boom", "{}"))),
        )
        val worker = WorkerOptions(concurrency = 2, lease = 5.seconds).start(listOf(q), object : JobHandler {
            override suspend fun handle(job: JobRecord): String {
                if (job.name == "boom") throw HandlerFailure.Failed("child failed", true)
                return "1"
            }
        })
        try {
            q.waitFor(ids.id, JobState.COMPLETED)
            val results = q.childrenResults(ids.id)
            assertEquals("1", results["${q.name()}:${ids.children[0].id}"])
            val failed = results["${q.name()}:${ids.children[1].id}"]
            assertNotNull(failed)
            assertTrue(failed!!.startsWith("""{"failed":""") && failed.contains("child failed"), failed)
            // The default policy (Fail) fails the parent.
            val parent = q.waitFor(strict.id, JobState.FAILED)
            assertNull(parent.resultJson)
        } finally {
            worker.shutdown()
            worker.close()
        }
    }
}
