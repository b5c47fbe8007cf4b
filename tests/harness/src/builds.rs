//! What a test needs built beside the Rust crates (the Python venv, the Node addon, the Kotlin demo
//! worker, node and npm), found the one way every suite finds them, and the one rule for a missing
//! one: under CI (`CI=true`, as `.ci/run` → `scripts/test-all` sets it) the test fails, saying why
//! (`scripts/test-all` builds all of them first, so a missing one is a broken run, not a reason to
//! pass); elsewhere a developer without that build gets a `SKIPPED` line and the test returns.

/// True under CI (`CI` is `true` or `1`).
pub fn under_ci() -> bool {
    std::env::var("CI").is_ok_and(|v| v == "true" || v == "1")
}

/// Skips `test` because of `why`: panics under CI, else prints `SKIPPED <test>: <why>`.
pub fn skip_unless_ci(test: &str, why: &str) {
    assert!(
        !under_ci(),
        "{test}: {why} (CI=true: every build a test needs must be there; scripts/test-all builds it)"
    );
    println!("SKIPPED {test}: {why}");
}

/// The Python interpreter that should import emq: `$<var>` when set, else `$EMQ_PY_VENV/bin/python`
/// (the venv `python/ci.sh` builds), else `python3`.
pub fn python(var: &str) -> String {
    let set = |name: &str| std::env::var(name).ok().filter(|s| !s.is_empty());
    set(var)
        .or_else(|| set("EMQ_PY_VENV").map(|v| format!("{v}/bin/python")))
        .unwrap_or_else(|| "python3".into())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_python_comes_from_the_variable_then_the_venv_then_the_path() {
        // One test for the three cases: the process environment is shared by the tests here.
        std::env::set_var("EMQ_TEST_PY", "/opt/py");
        std::env::set_var("EMQ_PY_VENV", "/tmp/venv");
        assert_eq!(python("EMQ_TEST_PY"), "/opt/py");
        std::env::set_var("EMQ_TEST_PY", "");
        assert_eq!(python("EMQ_TEST_PY"), "/tmp/venv/bin/python");
        std::env::remove_var("EMQ_PY_VENV");
        assert_eq!(python("EMQ_TEST_PY"), "python3");
    }
}
