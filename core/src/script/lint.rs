//! The lint: the wire rules that can be read off a script's text (header, declared `KEYS`/`ARGV`
//! only, no instant in ARGV, no `redis.call` or `TIME` outside the guard).

use super::header::*;

/// Words that name an instant; an ARGV entry may not carry one (scripts take "now" from `TIME`).
pub(super) const INSTANT_WORDS: &[&str] = &[
    "now",
    "time",
    "timestamp",
    "ts",
    "at",
    "deadline",
    "until",
    "expiry",
    "expires",
    "due",
    "when",
    "epoch",
    "date",
    "clock",
];

/// Checks a script's text against the wire rules that can be read off it, returning each breach:
/// a parsable header; `KEYS[n]` / `ARGV[n]` used only as declared; no ARGV entry names an instant
/// (durations end in `_ms`); no `redis.call`, `redis.pcall` or `TIME` outside the guard.
pub fn lint(name: &str, body: &str) -> Vec<String> {
    let mut problems = Vec::new();
    let header = match parse_header(body) {
        Ok(h) => h,
        Err(e) => return vec![format!("{name}.lua: header: {e}")],
    };
    if header.keys.is_empty() && !body.contains("KEYS: none") {
        problems.push(format!("{name}.lua: the header declares no KEYS"));
    }
    for (i, arg) in header.argv.iter().enumerate() {
        let words: Vec<&str> = arg.split(['_', '-']).collect();
        if let Some(w) = words
            .iter()
            .find(|w| INSTANT_WORDS.contains(&w.to_ascii_lowercase().as_str()))
        {
            problems.push(format!(
                "{name}.lua: ARGV[{}] {arg:?} names an instant ({w}); pass a duration named *_ms and take now from now_ms()",
                i + 1
            ));
        }
    }
    let code: String = body
        .lines()
        .map(|l| l.split("--").next().unwrap_or(""))
        .collect::<Vec<_>>()
        .join("\n");
    for (prefix, declared, repeat) in [
        ("KEYS[", header.keys.len(), header.keys_repeat),
        ("ARGV[", header.argv.len(), header.argv_repeat),
    ] {
        for (pos, _) in code.match_indices(prefix) {
            let rest = &code[pos + prefix.len()..];
            let digits: String = rest.chars().take_while(|c| c.is_ascii_digit()).collect();
            if let Ok(n) = digits.parse::<usize>() {
                if n == 0 || (n > declared && !repeat) {
                    problems.push(format!(
                        "{name}.lua: uses {prefix}{n}] but declares {declared}"
                    ));
                }
            }
        }
    }
    // Fixed keys are read by name; only a trailing repeating group is indexed.
    let fixed = header.keys.len() - usize::from(header.keys_repeat);
    for (i, key) in header.keys[..fixed].iter().enumerate() {
        if code.contains(&format!("KEYS[{}]", i + 1)) {
            problems.push(format!(
                "{name}.lua: reads KEYS[{}] by position; use K.{key}",
                i + 1
            ));
        }
    }
    for (pos, _) in code.match_indices("K.") {
        if code[..pos].ends_with(|c: char| c.is_alphanumeric() || c == '_' || c == '.') {
            continue;
        }
        let used: String = code[pos + 2..]
            .chars()
            .take_while(|c| c.is_alphanumeric() || *c == '_')
            .collect();
        if !header.keys[..fixed].contains(&used) {
            problems.push(format!(
                "{name}.lua: reads K.{used}, which its header does not name"
            ));
        }
    }
    for banned in ["redis.call", "redis.pcall", "'TIME'", "\"TIME\""] {
        if code.contains(banned) {
            problems.push(format!(
                "{name}.lua: uses {banned}; go through call()/try_call() and now_ms() of the guard"
            ));
        }
    }
    problems
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::script::ALL;

    #[test]
    fn lint_catches_each_breach() {
        let bad = "-- x\n-- KEYS[1] wait\n-- ARGV[1] now\n-- ARGV[2] due_at\nredis.call('GET', KEYS[2])\nlocal t = call('TIME')\nreturn ARGV[3]";
        let p = lint("x", bad);
        assert!(p.iter().any(|m| m.contains("ARGV[1] \"now\"")), "{p:?}");
        assert!(p.iter().any(|m| m.contains("ARGV[2] \"due_at\"")), "{p:?}");
        assert!(p.iter().any(|m| m.contains("KEYS[2]")), "{p:?}");
        assert!(p.iter().any(|m| m.contains("ARGV[3]")), "{p:?}");
        assert!(p.iter().any(|m| m.contains("redis.call")), "{p:?}");
        assert!(p.iter().any(|m| m.contains("'TIME'")), "{p:?}");
        let good =
            "-- x\n-- KEYS[1] wait\n-- ARGV[1] delay_ms\nreturn call('LLEN', K.wait) + ARGV[1]";
        assert!(lint("x", good).is_empty(), "{:?}", lint("x", good));
        let by_position = "-- x\n-- KEYS[1] wait\nreturn call('LLEN', KEYS[1])";
        assert!(lint("x", by_position)
            .iter()
            .any(|m| m.contains("use K.wait")));
        let unnamed = "-- x\n-- KEYS[1] wait\nreturn call('LLEN', K.paused)";
        assert!(lint("x", unnamed).iter().any(|m| m.contains("K.paused")));
    }

    #[test]
    fn every_shipped_script_passes_lint() {
        for s in ALL {
            let p = lint(s.name(), s.body());
            assert!(p.is_empty(), "{p:?}");
        }
    }
}
