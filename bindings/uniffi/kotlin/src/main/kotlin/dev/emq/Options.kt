package dev.emq

// Options that read like Kotlin (hand-written, next to the generated bindings): data classes with
// defaults and `kotlin.time.Duration`s, converted to the generated records' millisecond doubles.
// Conversions only: every value is checked by the core (`InvalidOption`), never here — a negative,
// infinite or too-long duration reaches the core as its milliseconds and is refused there.

import kotlin.time.Duration
import kotlin.time.Duration.Companion.seconds
import kotlin.time.DurationUnit
import kotlin.time.toDuration

/** [this] in milliseconds, as the generated API takes durations (infinite: refused by the core). */
internal fun Duration.ms(): Double = toDouble(DurationUnit.MILLISECONDS)

/** Milliseconds as the generated API gives them, as a [Duration]. */
internal fun Double.msDuration(): Duration = toDuration(DurationUnit.MILLISECONDS)

/**
 * How many finished jobs to keep (the generated [Retention]): at most [count] of them, none older
 * than [age]; null for no limit of that kind. The core checks both.
 */
data class Keep(val count: ULong? = null, val age: Duration? = null) {
    /** The generated record. */
    fun toRetention(): Retention = Retention(count = count, ageMs = age?.ms())

    companion object {
        /** The generated record read back. */
        fun of(r: Retention): Keep = Keep(count = r.count, age = r.ageMs?.msDuration())
    }
}

/** Retry backoffs with [Duration]s (the generated [Backoff] takes milliseconds). */
object Backoffs {
    /** The same [delay] before every retry. */
    fun fixed(delay: Duration): Backoff = Backoff.Fixed(delayMs = delay.ms())

    /** `delay * 2^(attempt-1)` before each retry, capped at [max] ([Duration.ZERO]: no cap). */
    fun exponential(delay: Duration, max: Duration = Duration.ZERO): Backoff =
        Backoff.Exponential(delayMs = delay.ms(), maxMs = max.ms())
}

/**
 * A worker's options, for [kotlinx.coroutines.CoroutineScope.worker] (and [WorkerOptions.start]).
 * The defaults are the core's:
 *
 * @property concurrency jobs run at once (default 1; at least 1).
 * @property lease how long a running job's lease lasts; the worker renews it while the handler
 *   runs, and a job whose lease expires is stalled (default 30 s).
 * @property shutdownTimeout the grace of a graceful stop: running handlers may finish within it,
 *   then their coroutines are cancelled and their jobs go back to waiting, the attempt not counted
 *   (default 10 s).
 * @property stalledInterval how often the stalled-job sweep runs (default 15 s).
 * @property maxStalls stalls a job may have before it fails (default 1).
 * @property blockTimeout the longest single wait for work (default 5 s).
 * @property keepCompleted the queue-wide retention of completed jobs (null: the newest 1,000 for a
 *   day).
 * @property keepFailed the queue-wide retention of failed jobs (null: the newest 10,000 for 7 days).
 * @property strict several queues only: start no job of a later queue while an earlier one has a
 *   ready job (default false; excludes [weights]).
 * @property weights several queues only: queue name to 1..1000, shares starts by weight while the
 *   queues have work (a queue not named has 1; null: equal weights).
 */
data class WorkerOptions(
    val concurrency: Int = 1,
    val lease: Duration = 30.seconds,
    val shutdownTimeout: Duration = 10.seconds,
    val stalledInterval: Duration = 15.seconds,
    val maxStalls: UInt = 1u,
    val blockTimeout: Duration = 5.seconds,
    val keepCompleted: Keep? = null,
    val keepFailed: Keep? = null,
    val strict: Boolean = false,
    val weights: Map<String, UInt>? = null,
) {
    /**
     * Starts a worker on [queues] (in this order) running [handler], with these options: the
     * generated `startWorkerMany`, which the core validates (`InvalidOption`). The returned handle
     * must be kept; see [kotlinx.coroutines.CoroutineScope.worker] for one bound to a scope.
     */
    fun start(queues: List<Queue>, handler: JobHandler): WorkerHandle = startWorkerMany(
        queues = queues,
        handler = handler,
        strict = strict,
        weights = weights,
        concurrency = concurrency,
        leaseMs = lease.ms(),
        shutdownTimeoutMs = shutdownTimeout.ms(),
        stalledIntervalMs = stalledInterval.ms(),
        maxStalls = maxStalls,
        blockTimeoutMs = blockTimeout.ms(),
        completed = keepCompleted?.toRetention(),
        failed = keepFailed?.toRetention(),
    )
}

/**
 * A job's options with [Duration]s, for the typed [Queue.add] (the generated [JobOptions] has the
 * same fields with millisecond doubles; [toJobOptions] converts, [JobOptions.toAddOptions] reads
 * a stored job's options back). The defaults are the core's:
 *
 * @property delay run no sooner than this after the server receives the job (default none).
 * @property priority 0 for none; otherwise lower numbers run first (1 is the most urgent).
 * @property attempts most attempts (default 1; at least 1).
 * @property backoff the wait before each retry ([Backoffs]; null: retry at once).
 * @property jitter fraction (0..1) of each backoff taken off at random, to spread retries (default 0).
 * @property lease this job's lease, overriding the worker's ([Duration.ZERO]: the worker's).
 * @property lifo run before the jobs already waiting (default false).
 * @property removeOnComplete removed as soon as it completes (default false).
 * @property removeOnFail removed as soon as it fails for good (default false).
 * @property keepCompleted keep the job when it completes, and the queue's completed jobs within
 *   this (the latest job's wins; null: the worker's retention).
 * @property keepFailed as [keepCompleted], for jobs that finally failed.
 * @property timeout how long one run may take; the handler's coroutine is cancelled past it and
 *   the run fails with code `timeout` ([Duration.ZERO]: no timeout).
 * @property dedup while a job with this key is waiting or active (or for [dedupTtl]), adding
 *   another returns the first one's id.
 * @property debounce with [dedup] and [delay]: when the key's holder is still delayed, replace
 *   its data and push its due time to now + [delay] instead of dropping the new job.
 * @property dedupTtl with [dedup]: hold the key this long after the add, whatever becomes of the
 *   job ([Duration.ZERO]: while the job lives).
 * @property parentPolicy in a flow: what this child's final failure does to its parent (null:
 *   fail it).
 * @property group the job's fair group (null: none).
 * @property description words for people, at most 1,024 bytes.
 * @property deadLetter the queue this job moves to once it fails for good (null: the queue's own,
 *   [Queue.setDeadLetter], if any).
 * @property traceparent W3C trace context carried with the job (see [Tracing]).
 * @property tracestate W3C trace state carried with the job.
 * @property id a pre-minted id ([Queue.mintId]): adding it twice adds one job.
 */
data class AddOptions(
    val delay: Duration = Duration.ZERO,
    val priority: Int = 0,
    val attempts: Int = 1,
    val backoff: Backoff? = null,
    val jitter: Double = 0.0,
    val lease: Duration = Duration.ZERO,
    val lifo: Boolean = false,
    val removeOnComplete: Boolean = false,
    val removeOnFail: Boolean = false,
    val keepCompleted: Keep? = null,
    val keepFailed: Keep? = null,
    val timeout: Duration = Duration.ZERO,
    val dedup: String? = null,
    val debounce: Boolean = false,
    val dedupTtl: Duration = Duration.ZERO,
    val parentPolicy: ParentPolicy? = null,
    val group: String? = null,
    val description: String? = null,
    val deadLetter: String? = null,
    val traceparent: String? = null,
    val tracestate: String? = null,
    val id: String? = null,
) {
    /** The generated record, durations in milliseconds. */
    fun toJobOptions(): JobOptions = JobOptions(
        delayMs = delay.ms(),
        priority = priority,
        attempts = attempts,
        backoff = backoff,
        jitter = jitter,
        leaseMs = lease.ms(),
        lifo = lifo,
        removeOnComplete = removeOnComplete,
        removeOnFail = removeOnFail,
        keepCompleted = keepCompleted?.toRetention(),
        keepFailed = keepFailed?.toRetention(),
        timeoutMs = timeout.ms(),
        dedup = dedup,
        debounce = debounce,
        dedupTtlMs = dedupTtl.ms(),
        parentPolicy = parentPolicy,
        group = group,
        description = description,
        deadLetter = deadLetter,
        traceparent = traceparent,
        tracestate = tracestate,
        id = id,
    )
}

/** These options with [Duration]s ([AddOptions]); `job.options.toAddOptions()` reads a job's back. */
fun JobOptions.toAddOptions(): AddOptions = AddOptions(
    delay = delayMs.msDuration(),
    priority = priority,
    attempts = attempts,
    backoff = backoff,
    jitter = jitter,
    lease = leaseMs.msDuration(),
    lifo = lifo,
    removeOnComplete = removeOnComplete,
    removeOnFail = removeOnFail,
    keepCompleted = keepCompleted?.let(Keep::of),
    keepFailed = keepFailed?.let(Keep::of),
    timeout = timeoutMs.msDuration(),
    dedup = dedup,
    debounce = debounce,
    dedupTtl = dedupTtlMs.msDuration(),
    parentPolicy = parentPolicy,
    group = group,
    description = description,
    deadLetter = deadLetter,
    traceparent = traceparent,
    tracestate = tracestate,
    id = id,
)
