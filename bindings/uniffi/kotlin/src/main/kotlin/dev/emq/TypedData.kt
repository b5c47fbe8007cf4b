package dev.emq

// Typed job data through kotlinx.serialization (hand-written, next to the generated bindings):
// a `@Serializable` value in, its JSON text through the generated API, the same value out. The core
// still checks the text (`InvalidPayload`) and owns everything else; these are conversions only.
//
//   @Serializable data class Email(val to: String)
//   val id = queue.add("send", Email("ada@example.com"), AddOptions(attempts = 3))
//   val email: Email = job.data()                        // in a handler
//   val sent: Sent = queue.wait(id, 30.seconds)          // the typed result
//
// The generated `add(name, dataJson: String)` stays: a `String` given without options is JSON text
// (the member wins); with [AddOptions] a `String` is serialized as a JSON string.

import kotlin.time.Duration
import kotlin.time.Duration.Companion.seconds
import kotlin.time.DurationUnit
import kotlinx.serialization.json.Json
import kotlinx.serialization.serializer

/**
 * Adds a job whose data is [data], serialized with [T]'s serializer by [json] (default: `Json`'s
 * defaults); returns its id. [options] are converted to the generated [JobOptions] and checked by
 * the core.
 */
suspend inline fun <reified T> Queue.add(
    name: String,
    data: T,
    options: AddOptions = AddOptions(),
    json: Json = Json,
): String = add(name, json.encodeToString(serializer<T>(), data), options.toJobOptions())

/** This job's data decoded as [T] by [json] (the inverse of the typed [Queue.add]). */
inline fun <reified T> JobRecord.data(json: Json = Json): T = json.decodeFromString(serializer<T>(), dataJson)

/** This job's result decoded as [T] by [json]; null while it has none, or when it is JSON `null`. */
inline fun <reified T> JobRecord.result(json: Json = Json): T? =
    resultJson?.takeUnless { it.isBlank() || it.trim() == "null" }?.let { json.decodeFromString(serializer<T>(), it) }

/** This job's progress decoded as [T] by [json]; null when none was reported. */
inline fun <reified T> JobRecord.progress(json: Json = Json): T? =
    progressJson?.takeUnless { it.isBlank() || it.trim() == "null" }?.let { json.decodeFromString(serializer<T>(), it) }

/**
 * Waits up to [timeout] (default 30 s) for job [id] to finish and returns its result decoded as
 * [T] by [json], also for a job that finished before the call (the generated `wait`). Throws
 * [EmqException.JobFailed] for a job that failed for good (its `failureCode`, `reason` and
 * `stack`), [EmqException.Failed] with code `TIMEOUT` past [timeout], `JOB_NOT_FOUND` for no such
 * job.
 */
suspend inline fun <reified T> Queue.wait(id: String, timeout: Duration = 30.seconds, json: Json = Json): T =
    json.decodeFromString(serializer<T>(), wait(id, timeout.toDouble(DurationUnit.MILLISECONDS)))

/**
 * A [JobHandler] running [block] on each job, its return value the job's result, serialized with
 * [R]'s serializer by [json] (`Unit` or `null`: no result). A [HandlerFailure] thrown fails the job
 * as the generated handler's does ([failJob], [delayJob]); any other exception fails it,
 * retryably. The block runs in the handler's coroutine: a job's cancel, its timeout or the end of a
 * shutdown's grace cancel it.
 */
inline fun <reified R> jobHandler(json: Json = Json, noinline block: suspend (JobRecord) -> R): JobHandler {
    val serializer = serializer<R>()
    return object : JobHandler {
        override suspend fun handle(job: JobRecord): String {
            val result = block(job)
            return if (result == null || result is Unit) "" else json.encodeToString(serializer, result)
        }
    }
}

/**
 * Fails the running job with [reason] as its message (code `handler_failed`): retried while
 * attempts remain, unless [unrecoverable].
 */
fun failJob(reason: String, unrecoverable: Boolean = false): Nothing =
    throw HandlerFailure.Failed(reason = reason, unrecoverable = unrecoverable)

/**
 * Not a failure: the running job goes back to delayed for [delay] (server clock), the run counted
 * as an attempt only with [countAttempt]. The core refuses a negative or over-365-days delay.
 */
fun delayJob(delay: Duration, countAttempt: Boolean = false): Nothing =
    throw HandlerFailure.Delayed(delayMs = delay.ms(), countAttempt = countAttempt)
