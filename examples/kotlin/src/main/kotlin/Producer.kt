// Quick start, Kotlin producer: adds one job to the queue `emails` and waits for its result.
// The datastore is EMQ_URL, default redis://127.0.0.1:6379.
import dev.emq.AddOptions
import dev.emq.Queue
import dev.emq.add
import dev.emq.wait
import kotlin.time.Duration.Companion.seconds
import kotlinx.coroutines.runBlocking
import kotlinx.serialization.Serializable

@Serializable
data class Email(val to: String)

@Serializable
data class Sent(val sent: String)

fun main() = runBlocking {
    val url = System.getenv("EMQ_URL") ?: "redis://127.0.0.1:6379"
    val queue = Queue.connect(url, "emails")
    val id = queue.add("send", Email(to = "ada@example.com"), AddOptions(attempts = 3))
    println("added $id")

    // Wait for a worker to finish it (at most 30 s): its result, decoded; a failure throws.
    val result: Sent = queue.wait(id, timeout = 30.seconds)
    println("completed $result")
}
