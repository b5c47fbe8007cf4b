//! Assembly: the text the server runs, from the guard (`lua/lib/guard.lua`), the key table of
//! `lua/lib/keyspec.lua` (guarded mode only), the libraries a header names and the body; a script
//! gets only the definitions it names, transitively, and its `K.<name>` reads become `KEYS[i]`.

use super::header::*;

pub(super) const GUARD: &str = include_str!("../../lua/lib/guard.lua");
pub(super) const KEYSPEC: &str = include_str!("../../lua/lib/keyspec.lua");
/// Library files a script may pull in with a `-- uses lib/<name>.lua` header line.
pub(super) const LIBS: &[(&str, &str)] = &[
    ("lib/handoff.lua", include_str!("../../lua/lib/handoff.lua")),
    ("lib/groups.lua", include_str!("../../lua/lib/groups.lua")),
    ("lib/ready.lua", include_str!("../../lua/lib/ready.lua")),
    ("lib/claim.lua", include_str!("../../lua/lib/claim.lua")),
    ("lib/add.lua", include_str!("../../lua/lib/add.lua")),
    (
        "lib/batch_note.lua",
        include_str!("../../lua/lib/batch_note.lua"),
    ),
    ("lib/batch.lua", include_str!("../../lua/lib/batch.lua")),
    ("lib/finish.lua", include_str!("../../lua/lib/finish.lua")),
];

/// Builds the text the server runs: mode flag, then of the key table (guarded only), the guard and
/// the libraries the header names (`-- uses lib/<name>.lua`) only the top-level definitions the
/// script refers to, directly or through another kept definition ([`prologue`]), then the body.
pub fn assemble(body: &str, guarded: bool) -> String {
    // A script that reads its keys only as `K.<name>` gets them as `KEYS[i]` in its text and no
    // table: building the table on every call cost the server ~5,800 instructions for 12 keys
    // (bench/RESULTS.md). A script that passes `K` to a library keeps the table.
    let inlined = inline_keys(body);
    let table = if inlined.is_none() {
        key_table(body)
    } else {
        String::new()
    };
    let mut sources: Vec<&str> = Vec::with_capacity(5);
    sources.push(if guarded {
        KEYSPEC
    } else {
        "local EMQ_KEYSPEC = nil\n"
    });
    sources.push(GUARD);
    sources.push(&table);
    for line in body.lines().take_while(|l| l.starts_with("--")) {
        if let Some(lib) = line.strip_prefix("-- uses ") {
            let lib = lib.trim();
            let (_, text) = LIBS
                .iter()
                .find(|(name, _)| *name == lib)
                .unwrap_or_else(|| panic!("unknown library {lib:?} in a script header"));
            sources.push(text);
        }
    }
    let body = inlined.as_deref().unwrap_or(body);
    let mut s = String::with_capacity(body.len() + GUARD.len() + 64);
    s.push_str(if guarded {
        "local EMQ_GUARDED = true\n"
    } else {
        "local EMQ_GUARDED = false\n"
    });
    s.push_str(&prologue(&sources, body, guarded));
    s.push_str(body);
    s
}

/// Of the top-level definitions in `sources` (in order), the text of those `body` needs: each
/// closure a script's prologue defines is created on every call, used or not (the guard's seven
/// helpers unused by add_one.lua cost the server 3,000–6,000 instructions per call of it:
/// bench/notes/addpath.md).
///
/// A source is cut into units: each starts at a line in column 0 that opens with `local ` or
/// `function ` (with the comment lines right above it) and runs to the next such line, so a
/// function's indented body, its closing `end` and a column-0 `if … end` below a definition stay
/// with it. A unit defines the names its first line declares (`local function f`, `local a, b =`);
/// it is kept when the body or a kept unit names one of them as a variable (not a field:
/// `redis.call` names no `call`), when it names a kept unit's definition itself (it may assign to
/// it), or when it defines nothing. Lua's locals are lexical, so a name not in the text is never
/// reached. Unguarded, a column-0
/// `if EMQ_GUARDED then … end` block is dead code and is left out first (so the unguarded `call`,
/// `redis.call` itself, needs no `emq_guard_check`); guarded, every unit's text is kept as it is.
pub(super) fn prologue(sources: &[&str], body: &str, guarded: bool) -> String {
    struct Unit {
        text: String,
        defines: Vec<String>,
        uses: std::collections::HashSet<String>,
    }
    let mut units: Vec<Unit> = Vec::new();
    for source in sources {
        let mut comments = String::new();
        let mut dead = false;
        for line in source.split_inclusive('\n') {
            if !guarded {
                if dead {
                    let closes = line.starts_with("end") && !line[3..].starts_with(is_ident_char);
                    dead = !closes;
                    continue;
                }
                if line.trim_end() == "if EMQ_GUARDED then" {
                    dead = true;
                    continue;
                }
            }
            if line.starts_with("local ") || line.starts_with("function ") {
                units.push(Unit {
                    text: std::mem::take(&mut comments) + line,
                    defines: declared_names(line),
                    uses: Default::default(),
                });
            } else if line.starts_with("--") {
                comments.push_str(line);
            } else {
                // the rest of the unit above (a body, its `end`, a column-0 `if … end` after it),
                // or code before any definition: a unit defining nothing
                let text = std::mem::take(&mut comments) + line;
                match units.last_mut() {
                    Some(last) => last.text.push_str(&text),
                    None => units.push(Unit {
                        text,
                        defines: Vec::new(),
                        uses: Default::default(),
                    }),
                }
            }
        }
        if let Some(last) = units.last_mut() {
            if !last.text.ends_with('\n') {
                last.text.push('\n');
            }
        }
    }
    for u in &mut units {
        u.uses = names_in(&u.text);
    }
    // Kept: a unit defining nothing, one defining a needed name, and one naming a needed name
    // another unit defines (it may assign to it, and so change what its users see). Repeated until
    // nothing is added, so a unit naming what only an earlier kept unit needs is kept too.
    let defined: std::collections::HashSet<&str> = units
        .iter()
        .flat_map(|u| u.defines.iter().map(String::as_str))
        .collect();
    let body_names = names_in(body);
    let mut needed: std::collections::HashSet<&str> = body_names
        .iter()
        .map(String::as_str)
        .filter(|n| defined.contains(n))
        .collect();
    let mut keep = vec![false; units.len()];
    loop {
        let mut changed = false;
        for (i, u) in units.iter().enumerate().rev() {
            let wanted = u.defines.is_empty()
                || u.defines.iter().any(|d| needed.contains(d.as_str()))
                || u.uses.iter().any(|n| needed.contains(n.as_str()));
            if !keep[i] && wanted {
                keep[i] = true;
                changed = true;
                needed.extend(
                    u.uses
                        .iter()
                        .map(String::as_str)
                        .filter(|n| defined.contains(n)),
                );
            }
        }
        if !changed {
            break;
        }
    }
    let mut out = String::new();
    for (u, _) in units.iter().zip(&keep).filter(|(_, k)| **k) {
        out.push_str(&u.text);
    }
    out
}

pub(super) fn is_ident_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || c == '_'
}

/// The names a top-level line declares: `local function f(` -> f; `local a, b = …` -> a, b;
/// `function f(` (a global, which Redis refuses to create) -> f.
pub(super) fn declared_names(line: &str) -> Vec<String> {
    let rest = line.strip_prefix("local ").unwrap_or(line);
    if let Some(f) = rest.strip_prefix("function ") {
        let name: String = f
            .trim_start()
            .chars()
            .take_while(|c| is_ident_char(*c))
            .collect();
        return vec![name];
    }
    let names = rest.split('=').next().unwrap_or("");
    names
        .split(',')
        .map(|n| n.trim().to_string())
        .filter(|n| !n.is_empty() && n.chars().all(is_ident_char))
        .collect()
}

/// The names `code` uses as variables: identifiers outside comments and string literals that do
/// not follow a single `.` or a `:` (a field or method), Lua's keywords aside. Long brackets (`[[…]]`, `--[[…]]`) are skipped whole; a short string
/// ends at its line's end at the latest, so a stray quote hides no code on other lines.
pub(super) fn names_in(code: &str) -> std::collections::HashSet<String> {
    const KEYWORDS: &[&str] = &[
        "and", "break", "do", "else", "elseif", "end", "false", "for", "function", "if", "in",
        "local", "nil", "not", "or", "repeat", "return", "then", "true", "until", "while",
    ];
    let b = code.as_bytes();
    let mut names = std::collections::HashSet::new();
    let mut i = 0;
    while i < b.len() {
        let c = b[i];
        if b[i..].starts_with(b"--") {
            if b[i + 2..].starts_with(b"[[") {
                i = find_from(b, i + 4, b"]]").map_or(b.len(), |e| e + 2);
            } else {
                i = find_from(b, i, b"\n").unwrap_or(b.len());
            }
        } else if b[i..].starts_with(b"[[") {
            i = find_from(b, i + 2, b"]]").map_or(b.len(), |e| e + 2);
        } else if c == b'\'' || c == b'"' {
            i += 1;
            while i < b.len() && b[i] != c && b[i] != b'\n' {
                i += if b[i] == b'\\' { 2 } else { 1 };
            }
            i += 1;
        } else if c.is_ascii_alphabetic() || c == b'_' {
            let start = i;
            while i < b.len() && (b[i].is_ascii_alphanumeric() || b[i] == b'_') {
                i += 1;
            }
            let field = start > 0
                && (b[start - 1] == b':'
                    || (b[start - 1] == b'.' && (start < 2 || b[start - 2] != b'.')));
            let word = &code[start..i];
            if !field && !KEYWORDS.contains(&word) {
                names.insert(word.to_string());
            }
        } else if c.is_ascii_digit() {
            // a number, hex and exponents included: not a name
            while i < b.len() && (b[i].is_ascii_alphanumeric() || b[i] == b'.') {
                i += 1;
            }
        } else {
            i += 1;
        }
    }
    names
}

pub(super) fn find_from(b: &[u8], from: usize, pat: &[u8]) -> Option<usize> {
    b.get(from..)?
        .windows(pat.len())
        .position(|w| w == pat)
        .map(|p| p + from)
}

/// `body` with every `K.<name>` outside comments written as `KEYS[<i>]` (its header's position),
/// or None when the script uses `K` any other way (passes it to a library) or names a key its
/// header does not (the lint reports that; the table then stays, as without inlining).
pub(super) fn inline_keys(body: &str) -> Option<String> {
    let h = parse_header(body).ok()?;
    let fixed = h.keys.len() - usize::from(h.keys_repeat);
    let names = &h.keys[..fixed];
    let is_ident = |c: char| c.is_ascii_alphanumeric() || c == '_';
    let mut out = String::with_capacity(body.len());
    for line in body.split_inclusive('\n') {
        let (code, comment) = match line.find("--") {
            Some(i) => line.split_at(i),
            None => (line, ""),
        };
        let chars: Vec<char> = code.chars().collect();
        let mut i = 0;
        while i < chars.len() {
            let c = chars[i];
            let starts_token = i == 0 || !is_ident(chars[i - 1]);
            if c == 'K' && starts_token && !chars.get(i + 1).is_some_and(|n| is_ident(*n)) {
                if chars.get(i + 1) != Some(&'.') {
                    return None; // `K` itself: passed on, so the table is needed
                }
                let mut j = i + 2;
                while j < chars.len() && is_ident(chars[j]) {
                    j += 1;
                }
                let name: String = chars[i + 2..j].iter().collect();
                let at = names.iter().position(|n| *n == name)?;
                out.push_str(&format!("KEYS[{}]", at + 1));
                i = j;
            } else {
                out.push(c);
                i += 1;
            }
        }
        out.push_str(comment);
    }
    Some(out)
}

/// The table `K` a script reads its keys from by their header names: `local K = {wait = KEYS[1],
/// …}`, for every `KEYS` line but a trailing repeating group (read from `KEYS` by index).
pub(super) fn key_table(body: &str) -> String {
    let Ok(h) = parse_header(body) else {
        return String::new(); // the lint reports the header; the script runs without `K`
    };
    let fixed = h.keys.len() - usize::from(h.keys_repeat);
    let fields: Vec<String> = h.keys[..fixed]
        .iter()
        .enumerate()
        .map(|(i, name)| format!("{name} = KEYS[{}]", i + 1))
        .collect();
    format!("local K = {{{}}}\n", fields.join(", "))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::script::{ADD_ONE, ALL};

    #[test]
    fn key_table_names_the_fixed_keys() {
        assert_eq!(
            key_table("-- KEYS[1] wait\n-- KEYS[2] meta\n-- KEYS[3..] record\n"),
            "local K = {wait = KEYS[1], meta = KEYS[2]}\n"
        );
    }

    #[test]
    fn keys_read_by_name_are_inlined_and_a_table_passed_on_is_kept() {
        let h = "-- KEYS[1] wait\n-- KEYS[2] meta\n-- KEYS[3..] record\n";
        let body =
            format!("{h}call('LLEN', K.wait) -- K.meta in a comment, and K\nreturn K.meta\n");
        assert_eq!(
            inline_keys(&body).unwrap(),
            format!("{h}call('LLEN', KEYS[1]) -- K.meta in a comment, and K\nreturn KEYS[2]\n")
        );
        // `K` passed to a library, or a name the header lacks: the table stays.
        assert_eq!(
            inline_keys(&format!("{h}return emq_ready(K, {{}})\n")),
            None
        );
        assert_eq!(inline_keys(&format!("{h}return K.record\n")), None);
        assert!(!assemble(&body, false).contains("local K = {"));
        assert!(
            assemble(&format!("{h}emq_ready(K)\n"), false).contains("local K = {wait = KEYS[1]")
        );
        // KEYS itself and names that merely start with K are not the table.
        let other = format!("{h}local KEYS_n, Kx = #KEYS, 1\n");
        assert_eq!(inline_keys(&other).unwrap(), other);
    }

    /// The lines of `text` outside `--` comments, each quoted string written as `''` (a check
    /// independent of the assembler's lexer: no script or library puts `--` or an escaped quote
    /// inside a string).
    fn code_of(text: &str) -> String {
        let mut out = String::new();
        for line in text.lines() {
            let code = line.split("--").next().unwrap_or("");
            let mut quote = None;
            for c in code.chars() {
                match quote {
                    Some(q) if c == q => quote = None,
                    Some(_) => {}
                    None if c == '\'' || c == '"' => {
                        quote = Some(c);
                        out.push_str("''");
                    }
                    None => out.push(c),
                }
            }
            out.push('\n');
        }
        out
    }

    /// True when `code` names `name` as a variable: a whole word not right after a single `.`/`:`.
    fn names(code: &str, name: &str) -> bool {
        code.match_indices(name).any(|(at, _)| {
            let before = &code[..at];
            let after = &code[at + name.len()..];
            let word = !before.ends_with(is_ident_char) && !after.starts_with(is_ident_char);
            let field = before.ends_with(':') || (before.ends_with('.') && !before.ends_with(".."));
            word && !field
        })
    }

    #[test]
    fn a_script_gets_only_the_guard_helpers_it_names() {
        // add_one.lua names call, now_ms_text, us_text_of and emq_handoff_entry; unguarded, its
        // text has those and none of the other helpers (each a closure made on every call).
        let plain = assemble(ADD_ONE.body(), false);
        for kept in [
            "local call = redis.call\n",
            "local function now_ms_text()",
            "local function us_text_of(t)",
            "local function emq_handoff_entry(",
        ] {
            assert!(plain.contains(kept), "{kept} missing:\n{plain}");
        }
        for gone in [
            "emq_guard_check",
            "try_call",
            "local function now_us(",
            "local function now_ms(",
            "local function now_clock(",
            "local function fail(",
            "emq_handoff_id",
            "EMQ_KEYSPEC",
            "if EMQ_GUARDED",
        ] {
            assert!(!plain.contains(gone), "{gone} kept:\n{plain}");
        }
        // Guarded, `call` checks its keys as before, so the checker and its table come along.
        let guarded = assemble(ADD_ONE.body(), true);
        for kept in [
            "local EMQ_GUARDED = true\n",
            "local EMQ_KEYSPEC = {",
            "local function emq_guard_check(argv)",
            "local call = redis.call\nif EMQ_GUARDED then\n  call = function(...)\n    emq_guard_check({...})\n    return redis.call(...)\n",
        ] {
            assert!(guarded.contains(kept), "{kept} missing");
        }
        for gone in [
            "local function now_ms(",
            "local function fail(",
            "emq_handoff_id",
        ] {
            assert!(!guarded.contains(gone), "{gone} kept");
        }
        // Transitively: now_ms() brings now_us(); `redis.call` in a helper is a field, not `call`.
        let body = "-- x\n-- KEYS: none\nreturn now_ms()\n";
        let s = assemble(body, false);
        assert!(s.contains("local function now_us()") && s.contains("local function now_ms()"));
        assert!(!s.contains("local call") && !s.contains("now_clock") && !s.contains("fail("));
        // A name in a comment or a string is not a use.
        let s = assemble("-- x\n-- KEYS: none\nreturn 'fail' -- now_us()\n", false);
        assert!(
            !s.contains("local function fail(") && !s.contains("local function now_us("),
            "{s}"
        );
    }

    #[test]
    fn every_helper_a_script_names_is_in_its_text() {
        // Over every shipped script in both modes: each top-level name of the guard, the key table
        // and the libraries that the assembled code names is defined in it (else the server would
        // look it up as a global and fail that call), and guarded, every script that calls the
        // datastore gets the checking `call` / `try_call`.
        let mut defs: Vec<String> = Vec::new();
        for text in [GUARD, KEYSPEC].iter().chain(LIBS.iter().map(|(_, t)| t)) {
            for line in text.lines() {
                let names = declared_names(line);
                if line.starts_with("local ") {
                    defs.extend(names);
                }
            }
        }
        assert!(defs.len() >= 10, "{defs:?}");
        for s in ALL {
            for guarded in [false, true] {
                let text = s.source(guarded);
                let code = code_of(text);
                for d in &defs {
                    let defined = text.lines().any(|l| {
                        l.starts_with("local ") && declared_names(l).iter().any(|n| n == d)
                    });
                    assert!(
                        !names(&code, d) || defined,
                        "{}.lua ({}): names {d} but its text does not define it",
                        s.name(),
                        if guarded { "guarded" } else { "unguarded" }
                    );
                }
                let body = code_of(s.body());
                for (f, raw) in [("call", "redis.call"), ("try_call", "redis.pcall")] {
                    if names(&body, f) {
                        let wrapper = format!(
                            "  {f} = function(...)\n    emq_guard_check({{...}})\n    return {raw}(...)\n"
                        );
                        assert_eq!(
                            text.contains(&wrapper),
                            guarded,
                            "{}.lua: {f} guarded only in guarded mode",
                            s.name()
                        );
                        if !guarded {
                            assert!(text.contains(&format!("local {f} = {raw}\n")));
                        }
                    }
                }
            }
        }
    }

    #[test]
    fn the_prologue_sources_have_no_long_brackets() {
        // `prologue` cuts the guard and the libraries into units by their column-0 lines; a
        // `[[…]]` string or comment could hide such a line, so none is allowed there.
        for text in [GUARD, KEYSPEC].iter().chain(LIBS.iter().map(|(_, t)| t)) {
            assert!(!text.contains("[["), "a long bracket in a prologue source");
        }
    }
}
