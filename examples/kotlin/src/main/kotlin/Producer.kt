// Quick start, Kotlin producer: adds one job to the queue `emails` and waits for its result.
// The datastore is EMQ_URL, default redis://127.0.0.1:6379.
import dev.emq.JobState
import dev.emq.Queue
import kotlinx.coroutines.delay
import kotlinx.coroutines.runBlocking

fun main() = runBlocking {
    val url = System.getenv("EMQ_URL") ?: "redis://127.0.0.1:6379"
    val queue = Queue.connect(url, "emails")
    val id = queue.add("send", """{"to": "ada@example.com"}""")
    println("added $id")

    // Read the result back: poll the job until a worker has finished it (at most 30 s).
    repeat(300) {
        val job = queue.get(id)
        if (job != null && (job.state == JobState.COMPLETED || job.state == JobState.FAILED)) {
            println("${job.state.name.lowercase()} ${job.resultJson}")
            return@runBlocking
        }
        delay(100)
    }
    error("job $id did not finish within 30 s: is the worker running?")
}
