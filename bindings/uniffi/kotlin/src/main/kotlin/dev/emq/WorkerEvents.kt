package dev.emq

import kotlin.time.Duration
import kotlin.time.Duration.Companion.seconds
import kotlinx.coroutines.currentCoroutineContext
import kotlinx.coroutines.ensureActive
import kotlinx.coroutines.flow.Flow
import kotlinx.coroutines.flow.flow

/**
 * This worker's events as a `Flow` (hand-written, next to the generated bindings), fed by the
 * core's event hook (the worker's own reports, as the Python and Node workers' events): the
 * recorded outcome of each run of this worker — completed ([WorkerEvent.resultJson]), failed (also
 * an attempt that will be retried: [WorkerEvent.willRetry]) — progress its handlers reported, the
 * stalled jobs its own sweep recovered, and [WorkerEventKind.ERROR] for the worker's own faults (a
 * lost connection, a failed renewal; the worker keeps trying, and the flow neither ends nor throws
 * for that). [WorkerEvent.streamId] is empty: these events are not read from the queue's stream.
 * At most 10,000 events wait for a slow collector, the oldest dropped beyond.
 *
 * The subscription is in place when it returns, so every outcome recorded after that is
 * reported; collect the flow once. [wait] is how long one poll of the subscription waits (it
 * only bounds how soon a cancelled collector notices). The flow runs until its collector is cancelled (or stops
 * early, e.g. `take(n)`), then the subscription is closed.
 *
 * ```kotlin
 * val events = worker.eventsFlow()
 * scope.launch {
 *     events.collect { e ->
 *         when (e.kind) {
 *             WorkerEventKind.COMPLETED -> println("${e.jobId} done: ${e.resultJson}")
 *             WorkerEventKind.FAILED -> println("${e.jobId} failed: ${e.failureMessage}")
 *             else -> {}
 *         }
 *     }
 * }
 * ```
 */
suspend fun WorkerHandle.eventsFlow(wait: Duration = 1.seconds): Flow<WorkerEvent> {
    val waitMs = wait.ms()
    val subscription = events()
    return flow {
        try {
            while (true) {
                currentCoroutineContext().ensureActive()
                for (e in subscription.next(waitMs, 100u)) emit(e)
            }
        } finally {
            subscription.shutdown()
            subscription.close()
        }
    }
}
