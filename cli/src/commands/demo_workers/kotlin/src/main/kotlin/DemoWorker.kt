// The Kotlin worker of `emq demo`, built by scripts/demo (see ../../pom.xml) and run by the demo as
// `java -Djna.library.path=<dir of libemq_uniffi.so> -cp <classpath> DemoWorkerKt`.
//
// Reads EMQ_DEMO_URLS (JSON list), EMQ_DEMO_QUEUES (JSON list) and EMQ_DEMO_CONCURRENCY, runs one
// worker per queue whose handler returns {"lang": "kotlin", "id": <job id>}, and talks to the demo
// over stdout, one line at a time:
//   ready                     every worker is running
//   done <n>                  jobs completed so far (about every 250 ms, when it changed)
//   final {"lang": ..., ...}  after stdin closed and every worker closed: counters and the ids run
// It stops when stdin reaches EOF (the demo closes it, or the demo died).
import dev.emq.JobHandler
import dev.emq.JobRecord
import dev.emq.Queue
import dev.emq.WorkerHandle
import java.util.concurrent.ConcurrentLinkedQueue
import kotlin.concurrent.thread
import kotlin.system.exitProcess
import kotlinx.coroutines.delay
import kotlinx.coroutines.runBlocking

/** The strings of a JSON list of strings (the demo's URLs and queue names: no escapes needed). */
fun stringList(json: String): List<String> =
    Regex("\"((?:[^\"\\\\]|\\\\.)*)\"").findAll(json).map { it.groupValues[1].replace("\\/", "/") }.toList()

fun main() {
    val urls = stringList(System.getenv("EMQ_DEMO_URLS") ?: error("EMQ_DEMO_URLS is not set"))
    val names = stringList(System.getenv("EMQ_DEMO_QUEUES") ?: error("EMQ_DEMO_QUEUES is not set"))
    val concurrency = (System.getenv("EMQ_DEMO_CONCURRENCY") ?: "32").toInt()
    val ran = ConcurrentLinkedQueue<String>()
    val handler = object : JobHandler {
        override suspend fun handle(job: JobRecord): String {
            ran.add(job.id)
            return """{"lang":"kotlin","id":"${job.id}"}"""
        }
    }
    try {
        runBlocking {
            val queues = names.map { Queue.connectSeeds(urls, it) }
            val workers: List<WorkerHandle> = queues.map {
                it.startWorker(handler, concurrency = concurrency, blockTimeoutMs = 500.0)
            }
            println("ready")
            System.out.flush()

            var last = -1L
            fun report() {
                val completed = workers.sumOf { it.stats().completed.toLong() }
                if (completed != last) {
                    last = completed
                    println("done $completed")
                    System.out.flush()
                }
            }
            // Stdin at EOF ends the run.
            val eof = thread(isDaemon = true, name = "stdin") {
                try {
                    while (System.`in`.read() >= 0) { /* the demo sends nothing */ }
                } catch (_: java.io.IOException) {}
            }
            while (eof.isAlive) {
                report()
                delay(250)
            }
            report()

            // A shut-down handle keeps its final figures.
            var completed = 0L
            var failed = 0L
            for (w in workers) {
                w.shutdown()
                val s = w.stats()
                completed += s.completed.toLong()
                failed += s.failed.toLong()
            }
            val ids = ran.joinToString(",") { "\"$it\"" }
            println("""final {"lang":"kotlin","completed":$completed,"failed":$failed,"runs":${ran.size},"ids":[$ids]}""")
            System.out.flush()
            for (q in queues) q.shutdown()
        }
    } catch (e: Throwable) {
        System.err.println("kotlin demo worker: $e")
        exitProcess(1)
    }
    exitProcess(0)
}
