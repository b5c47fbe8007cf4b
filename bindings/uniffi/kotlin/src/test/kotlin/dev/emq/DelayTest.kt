package dev.emq

import java.util.Collections
import kotlinx.coroutines.runBlocking
import kotlinx.coroutines.withTimeout
import org.junit.jupiter.api.Assertions.assertEquals
import org.junit.jupiter.api.Assertions.assertTrue
import org.junit.jupiter.api.Test
import org.junit.jupiter.api.Timeout

/** A handler puts its job back to delayed (issue 14, item 6): `throw HandlerFailure.Delayed(ms, count)`. */
@Timeout(120)
class DelayTest {
    private val url by lazy { Harness.standaloneUrl() }

    @Test
    fun `a handler delays its job, uncounted unless asked`() = runBlocking {
        withTimeout(90_000) {
            val q = Queue.connect(url, Harness.uniqueQueue("kt-delay"))
            // (id, attempts made at the run, when it began in ms)
            val runs = Collections.synchronizedList(mutableListOf<Triple<String, UInt, Long>>())
            val handler = object : JobHandler {
                override suspend fun handle(job: JobRecord): String {
                    val first = synchronized(runs) {
                        runs.add(Triple(job.id, job.attemptsMade, System.nanoTime() / 1_000_000))
                        runs.count { it.first == job.id } == 1
                    }
                    if (job.name == "snooze" && first) throw HandlerFailure.Delayed(400.0, false)
                    if (job.name == "counted" && first) throw HandlerFailure.Delayed(100.0, true)
                    if (job.name == "bad") throw HandlerFailure.Delayed(-1.0, false)
                    return "\"done\""
                }
            }
            val snooze = q.add("snooze", "{}")
            val counted = q.add("counted", "{}")
            val bad = q.add("bad", "{}")
            val worker = q.startWorker(handler, 2, 5_000.0)
            try {
                eventually(15_000, "the jobs to finish") {
                    val done = q.get(snooze)?.state == JobState.COMPLETED &&
                        q.get(counted)?.state == JobState.COMPLETED &&
                        q.get(bad)?.state == JobState.FAILED
                    if (done) true else null
                }
            } finally {
                worker.shutdown()
                worker.close()
            }
            val s = runs.filter { it.first == snooze }
            val c = runs.filter { it.first == counted }
            assertEquals(listOf(0u, 0u), s.map { it.second }, "the delay is not an attempt")
            assertTrue(s[1].third - s[0].third >= 350, "ran again after ${s[1].third - s[0].third} ms")
            assertEquals(listOf(0u, 1u), c.map { it.second }, "counted when asked")
            assertEquals("invalid_option", q.get(bad)!!.failure!!.code)
            q.close()
        }
    }
}
