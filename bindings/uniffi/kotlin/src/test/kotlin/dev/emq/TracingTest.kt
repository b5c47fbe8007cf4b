package dev.emq

import io.opentelemetry.api.GlobalOpenTelemetry
import io.opentelemetry.api.common.AttributeKey
import io.opentelemetry.api.trace.Span
import io.opentelemetry.api.trace.SpanKind
import io.opentelemetry.api.trace.StatusCode
import java.util.concurrent.CopyOnWriteArrayList
import kotlinx.coroutines.runBlocking
import org.junit.jupiter.api.AfterEach
import org.junit.jupiter.api.Assertions.assertEquals
import org.junit.jupiter.api.Assertions.assertNotEquals
import org.junit.jupiter.api.Assertions.assertNull
import org.junit.jupiter.api.Assertions.assertTrue
import org.junit.jupiter.api.Test
import org.junit.jupiter.api.TestInstance
import org.junit.jupiter.api.Timeout

/**
 * `dev.emq.Tracing` against a real server, spans read back from the SDK's in-memory exporter: a
 * send span per `addTraced` whose W3C context the job keeps; a process span per run, linked to it
 * (or its child under `Relation.CHILD`), with the messaging attributes, the attempt, the outcome
 * and the error; the handler runs in the span; a malformed context is refused (`INVALID_OPTION`).
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
@Timeout(90)
class TracingTest {
    private val exporter = TestOtel.exporter

    @AfterEach
    fun reset() {
        Tracing.relation = Tracing.Relation.LINK
        exporter.reset()
    }

    @Test
    fun `an add and its runs make linked spans`() = withQueue("kt-trace") { q ->
        val request = GlobalOpenTelemetry.getTracer("tests").spanBuilder("request").startSpan()
        val id = request.makeCurrent().use { q.addTraced("charge", """{"n":1}""", JobOptions(attempts = 2)) }
        request.end()
        val send = TestOtel.named("send ${q.name()}").single()
        assertEquals(SpanKind.PRODUCER, send.kind)
        assertEquals(request.spanContext.spanId, send.parentSpanId)
        assertEquals("emq", send.attributes.get(AttributeKey.stringKey("messaging.system")))
        assertEquals(q.name(), send.attributes.get(AttributeKey.stringKey("messaging.destination.name")))
        assertEquals(id, send.attributes.get(AttributeKey.stringKey("messaging.message.id")))
        assertEquals(TestOtel.traceparent(send), q.get(id)!!.options.traceparent)

        val inSpan = CopyOnWriteArrayList<String>()
        val handler = object : JobHandler {
            override suspend fun handle(job: JobRecord): String {
                inSpan.add(Span.current().spanContext.spanId)
                if (job.attemptsMade == 0u) throw IllegalStateException("card declined")
                return "\"ok\""
            }
        }
        val w = q.startWorker(Tracing.traced(q.name(), handler), 1, 5_000.0)
        try {
            q.waitFor(id, JobState.COMPLETED)
        } finally {
            w.shutdown(); w.close()
        }
        val runs = TestOtel.named("process ${q.name()}").sortedBy { it.attributes.get(AttributeKey.longKey("emq.job.attempt")) }
        assertEquals(listOf(1L, 2L), runs.map { it.attributes.get(AttributeKey.longKey("emq.job.attempt")) })
        assertEquals(listOf("failed", "completed"), runs.map { it.attributes.get(AttributeKey.stringKey("emq.job.outcome")) })
        assertEquals(runs.map { it.spanId }, inSpan.toList(), "the handler runs in its span")
        for (run in runs) {
            assertEquals(SpanKind.CONSUMER, run.kind)
            assertEquals(send.spanId, run.links.single().spanContext.spanId)
            assertEquals(send.traceId, run.links.single().spanContext.traceId)
            assertNotEquals(send.traceId, run.traceId, "linked, not a child")
            assertNull(TestOtel.parentOf(run))
            assertEquals(id, run.attributes.get(AttributeKey.stringKey("messaging.message.id")))
        }
        assertEquals(StatusCode.ERROR, runs[0].status.statusCode)
        assertTrue(runs[0].status.description.contains("card declined"))
        assertEquals(listOf("exception"), runs[0].events.map { it.name })
        assertNotEquals(StatusCode.ERROR, runs[1].status.statusCode)
    }

    @Test
    fun `relation CHILD puts the run in the producer's trace`() = withQueue("kt-trace-child") { q ->
        Tracing.relation = Tracing.Relation.CHILD
        val id = q.addTraced("x", "1")
        val w = q.startWorker(Tracing.traced(q.name(), object : JobHandler {
            override suspend fun handle(job: JobRecord): String = "\"done\""
        }), 1, 5_000.0)
        try {
            q.waitFor(id, JobState.COMPLETED)
        } finally {
            w.shutdown(); w.close()
        }
        val send = TestOtel.named("send ${q.name()}").single()
        val run = TestOtel.named("process ${q.name()}").single()
        assertEquals(send.spanId, TestOtel.parentOf(run))
        assertEquals(send.traceId, run.traceId)
        assertTrue(run.links.isEmpty())
    }

    @Test
    fun `a malformed trace context is refused and adds nothing`() = withQueue("kt-trace-bad") { q ->
        assertCode(ErrorCode.INVALID_OPTION) { runBlocking { q.add("x", "1", JobOptions(traceparent = "00-abc")) } }
        assertCode(ErrorCode.INVALID_OPTION) { runBlocking { q.add("x", "1", JobOptions(tracestate = "a=b")) } }
        assertEquals(0uL, q.counts().waiting)
        val own = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
        val id = q.add("x", "1", JobOptions(traceparent = own, tracestate = "k=v"))
        val back = q.get(id)!!.options
        assertEquals(own to "k=v", back.traceparent to back.tracestate)
        assertEquals(own, Tracing.inject(JobOptions(traceparent = own)).traceparent, "a caller's own wins")
    }
}
