//! `BENCH_TRACE=1` with `--features otel` (bench/tracing_rust.sh, issue 29): an OpenTelemetry SDK
//! provider registered as a traced Rust service registers one: every span kept (the SDK's default
//! sampler), batched (`BatchSpanProcessor`, its own thread) to an exporter that only counts them,
//! so the figures are emq's spans and the SDK's work, not an exporter's I/O. Each scenario's line
//! then has `spans_per_job`.

use opentelemetry_sdk::error::OTelSdkResult;
use opentelemetry_sdk::trace::{SdkTracerProvider, SpanData, SpanExporter};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, OnceLock};

#[derive(Debug, Clone, Default)]
struct Counting(Arc<AtomicU64>);

impl SpanExporter for Counting {
    fn export(
        &self,
        batch: Vec<SpanData>,
    ) -> impl std::future::Future<Output = OTelSdkResult> + Send {
        self.0.fetch_add(batch.len() as u64, Ordering::Relaxed);
        std::future::ready(Ok(()))
    }
}

struct Traced {
    provider: SdkTracerProvider,
    spans: Arc<AtomicU64>,
}

static TRACED: OnceLock<Traced> = OnceLock::new();

/// Registers the provider when BENCH_TRACE=1; whether it did.
pub(crate) fn install() -> bool {
    if std::env::var("BENCH_TRACE").as_deref() != Ok("1") {
        return false;
    }
    let exporter = Counting::default();
    let spans = exporter.0.clone();
    let provider = SdkTracerProvider::builder()
        .with_batch_exporter(exporter)
        .build();
    opentelemetry::global::set_tracer_provider(provider.clone());
    let _ = TRACED.set(Traced { provider, spans });
    true
}

/// The spans exported so far (flushed first), or None when no provider is registered.
pub(crate) fn spans() -> Option<u64> {
    let t = TRACED.get()?;
    let _ = t.provider.force_flush();
    Some(t.spans.load(Ordering::Relaxed))
}
