package dev.emq

import kotlinx.coroutines.runBlocking
import org.junit.jupiter.api.Assertions.assertEquals
import org.junit.jupiter.api.Assertions.assertFalse
import org.junit.jupiter.api.Assertions.assertNull
import org.junit.jupiter.api.Assertions.assertTrue
import org.junit.jupiter.api.Test
import org.junit.jupiter.api.TestInstance
import org.junit.jupiter.api.Timeout

/**
 * Batches from Kotlin (`Queue.batch`, `Queue.openBatch`, `Batch`): jobs on another queue, a
 * running job opening its batch from `JobRecord.batch` and adding to it, the completion callback
 * added once after the last outcome with the batch's counts in `JobRecord.batchDone`, the failed
 * jobs paged by `status`, `cancel`, bad input refused with its code.
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
@Timeout(90)
class BatchTest {
    @Test
    fun `the callback is added once, after every job and the jobs they added`() = withQueue("kt-batch") { q ->
        val jobs = Queue.connect(Harness.standaloneUrl(), q.name() + "-jobs")
        val cb = Queue.connect(Harness.standaloneUrl(), q.name() + "-cb")
        try {
            val batch = q.batch(
                BatchOptions(
                    onComplete = BatchCallback(cb.name(), "complete", """{"k":1}""", JobOptions(attempts = 2)),
                    onSuccess = BatchCallback(cb.name(), "success", "null"),
                    description = "import",
                ),
            )
            batch.add(jobs.name(), "spawn", """{"children":2}""")
            val ids = batch.addBulk(
                jobs.name(),
                listOf(NewJob("work", """{"fail":true}"""), NewJob("work", """{"fail":false}""")),
            )
            assertEquals(q.name(), jobs.get(ids[0])!!.batch!!.queue)
            assertEquals(batch.id(), jobs.get(ids[0])!!.batch!!.id)
            batch.seal()

            val handler = object : JobHandler {
                override suspend fun handle(job: JobRecord): String {
                    if (job.name == "spawn") {
                        val ref = job.batch!!
                        val mine = q.openBatch(ref.id)
                        repeat(2) { i -> mine.add(jobs.name(), "child", """{"i":$i}""") }
                    }
                    if (job.dataJson.contains("\"fail\":true")) throw IllegalStateException("broke")
                    return "\"ok\""
                }
            }
            val w = jobs.startWorker(handler, 4, 5_000.0)
            try {
                eventually(20_000, "the batch done") { batch.status().takeIf { it.done } }
            } finally {
                w.shutdown(); w.close()
            }
            val st = batch.status()
            assertEquals(listOf(5uL, 4uL, 1uL, 0uL), listOf(st.total, st.completed, st.failed, st.pending), "$st")
            assertEquals("import", st.description)
            assertTrue(st.sealed)
            assertFalse(st.cancelled)
            assertEquals(listOf(BatchJob(jobs.name(), ids[0])), st.failedJobs)

            val waiting = cb.list(JobState.WAITING)
            assertEquals(listOf("complete"), waiting.map { it.name }, "only onComplete: one job failed")
            val callback = waiting.single()
            assertEquals("""{"k":1}""", callback.dataJson)
            assertEquals(2u, callback.attempts)
            assertNull(callback.batch, "a callback is not a member of the batch")
            val done = callback.batchDone!!
            assertEquals(BatchDone(q.name(), batch.id(), "complete", 5uL, 4uL, 1uL), done)

            assertCode(ErrorCode.INVALID_STATE, "a sealed, finished batch takes no job") {
                runBlocking { batch.add(jobs.name(), "late", "1") }
            }
        } finally {
            jobs.close(); cb.close()
        }
    }

    @Test
    fun `status pages, cancel, and bad input`() = withQueue("kt-batch") { q ->
        val batch = q.batch()
        val other = q.name() + "-j"
        batch.addBulk(other, (0 until 3).map { NewJob("a", "$it") })
        batch.seal()
        assertEquals(3uL, batch.cancel(), "its three waiting jobs")
        assertEquals(0uL, batch.cancel(), "nothing left to cancel")
        val st = batch.status(0uL, 2uL)
        assertTrue(st.cancelled)
        assertEquals(listOf(3uL, 0uL, 3uL), listOf(st.total, st.pending, st.failed), "cancelled jobs count as failed")
        assertEquals(2, st.failedJobs.size, "one page of two")
        assertFalse(st.done)
        assertCode(ErrorCode.INVALID_STATE, "a cancelled batch takes no job") { runBlocking { batch.add(other, "more", "1") } }
        assertCode(ErrorCode.INVALID_QUEUE_NAME) {
            runBlocking { q.batch(BatchOptions(onComplete = BatchCallback("a b", "x", "null"))) }
        }
        assertCode(ErrorCode.INVALID_OPTION, "a batch job takes no dedup key") {
            runBlocking { open0(q).add(other, "d", "1", JobOptions(dedup = "k")) }
        }

        assertCode(ErrorCode.INVALID_JOB_ID) { q.openBatch("nope") }
        assertCode(ErrorCode.JOB_NOT_FOUND, "a batch never created") { runBlocking { q.openBatch(q.mintId()).status() } }
        assertCode(ErrorCode.INVALID_OPTION, "a description over 1,024 bytes") {
            runBlocking { q.batch(BatchOptions(description = "x".repeat(1025))) }
        }
        assertCode(ErrorCode.INVALID_PAYLOAD, "a callback payload that is not JSON") {
            runBlocking { q.batch(BatchOptions(onComplete = BatchCallback(q.name(), "cb", "{nope"))) }
        }
        assertEquals(0, batch.status(0uL, 0uL).failedJobs.size, "limit 0: the counts only")
        assertEquals(1, batch.status(2uL, 10uL).failedJobs.size, "the page from offset 2")
        val open = q.batch()
        open.add(other, "a", "1")
        assertFalse(open.status().done, "an unsealed batch is not done")
    }

    @Test
    fun `a batch inside a batch counts as one job of its parent`() = withQueue("kt-batch") { q ->
        val jobs = Queue.connect(Harness.standaloneUrl(), q.name() + "-jobs")
        val cb = Queue.connect(Harness.standaloneUrl(), q.name() + "-cb")
        try {
            val parent = q.batch(BatchOptions(onComplete = BatchCallback(cb.name(), "parent-done", "null")))
            parent.add(jobs.name(), "direct", "1")
            val child = parent.batch(
                BatchOptions(onSuccess = BatchCallback(cb.name(), "child-ok", "null"), description = "pages"),
            )
            child.addBulk(jobs.name(), (0 until 3).map { NewJob("page", "$it") })
            child.seal()
            parent.seal()
            assertEquals(2uL, parent.status().total, "one job and one batch")
            val cst = child.status()
            assertEquals(BatchRef(q.name(), parent.id()), cst.parent)
            assertEquals("pages", cst.description)
            assertNull(parent.status().parent)

            val handler = object : JobHandler {
                override suspend fun handle(job: JobRecord): String = "\"ok\""
            }
            val w = jobs.startWorker(handler, 2, 5_000.0)
            try {
                eventually(20_000, "the parent batch done") { parent.status().takeIf { it.done } }
            } finally {
                w.shutdown(); w.close()
            }
            val st = parent.status()
            assertEquals(listOf(2uL, 2uL, 0uL, 0uL), listOf(st.total, st.completed, st.failed, st.pending), "$st")
            assertTrue(child.status().done)
            assertEquals(listOf("child-ok", "parent-done"), cb.list(JobState.WAITING).map { it.name }.sorted())

            val lone = q.batch()
            val inner = lone.batch()
            inner.add(jobs.name(), "one", "1")
            inner.seal()
            lone.seal()
            assertEquals(1uL, inner.cancel())
            val ls = lone.status()
            assertEquals(listOf(1uL, 1uL), listOf(ls.total, ls.failed), "a child cancelled alone counts failed: $ls")
            assertTrue(ls.done)
            assertCode(ErrorCode.INVALID_OPTION, "a description over 1,024 bytes") {
                runBlocking { lone.batch(BatchOptions(description = "x".repeat(1025))) }
            }
        } finally {
            jobs.close(); cb.close()
        }
    }

    private suspend fun open0(q: Queue): Batch = q.batch()
}
