// Quick start, Kotlin worker: processes the jobs of the queue `emails` until SIGINT or SIGTERM,
// then finishes the jobs it is running and exits.
// The datastore is EMQ_URL, default redis://127.0.0.1:6379.
import dev.emq.JobHandler
import dev.emq.JobRecord
import dev.emq.Queue
import kotlinx.coroutines.CompletableDeferred
import kotlinx.coroutines.runBlocking
import kotlinx.serialization.json.Json
import kotlinx.serialization.json.JsonPrimitive
import kotlinx.serialization.json.buildJsonObject
import kotlinx.serialization.json.jsonObject
import sun.misc.Signal

fun main() = runBlocking {
    val url = System.getenv("EMQ_URL") ?: "redis://127.0.0.1:6379"
    val queue = Queue.connect(url, "emails")
    val handler = object : JobHandler {
        // job.dataJson is the payload as JSON text; the JSON text returned is the job's result.
        override suspend fun handle(job: JobRecord): String {
            val to = Json.parseToJsonElement(job.dataJson).jsonObject["to"]!!
            return buildJsonObject { put("sent", to) }.toString()
        }
    }
    val worker = queue.startWorker(handler, 4, 30_000.0)
    println("worker started; Ctrl-C to stop")

    val stop = CompletableDeferred<Unit>()
    for (name in listOf("INT", "TERM")) Signal.handle(Signal(name)) { stop.complete(Unit) }
    stop.await()

    worker.shutdown() // stops fetching, waits for running jobs, gives the rest back
    println("worker stopped")
}
