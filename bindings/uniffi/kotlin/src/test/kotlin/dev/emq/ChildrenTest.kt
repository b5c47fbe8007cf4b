package dev.emq

import kotlinx.coroutines.runBlocking
import org.junit.jupiter.api.Assertions.assertEquals
import org.junit.jupiter.api.Test
import org.junit.jupiter.api.TestInstance
import org.junit.jupiter.api.Timeout

/** `Queue.addChild`: a waiting parent takes one more child and waits for it too; others refuse. */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
@Timeout(90)
class ChildrenTest {
    @Test
    fun `a waiting parent takes one more child, and a parent not waiting refuses`() = withQueue("kt-children") { q ->
        val ids = q.addFlow(FlowJob(name = "parent", dataJson = "{}", children = listOf(FlowJob(name = "c", dataJson = """{"n":1}"""))))
        val extra = q.addChild(ids.id, q.name(), "c", """{"n":2}""", JobOptions(priority = 3))
        assertEquals(JobState.PRIORITIZED, q.get(extra)!!.state)
        assertEquals("${q.name()}:${ids.id}", q.get(extra)!!.parent)
        val lone = q.add("lone", "{}")
        assertCode(ErrorCode.INVALID_STATE) { runBlocking { q.addChild(lone, q.name(), "c", "{}") } }
        assertCode(ErrorCode.INVALID_OPTION) { runBlocking { q.addChild(ids.id, q.name(), "c", "{}", JobOptions(dedup = "k")) } }
        assertCode(ErrorCode.INVALID_JOB_ID) { runBlocking { q.addChild("nope", q.name(), "c", "{}") } }

        val handler = object : JobHandler {
            override suspend fun handle(job: JobRecord): String =
                if (job.name == "parent") q.childrenResults(job.id).size.toString() else job.dataJson
        }
        val w = q.startWorker(handler, 2, 5_000.0)
        try {
            val parent = q.waitFor(ids.id, JobState.COMPLETED)
            assertEquals("2", parent.resultJson, "the parent waited for both children")
        } finally {
            w.shutdown(); w.close()
        }
    }
}
