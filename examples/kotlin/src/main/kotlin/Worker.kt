// Quick start, Kotlin worker: processes the jobs of the queue `emails` until SIGINT or SIGTERM,
// then finishes the jobs it is running and exits.
// The datastore is EMQ_URL, default redis://127.0.0.1:6379.
import dev.emq.Queue
import dev.emq.WorkerOptions
import dev.emq.data
import dev.emq.worker
import kotlin.time.Duration.Companion.seconds
import kotlinx.coroutines.CompletableDeferred
import kotlinx.coroutines.runBlocking
import sun.misc.Signal

fun main() = runBlocking {
    val url = System.getenv("EMQ_URL") ?: "redis://127.0.0.1:6379"
    val queue = Queue.connect(url, "emails")
    // Bound to this scope: cancelling it (or worker.stop()) stops the worker gracefully.
    val worker = worker(queue, WorkerOptions(concurrency = 4, lease = 30.seconds)) { job ->
        val email = job.data<Email>()   // the job's data, decoded
        Sent(sent = email.to)           // the job's result, encoded
    }
    println("worker started; Ctrl-C to stop")

    val stop = CompletableDeferred<Unit>()
    for (name in listOf("INT", "TERM")) Signal.handle(Signal(name)) { stop.complete(Unit) }
    stop.await()

    worker.stop() // stops fetching, waits for running jobs, gives the rest back
    println("worker stopped")
}
