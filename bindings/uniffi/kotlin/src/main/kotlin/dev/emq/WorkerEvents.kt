package dev.emq

import kotlinx.coroutines.currentCoroutineContext
import kotlinx.coroutines.ensureActive
import kotlinx.coroutines.flow.Flow
import kotlinx.coroutines.flow.flow

/**
 * This worker's events as a `Flow` (hand-written, next to the generated bindings): completed,
 * failed (also an attempt that will be retried: [WorkerEvent.willRetry]) and progress of the jobs
 * this worker runs, the queue's stalled jobs, and [WorkerEventKind.ERROR] when the events cannot
 * be read (a lost connection; the flow keeps trying, it does not end or throw for that).
 *
 * It suspends until the subscription is in place, so every job that starts after it returns is
 * reported; collect the flow once. The flow runs until its collector is cancelled (or stops
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
suspend fun WorkerHandle.eventsFlow(waitMs: Double = 1_000.0): Flow<WorkerEvent> {
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
