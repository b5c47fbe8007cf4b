package dev.emq

import java.lang.management.ManagementFactory
import kotlinx.coroutines.async
import kotlinx.coroutines.awaitAll
import kotlinx.coroutines.runBlocking
import kotlinx.coroutines.withTimeout
import org.junit.jupiter.api.Assertions.assertTrue
import org.junit.jupiter.api.Test
import org.junit.jupiter.api.Timeout

/**
 * The binding's runtime threads call into the JVM (the handler's vtable, the continuations of
 * async calls) through JNA callbacks. They are attached to the JVM once, as daemons, when the
 * runtime starts them (src/jvm.rs), so a callback finds its thread attached and JNA neither
 * attaches nor detaches it. Per-call attachment would create a new java.lang.Thread (a new id, a
 * new "started thread") for every callback: at least one per job and one per add.
 */
@Timeout(90)
class JvmAttachTest {
    private fun runtimeThreads(): Map<Long, Thread> =
        Thread.getAllStackTraces().keys.filter { it.name.startsWith("emq-uniffi") }.associateBy { it.id }

    @Test
    fun `runtime threads are attached once, as daemons, not per callback`() = runBlocking {
        withTimeout(80_000) {
            val q = Queue.connect(Harness.standaloneUrl(), Harness.uniqueQueue("kt-attach"))
            try {
                val handler = object : JobHandler {
                    override suspend fun handle(job: JobRecord): String = "null"
                }
                suspend fun run(jobs: Int) {
                    for (batch in (0 until jobs).chunked(100)) {
                        batch.map { i -> async { q.add("noop", "$i", JobOptions(removeOnComplete = true)) } }.awaitAll()
                    }
                    val worker = q.startWorker(handler, 10, 30_000.0)
                    try {
                        eventually(60_000, "$jobs jobs to complete") {
                            worker.stats().completed.takeIf { it >= jobs.toULong() }
                        }
                    } finally {
                        worker.shutdown()
                        worker.close()
                    }
                }
                // Warm up: the runtime, the coroutine dispatchers and the connections are up.
                run(50)

                val attached = runtimeThreads()
                val mx = ManagementFactory.getThreadMXBean()
                val startedBefore = mx.totalStartedThreadCount
                val jobs = 500
                run(jobs)
                val started = mx.totalStartedThreadCount - startedBefore
                val after = runtimeThreads()
                println(
                    "emq-uniffi attach: ${attached.size} runtime threads attached; " +
                        "$started Java threads started during $jobs adds + $jobs jobs",
                )
                assertTrue(attached.isNotEmpty(), "no emq-uniffi thread is attached to the JVM")
                assertTrue(attached.values.all { it.isDaemon }, "attached runtime threads must be daemons: $attached")
                // Per-call attachment starts >= 2 threads per job (the add's continuation, the
                // handler call); permanent attachment starts none (a few for the JVM's own pools).
                assertTrue(started <= 20, "$started Java threads started during $jobs jobs: attached per call?")
                // The worker threads keep their Java Thread (same id) across the jobs.
                val kept = attached.keys.intersect(after.keys)
                assertTrue(kept.isNotEmpty(), "no runtime thread kept its Java Thread: before $attached, after $after")
                assertTrue(after.size <= attached.size + 4, "runtime threads grew: before $attached, after $after")
            } finally {
                q.close()
            }
        }
    }
}
