package dev.emq

import io.opentelemetry.api.trace.SpanId
import io.opentelemetry.sdk.OpenTelemetrySdk
import io.opentelemetry.sdk.testing.exporter.InMemorySpanExporter
import io.opentelemetry.sdk.trace.SdkTracerProvider
import io.opentelemetry.sdk.trace.data.SpanData
import io.opentelemetry.sdk.trace.export.SimpleSpanProcessor

/** The JVM's one OpenTelemetry SDK for the tests, exporting to memory (registered on first use). */
object TestOtel {
    val exporter: InMemorySpanExporter by lazy {
        val e = InMemorySpanExporter.create()
        val provider = SdkTracerProvider.builder().addSpanProcessor(SimpleSpanProcessor.create(e)).build()
        OpenTelemetrySdk.builder().setTracerProvider(provider).buildAndRegisterGlobal()
        e
    }

    /** The finished spans named [name]. */
    fun named(name: String): List<SpanData> = exporter.finishedSpanItems.filter { it.name == name }

    /** A span's W3C traceparent. */
    fun traceparent(s: SpanData): String = "00-${s.traceId}-${s.spanId}-${s.spanContext.traceFlags.asHex()}"

    /** The parent span id, or null for a root span. */
    fun parentOf(s: SpanData): String? = s.parentSpanId.takeIf { it != SpanId.getInvalid() }
}
