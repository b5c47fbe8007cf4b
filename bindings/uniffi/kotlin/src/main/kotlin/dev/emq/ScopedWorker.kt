package dev.emq

// A worker bound to a CoroutineScope (hand-written, next to the generated bindings): started with
// the core's options ([WorkerOptions]), it lives as a child coroutine of the scope, so the scope
// waits for it and cancelling the scope stops it gracefully. Job cancels reach the handler as
// coroutine cancellation through the generated handler (the Rust side drops the foreign future,
// which cancels the handler's coroutine and, with generate.sh's patch, joins it).
//
//   runBlocking {
//       val worker = worker(queue, WorkerOptions(concurrency = 4, lease = 30.seconds)) { job ->
//           val email = job.data<Email>()
//           Sent(email.to)                 // the job's result, serialized
//       }
//       ...
//       worker.stop()                      // or cancel the scope
//   }

import kotlin.time.Duration
import kotlin.time.Duration.Companion.seconds
import kotlinx.coroutines.CoroutineName
import kotlinx.coroutines.CoroutineScope
import kotlinx.coroutines.CoroutineStart
import kotlinx.coroutines.NonCancellable
import kotlinx.coroutines.awaitCancellation
import kotlinx.coroutines.cancelAndJoin
import kotlinx.coroutines.flow.Flow
import kotlinx.coroutines.launch
import kotlinx.coroutines.withContext
import kotlinx.serialization.json.Json

/**
 * A running worker bound to a coroutine scope ([CoroutineScope.worker]). [job] is its coroutine in
 * that scope: cancelling it (or the scope) stops the worker gracefully — no new jobs; running
 * handlers get [WorkerOptions.shutdownTimeout] to finish, then their coroutines are cancelled and
 * their jobs go back to waiting, the attempt not counted — and it completes once the worker has
 * stopped.
 */
class Worker internal constructor(
    /** The generated handle (stats, queues, abort, events). */
    val handle: WorkerHandle,
    /** The worker's coroutine in its scope. */
    val job: kotlinx.coroutines.Job,
) {
    /** Stops the worker gracefully (see [Worker]) and returns once it has stopped. */
    suspend fun stop() = job.cancelAndJoin()

    /**
     * Stops the worker at once, also during a graceful stop: running handlers are cancelled and
     * their jobs come back through their leases, as after a crash.
     */
    fun abort() {
        handle.abort()
        job.cancel()
    }

    /** The worker's counters (its final figures once stopped). */
    fun stats(): WorkerStats = handle.stats()

    /** True until a graceful stop began. */
    val isRunning: Boolean get() = handle.isRunning()

    /** The queues it serves, in order. */
    fun queues(): List<String> = handle.queues()

    /** This worker's events as a `Flow` ([WorkerHandle.eventsFlow]), from when this returns. */
    suspend fun events(wait: Duration = 1.seconds): Flow<WorkerEvent> = handle.eventsFlow(wait)
}

/**
 * Starts a worker on [queues] (in this order) running [handler] with [options] (checked by the
 * core: `InvalidOption` is thrown here), bound to this scope: see [Worker]. The scope does not
 * complete while the worker runs.
 */
fun CoroutineScope.worker(queues: List<Queue>, options: WorkerOptions = WorkerOptions(), handler: JobHandler): Worker {
    val handle = options.start(queues, handler)
    // Undispatched: the body runs at once, also in a scope already cancelled, so its `finally`
    // always stops the worker.
    val job = launch(CoroutineName("emq-worker"), start = CoroutineStart.UNDISPATCHED) {
        try {
            awaitCancellation()
        } finally {
            withContext(NonCancellable) { runCatching { handle.shutdown() } }
        }
    }
    return Worker(handle, job)
}

/** [worker] on one queue. */
fun CoroutineScope.worker(queue: Queue, options: WorkerOptions = WorkerOptions(), handler: JobHandler): Worker =
    worker(listOf(queue), options, handler)

/**
 * Starts a worker on [queue] running [handler] on each job, bound to this scope (see [Worker]):
 * the handler's return value is the job's result, serialized with [R]'s serializer by [json]
 * (`Unit`: no result); [jobHandler] says how it fails a job. The handler's coroutine is cancelled
 * when its job is cancelled, times out, or outlives a graceful stop's grace.
 */
inline fun <reified R> CoroutineScope.worker(
    queue: Queue,
    options: WorkerOptions = WorkerOptions(),
    json: Json = Json,
    noinline handler: suspend (JobRecord) -> R,
): Worker = worker(listOf(queue), options, jobHandler(json, handler))

/** The typed [worker] on several queues (in this order; [WorkerOptions.strict], [WorkerOptions.weights]). */
inline fun <reified R> CoroutineScope.worker(
    queues: List<Queue>,
    options: WorkerOptions = WorkerOptions(),
    json: Json = Json,
    noinline handler: suspend (JobRecord) -> R,
): Worker = worker(queues, options, jobHandler(json, handler))

/** Closes this worker gracefully when the JVM shuts down ([WorkerHandle.closeOnShutdown]). */
fun Worker.closeOnShutdown(): Thread = handle.closeOnShutdown()
