//! What the demo reports: the Rust handlers' record, the results read back, each job's language,
//! shares and rates, the languages phrase and the progress bar.

use super::*;
use emq::{JobId, JobPart, Queue};
use serde_json::Value;
use std::collections::HashSet;
use std::sync::atomic::AtomicU64;
use std::sync::Mutex;
use std::time::Duration;

/// What the Rust handlers saw: every job id once, and how many ids came back a second time.
#[derive(Default)]
pub(super) struct Seen {
    pub(super) ids: Mutex<HashSet<JobId>>,
    pub(super) duplicates: Mutex<Vec<JobId>>,
    pub(super) runs: AtomicU64,
}

/// How many of `total` jobs go to queue `i` of `n`.
pub(super) fn share(total: u64, i: usize, n: usize) -> u64 {
    let n = n as u64;
    total / n + u64::from((i as u64) < total % n)
}

pub(super) fn rate(jobs: u64, elapsed: Duration) -> f64 {
    let secs = elapsed.as_secs_f64();
    if secs > 0.0 {
        jobs as f64 / secs
    } else {
        0.0
    }
}

pub(super) fn human_rate(r: f64) -> String {
    if r >= 1000.0 {
        format!("{:.1}k", r / 1000.0)
    } else {
        format!("{r:.0}")
    }
}

/// "1 worker language (rust)", "3 worker languages at once (rust, python, node)".
pub(super) fn languages_phrase(languages: &[&str]) -> String {
    let names = languages.join(", ");
    match languages.len() {
        1 => format!("1 worker language ({names})"),
        n => format!("{n} worker languages at once ({names})"),
    }
}

// -------------------------------------------------------------------------------------------------
// Reading the results back

/// What the store holds for one added job.
pub(super) struct Stored {
    /// Its score in the completed set (None: not completed, or deleted).
    pub(super) completed: bool,
    /// Its `result` field, as stored (None: no result, or no record).
    pub(super) result: Option<String>,
    /// Whether its record exists.
    pub(super) exists: bool,
}

/// Reads, for every id, whether it is completed, its result and whether its record exists: three
/// pipelines per [`READ_CHUNK`] ids, so 100k jobs take a few hundred round trips, not 100k.
pub(super) async fn read_stored(q: &Queue, ids: &[JobId]) -> emq::Result<Vec<Stored>> {
    let mut out = Vec::with_capacity(ids.len());
    let completed_key = &q.keys().completed;
    let mut conn = q.store().conn();
    for chunk in ids.chunks(READ_CHUNK) {
        let mut scores = redis::pipe();
        let mut results = redis::pipe();
        let mut exists = redis::pipe();
        for id in chunk {
            let record = q.name().job_key(*id, JobPart::Record);
            scores.cmd("ZSCORE").arg(completed_key).arg(*id);
            results.cmd("HGET").arg(&record).arg("result");
            exists.cmd("EXISTS").arg(&record);
        }
        let scores: Vec<Option<f64>> = scores.query_async(&mut conn).await?;
        let results: Vec<Option<String>> = results.query_async(&mut conn).await?;
        let exists: Vec<bool> = exists.query_async(&mut conn).await?;
        for ((score, result), exists) in scores.into_iter().zip(results).zip(exists) {
            out.push(Stored {
                completed: score.is_some(),
                result,
                exists,
            });
        }
    }
    Ok(out)
}

/// The `lang` and `id` of a stored result.
pub(super) fn result_lang_id(text: &str) -> Option<(String, String)> {
    let v: Value = serde_json::from_str(text).ok()?;
    Some((
        v.get("lang")?.as_str()?.to_string(),
        v.get("id")?.as_str()?.to_string(),
    ))
}

// -------------------------------------------------------------------------------------------------
// The demo

/// The static name of a language a result names (unknown ones are kept, as "other:<name>" would
/// hide them). An unknown name is leaked once, the first time it is seen, and found again after:
/// the leak is bounded by the distinct names, not the jobs.
pub(super) fn leak_lang(lang: &str) -> &'static str {
    static UNKNOWN: std::sync::Mutex<Vec<&'static str>> = std::sync::Mutex::new(Vec::new());
    match lang {
        "rust" => "rust",
        "python" => "python",
        "node" => "node",
        "kotlin" => "kotlin",
        other => {
            let mut seen = UNKNOWN.lock().unwrap_or_else(|p| p.into_inner());
            if let Some(name) = seen.iter().find(|n| **n == other) {
                return name;
            }
            let name: &'static str = Box::leak(other.to_string().into_boxed_str());
            seen.push(name);
            name
        }
    }
}

/// A text progress bar `#####-----` of `width` cells for `done` of `total`.
pub(super) fn progress_bar(done: u64, total: u64, width: usize) -> String {
    let filled = if total == 0 {
        width
    } else {
        ((done.min(total) as u128 * width as u128) / total as u128) as usize
    };
    format!("{}{}", "#".repeat(filled), "-".repeat(width - filled))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_unknown_language_is_leaked_once_per_name() {
        assert_eq!(leak_lang("python"), "python");
        let first = leak_lang("cobol-demo-test");
        for _ in 0..3 {
            assert!(
                std::ptr::eq(first, leak_lang("cobol-demo-test")),
                "a second job of the same unknown language leaked its name again"
            );
        }
        let other = leak_lang("fortran-demo-test");
        assert_eq!(other, "fortran-demo-test");
        assert!(!std::ptr::eq(first, other));
    }

    #[test]
    fn shares_add_up() {
        for total in [1u64, 2, 3, 500, 3000, 100_001] {
            let sum: u64 = (0..3).map(|i| share(total, i, 3)).sum();
            assert_eq!(sum, total);
        }
        assert_eq!(human_rate(38_123.0), "38.1k");
        assert_eq!(human_rate(950.0), "950");
    }

    #[test]
    fn results_name_their_language_and_job() {
        assert_eq!(
            result_lang_id(r#"{"lang":"node","id":"j0000000000000001"}"#),
            Some(("node".into(), "j0000000000000001".into()))
        );
        assert_eq!(result_lang_id(r#"{"ok":true}"#), None);
        assert_eq!(result_lang_id("not json"), None);
    }

    #[test]
    fn the_summary_names_the_languages_in_the_right_number() {
        assert_eq!(languages_phrase(&["rust"]), "1 worker language (rust)");
        assert_eq!(
            languages_phrase(&["rust", "python"]),
            "2 worker languages at once (rust, python)"
        );
        assert_eq!(
            languages_phrase(&["rust", "python", "node", "kotlin"]),
            "4 worker languages at once (rust, python, node, kotlin)"
        );
    }

    #[test]
    fn the_worker_scripts_speak_the_protocol() {
        for script in [PYTHON_WORKER, NODE_WORKER, KOTLIN_WORKER] {
            for needle in [
                "EMQ_DEMO_URLS",
                "EMQ_DEMO_QUEUES",
                "ready",
                "done ",
                "final ",
            ] {
                assert!(script.contains(needle), "{needle}");
            }
        }
        assert!(NODE_WORKER.contains("EMQ_NODE_PACKAGE"));
    }

    #[test]
    fn bar_fills_in_proportion() {
        assert_eq!(progress_bar(0, 10, 10), "----------");
        assert_eq!(progress_bar(5, 10, 10), "#####-----");
        assert_eq!(progress_bar(10, 10, 10), "##########");
        assert_eq!(progress_bar(99, 10, 4), "####");
    }
}
