package dev.emq

// OpenTelemetry spans for emq's jobs on the JVM, with `io.opentelemetry:opentelemetry-api` (an
// optional dependency of this package: an application that never calls `Tracing` needs none of
// it). The core owns the carrier (`JobOptions.traceparent` / `tracestate`, kept in the job's
// record); this file only reads and writes the JVM's current context:
//  - `queue.addTraced(…)`: a `send <queue>` span (kind PRODUCER) around an add, the job given its
//    W3C context; `Tracing.inject(options)` gives any add the current context.
//  - `Tracing.traced(queueName, handler)`: a `process <queue>` span (kind CONSUMER) around each
//    run, linked to the span that added the job (or its child, `Tracing.relation = CHILD`), with
//    the attempt, the outcome and the error; the handler's coroutine runs in the span's context.
// Attributes follow OpenTelemetry's messaging conventions, as in the Python and Node packages.

import io.opentelemetry.api.GlobalOpenTelemetry
import io.opentelemetry.api.common.AttributeKey
import io.opentelemetry.api.trace.Span
import io.opentelemetry.api.trace.SpanKind
import io.opentelemetry.api.trace.StatusCode
import io.opentelemetry.api.trace.Tracer
import io.opentelemetry.api.trace.propagation.W3CTraceContextPropagator
import io.opentelemetry.context.Context
import io.opentelemetry.context.Scope
import io.opentelemetry.context.propagation.TextMapGetter
import kotlin.coroutines.CoroutineContext
import kotlinx.coroutines.ThreadContextElement
import kotlinx.coroutines.withContext

object Tracing {
    /** How a run's span relates to the span that added its job. */
    enum class Relation {
        /** A new trace per run, linked to the producer's span (the default). */
        LINK,

        /** The run's span is the producer's child, in its trace. */
        CHILD,
    }

    /** The relation of every run's span from now on (default [Relation.LINK]). */
    @Volatile
    var relation: Relation = Relation.LINK

    private const val SYSTEM = "emq"
    private val propagator = W3CTraceContextPropagator.getInstance()
    private val getter = object : TextMapGetter<Map<String, String>> {
        override fun keys(carrier: Map<String, String>): Iterable<String> = carrier.keys
        override fun get(carrier: Map<String, String>?, key: String): String? = carrier?.get(key)
    }

    private fun tracer(): Tracer = GlobalOpenTelemetry.getTracer("emq", "0.1.0")

    /** [options] with the current span's W3C context, unless they carry one (or no span records). */
    fun inject(options: JobOptions = JobOptions(), context: Context = Context.current()): JobOptions {
        if (options.traceparent != null || options.tracestate != null) return options
        val carrier = HashMap<String, String>()
        propagator.inject(context, carrier) { c, k, v -> c!![k] = v }
        val parent = carrier["traceparent"] ?: return options
        return options.copy(traceparent = parent, tracestate = carrier["tracestate"]?.takeIf { it.isNotEmpty() })
    }

    /** Wraps [handler]: each run in a `process <queueName>` span (see the file's header). */
    fun traced(queueName: String, handler: JobHandler): JobHandler = object : JobHandler {
        override suspend fun handle(job: JobRecord): String {
            val builder = tracer().spanBuilder("process $queueName")
                .setSpanKind(SpanKind.CONSUMER)
                .setAttribute("messaging.system", SYSTEM)
                .setAttribute("messaging.destination.name", queueName)
                .setAttribute("messaging.operation.name", "process")
                .setAttribute("messaging.operation.type", "process")
                .setAttribute("messaging.message.id", job.id)
                .setAttribute("emq.job.name", job.name)
                .setAttribute(AttributeKey.longKey("emq.job.attempt"), job.attemptsMade.toLong() + 1)
            val producer = job.options.traceparent?.let { tp ->
                val carrier = buildMap {
                    put("traceparent", tp)
                    job.options.tracestate?.let { put("tracestate", it) }
                }
                propagator.extract(Context.root(), carrier, getter)
            }
            val producerSpan = producer?.let { Span.fromContext(it).spanContext }?.takeIf { it.isValid }
            when {
                producerSpan == null -> builder.setNoParent()
                relation == Relation.CHILD -> builder.setParent(producer)
                else -> builder.setNoParent().addLink(producerSpan)
            }
            val span = builder.startSpan()
            try {
                val result = withContext(OtelContext(Context.root().with(span))) { handler.handle(job) }
                span.setAttribute("emq.job.outcome", "completed")
                return result
            } catch (e: Throwable) {
                span.setAttribute("emq.job.outcome", "failed")
                span.recordException(e)
                span.setStatus(StatusCode.ERROR, "${e::class.simpleName}: ${e.message}")
                throw e
            } finally {
                span.end()
            }
        }
    }

    /** The coroutine element that makes [context] current on whichever thread the coroutine runs. */
    private class OtelContext(private val context: Context) : ThreadContextElement<Scope> {
        companion object Key : CoroutineContext.Key<OtelContext>
        override val key: CoroutineContext.Key<OtelContext> get() = Key
        override fun updateThreadContext(context: CoroutineContext): Scope = this.context.makeCurrent()
        override fun restoreThreadContext(context: CoroutineContext, oldState: Scope) = oldState.close()
    }

    /** A `send <queue>` span around [block], given the options to add with (the span's context in). */
    internal suspend fun <T> producer(queueName: String, options: JobOptions, count: Int?, block: suspend (JobOptions) -> T, idOf: (T) -> String?): T {
        val builder = tracer().spanBuilder("send $queueName")
            .setSpanKind(SpanKind.PRODUCER)
            .setAttribute("messaging.system", SYSTEM)
            .setAttribute("messaging.destination.name", queueName)
            .setAttribute("messaging.operation.name", "send")
            .setAttribute("messaging.operation.type", "send")
        if (count != null) builder.setAttribute(AttributeKey.longKey("messaging.batch.message_count"), count.toLong())
        val span = builder.startSpan()
        try {
            val ctx = Context.current().with(span)
            val r = withContext(OtelContext(ctx)) { block(inject(options, ctx)) }
            idOf(r)?.let { span.setAttribute("messaging.message.id", it) }
            return r
        } catch (e: Throwable) {
            span.recordException(e)
            span.setStatus(StatusCode.ERROR, "${e::class.simpleName}: ${e.message}")
            throw e
        } finally {
            span.end()
        }
    }
}

/** Adds a job in a `send <queue>` span, the job given that span's W3C context (see [Tracing]). */
suspend fun Queue.addTraced(name: String, dataJson: String, options: JobOptions = JobOptions()): String =
    Tracing.producer(name(), options, null, { add(name, dataJson, it) }, { it })

/** Adds a child job for [parent] with the current span's context (see [Tracing.inject]). */
suspend fun Queue.addChildTraced(parent: String, queue: String, name: String, dataJson: String, options: JobOptions = JobOptions()): String =
    addChild(parent, queue, name, dataJson, Tracing.inject(options))
