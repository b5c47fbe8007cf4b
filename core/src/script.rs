//! The script registry: every Lua script in `lua/`, its header, and how it is invoked.
//!
//! A script's source is assembled from `lua/lib/guard.lua` (the only place `redis.call` appears, and
//! the only clock) and the script's own file; in guarded mode the key table of `lua/lib/keyspec.lua`
//! goes in front, so `call` can check every key argument against `KEYS`. Each mode has its own SHA.
//!
//! Every script opens with a header naming each `KEYS[i]` and `ARGV[i]`; a trailing `KEYS[n..]` or
//! `ARGV[n..]` line declares a repeating group. [`Invocation`] accepts keys only as [`Key`]s, checks
//! the counts against the header and that all keys share one slot before sending, and uses EVALSHA,
//! loading the script and retrying once when the server answers NOSCRIPT (after `SCRIPT FLUSH` or a
//! restart): for one call ([`Invocation::invoke`]) and for a pipeline of calls ([`pipeline`]), in
//! one place (`send_loading`). Loading ([`Script::load`], [`load_all`]) lives here too.

use crate::error::{Error, ErrorCode, Result};
use crate::job_id::JobId;
use crate::keyspace::{Family, JobPart, Key, QueueName};
use crate::store::Store;
use redis::aio::ConnectionLike;
use redis::{FromRedisValue, ToRedisArgs};
use std::sync::OnceLock;

const GUARD: &str = include_str!("../lua/lib/guard.lua");
const KEYSPEC: &str = include_str!("../lua/lib/keyspec.lua");
/// Library files a script may pull in with a `-- uses lib/<name>.lua` header line.
const LIBS: &[(&str, &str)] = &[
    ("lib/handoff.lua", include_str!("../lua/lib/handoff.lua")),
    ("lib/ready.lua", include_str!("../lua/lib/ready.lua")),
    ("lib/claim.lua", include_str!("../lua/lib/claim.lua")),
];

/// A script's declared interface, read from its header.
///
/// A `KEYS` line is `-- KEYS[i] name[=roles]  description`. The name is what the script reads the
/// key by (`K.name`, see [`assemble`]); the roles are the [`Key::role`]s a caller may bind there:
/// the name itself by default, alternatives with `|` (`finished=completed|failed`), and for a
/// repeating group a sequence with `+` that repeats (`job=record+logs`: a record, then its logs,
/// per job).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Header {
    /// Names of `KEYS[1..]`.
    pub keys: Vec<String>,
    /// Per `KEYS` line, the roles it takes: alternatives for a fixed key, the repeating sequence
    /// for a trailing `KEYS[n..]` group.
    pub key_roles: Vec<Vec<String>>,
    /// True when the last key line is a repeating `KEYS[n..]` group.
    pub keys_repeat: bool,
    /// Names of `ARGV[1..]`.
    pub argv: Vec<String>,
    /// True when the last ARGV line is a repeating `ARGV[n..]` group.
    pub argv_repeat: bool,
}

/// One script of `lua/`.
pub struct Script {
    name: &'static str,
    body: &'static str,
    header: OnceLock<Result<Header, String>>,
    compiled: [OnceLock<Compiled>; 2],
}

struct Compiled {
    source: String,
    sha: String,
}

impl Script {
    /// A script from its file name (without `.lua`) and body.
    pub const fn new(name: &'static str, body: &'static str) -> Script {
        Script {
            name,
            body,
            header: OnceLock::new(),
            compiled: [OnceLock::new(), OnceLock::new()],
        }
    }

    /// The file name, without `.lua`.
    pub fn name(&self) -> &'static str {
        self.name
    }

    /// The script's own text (without the guard).
    pub fn body(&self) -> &'static str {
        self.body
    }

    /// The parsed header.
    pub fn header(&self) -> Result<&Header> {
        self.header
            .get_or_init(|| parse_header(self.body))
            .as_ref()
            .map_err(|e| Error::new(ErrorCode::Internal, format!("{}.lua: {e}", self.name)))
    }

    fn compiled(&self, guarded: bool) -> &Compiled {
        self.compiled[guarded as usize].get_or_init(|| {
            let source = assemble(self.body, guarded);
            let sha = redis::Script::new(&source).get_hash().to_string();
            Compiled { source, sha }
        })
    }

    /// The full source sent to the server in the given mode.
    pub fn source(&self, guarded: bool) -> &str {
        &self.compiled(guarded).source
    }

    /// Its SHA1 in the given mode.
    pub fn sha(&self, guarded: bool) -> &str {
        &self.compiled(guarded).sha
    }

    /// Loads this script in the store's mode (on a cluster, SCRIPT LOAD is routed to every node).
    pub async fn load(&self, store: &Store) -> Result<()> {
        let mut conn = store.conn();
        let _: String = redis::cmd("SCRIPT")
            .arg("LOAD")
            .arg(self.source(store.guarded()))
            .query_async(&mut conn)
            .await?;
        Ok(())
    }

    /// Starts a call of this script.
    pub fn prepare(&'static self) -> Invocation {
        // Room for the header's keys and arguments (a repeating group's first round), so a call
        // does not grow its vectors as it is built.
        let (keys, args) = self
            .header()
            .map(|h| (h.keys.len(), h.argv.len()))
            .unwrap_or_default();
        Invocation {
            script: self,
            keys: Vec::with_capacity(keys),
            args: ArgBuf {
                bytes: Vec::new(),
                ends: Vec::with_capacity(args),
            },
        }
    }

    /// Starts a call with every fixed key bound by its header name: a family's key of `queue`
    /// for a family's name, `record` / `logs` of `job`. A caller adds only the repeating group's
    /// keys (if any) and the args. Refused (`internal`) when the header names a key that is not one
    /// role (`finished=completed|failed`: bind those with [`Script::prepare`] and
    /// [`Invocation::key`]) or a job part without a `job`.
    pub fn on(&'static self, queue: &QueueName, job: Option<JobId>) -> Result<Invocation> {
        let h = self.header()?;
        let fixed = h.keys.len() - usize::from(h.keys_repeat);
        let mut inv = self.prepare();
        for (name, roles) in h.keys[..fixed].iter().zip(&h.key_roles) {
            let refuse = |why: &str| {
                Error::new(
                    ErrorCode::Internal,
                    format!("{}.lua: KEYS {name}: {why}", self.name),
                )
            };
            let [role] = roles.as_slice() else {
                return Err(refuse("takes one of several keys; bind it with .key()"));
            };
            let key = match (role.as_str(), job) {
                ("record", Some(id)) => queue.job_key(id, JobPart::Record),
                ("logs", Some(id)) => queue.job_key(id, JobPart::Logs),
                ("record" | "logs", None) => return Err(refuse("a job's key, and no job given")),
                (role, _) => match Family::ALL.iter().find(|f| f.role() == role) {
                    Some(f) => queue.key(*f),
                    None => return Err(refuse("not a queue family")),
                },
            };
            inv.keys.push(key);
        }
        Ok(inv)
    }
}

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
fn prologue(sources: &[&str], body: &str, guarded: bool) -> String {
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

fn is_ident_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || c == '_'
}

/// The names a top-level line declares: `local function f(` -> f; `local a, b = …` -> a, b;
/// `function f(` (a global, which Redis refuses to create) -> f.
fn declared_names(line: &str) -> Vec<String> {
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
fn names_in(code: &str) -> std::collections::HashSet<String> {
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

fn find_from(b: &[u8], from: usize, pat: &[u8]) -> Option<usize> {
    b.get(from..)?
        .windows(pat.len())
        .position(|w| w == pat)
        .map(|p| p + from)
}

/// `body` with every `K.<name>` outside comments written as `KEYS[<i>]` (its header's position),
/// or None when the script uses `K` any other way (passes it to a library) or names a key its
/// header does not (the lint reports that; the table then stays, as without inlining).
fn inline_keys(body: &str) -> Option<String> {
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
fn key_table(body: &str) -> String {
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

fn parse_header(body: &str) -> Result<Header, String> {
    let mut h = Header {
        keys: Vec::new(),
        key_roles: Vec::new(),
        keys_repeat: false,
        argv: Vec::new(),
        argv_repeat: false,
    };
    for line in body.lines() {
        let Some(rest) = line.strip_prefix("--") else {
            break; // the header is the leading comment block
        };
        let rest = rest.trim_start();
        for (prefix, list, repeat) in [
            ("KEYS[", &mut h.keys, &mut h.keys_repeat),
            ("ARGV[", &mut h.argv, &mut h.argv_repeat),
        ] {
            let Some(after) = rest.strip_prefix(prefix) else {
                continue;
            };
            let close = after.find(']').ok_or("unclosed `[` in header")?;
            let (index, rep) = match after[..close].strip_suffix("..") {
                Some(i) => (i, true),
                None => (&after[..close], false),
            };
            let index: usize = index
                .parse()
                .map_err(|_| format!("bad index in {line:?}"))?;
            if *repeat {
                return Err(format!("{line:?} follows a repeating group"));
            }
            if index != list.len() + 1 {
                return Err(format!("{line:?}: expected index {}", list.len() + 1));
            }
            let word = after[close + 1..]
                .split_whitespace()
                .next()
                .ok_or_else(|| format!("{line:?} has no name"))?;
            let (name, roles) = word.split_once('=').unwrap_or((word, word));
            if prefix == "KEYS[" {
                let sep = if rep { '+' } else { '|' };
                let roles: Vec<String> = roles.split(sep).map(String::from).collect();
                if roles
                    .iter()
                    .any(|r| r.is_empty() || r.contains(['|', '+', '=']))
                {
                    return Err(format!("{line:?}: bad roles {word:?}"));
                }
                h.key_roles.push(roles);
            }
            list.push(name.to_string());
            *repeat = rep;
        }
    }
    Ok(h)
}

fn count_ok(declared: usize, repeat: bool, given: usize) -> bool {
    if !repeat {
        return given == declared;
    }
    let fixed = declared - 1;
    given >= fixed
}

/// The `ARGV` of a call in one buffer: every argument's bytes back to back and where each ends
/// (one allocation for all of them, where a `Vec<u8>` each cost two per argument).
#[derive(Default)]
struct ArgBuf {
    bytes: Vec<u8>,
    ends: Vec<usize>,
}

impl ArgBuf {
    fn len(&self) -> usize {
        self.ends.len()
    }

    fn iter(&self) -> impl Iterator<Item = &[u8]> + '_ {
        let starts = std::iter::once(0).chain(self.ends.iter().copied());
        starts
            .zip(self.ends.iter())
            .map(|(a, &b)| &self.bytes[a..b])
    }
}

/// Writes one argument into an [`ArgBuf`]; the argument ends when the writer is dropped.
struct ArgWriter<'a>(&'a mut ArgBuf);

impl std::io::Write for ArgWriter<'_> {
    fn write(&mut self, data: &[u8]) -> std::io::Result<usize> {
        self.0.bytes.extend_from_slice(data);
        Ok(data.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl Drop for ArgWriter<'_> {
    fn drop(&mut self) {
        self.0.ends.push(self.0.bytes.len());
    }
}

impl redis::RedisWrite for ArgBuf {
    fn write_arg(&mut self, arg: &[u8]) {
        self.bytes.extend_from_slice(arg);
        self.ends.push(self.bytes.len());
    }

    fn writer_for_next_arg(&mut self) -> impl std::io::Write + '_ {
        ArgWriter(self)
    }
}

/// One call of a script, being built.
pub struct Invocation {
    script: &'static Script,
    keys: Vec<Key>,
    args: ArgBuf,
}

impl Invocation {
    /// Adds the next `KEYS` entry. Only a [`Key`] from the keyspace builders is accepted.
    pub fn key(mut self, key: &Key) -> Self {
        self.keys.push(key.clone());
        self
    }

    /// Makes room for `bytes` more bytes of `ARGV` (their total, when the caller knows it).
    pub(crate) fn reserve_arg_bytes(mut self, bytes: usize) -> Self {
        self.args.bytes.reserve(bytes);
        self
    }

    /// Adds the next `ARGV` entry.
    pub fn arg<T: ToRedisArgs>(mut self, arg: T) -> Self {
        arg.write_redis_args(&mut self.args);
        self
    }

    /// Checks the call against the header and the one-slot rule, without sending it.
    pub fn check(&self) -> Result<()> {
        let h = self.script.header()?;
        if !count_ok(h.keys.len(), h.keys_repeat, self.keys.len())
            || !count_ok(h.argv.len(), h.argv_repeat, self.args.len())
        {
            return Err(Error::new(
                ErrorCode::Internal,
                format!(
                    "{}.lua declares {} keys and {} args, called with {} and {}",
                    self.script.name,
                    h.keys.len(),
                    h.argv.len(),
                    self.keys.len(),
                    self.args.len()
                ),
            ));
        }
        self.check_roles(h)?;
        if let Some(first) = self.keys.first() {
            let slot = first.slot();
            if let Some(other) = self.keys.iter().find(|k| k.slot() != slot) {
                return Err(Error::new(
                    ErrorCode::CrossSlot,
                    format!(
                        "{}.lua called with keys in two slots: {first} ({slot}) and {other} ({})",
                        self.script.name,
                        other.slot()
                    ),
                ));
            }
        }
        Ok(())
    }

    /// Each key against the header's name at its position: refused (before sending) when a key's
    /// role is not one the header takes there, so two keys exchanged, or one missing, cannot reach
    /// the server even where the counts add up.
    fn check_roles(&self, h: &Header) -> Result<()> {
        let fixed = h.keys.len() - usize::from(h.keys_repeat);
        let cycle = if h.keys_repeat {
            h.key_roles.last()
        } else {
            None
        };
        if let Some(cycle) = cycle {
            let extra = self.keys.len().saturating_sub(fixed);
            if extra % cycle.len() != 0 {
                return Err(Error::new(
                    ErrorCode::Internal,
                    format!(
                        "{}.lua: the repeating KEYS group {} takes keys in groups of {} ({}), called with {extra}",
                        self.script.name,
                        h.keys[fixed],
                        cycle.len(),
                        cycle.join("+")
                    ),
                ));
            }
        }
        for (i, key) in self.keys.iter().enumerate() {
            let (name, ok) = if i < fixed {
                (&h.keys[i], h.key_roles[i].iter().any(|r| r == key.role()))
            } else {
                let cycle = cycle.expect("counts checked");
                (
                    &h.keys[fixed],
                    cycle[(i - fixed) % cycle.len()] == key.role(),
                )
            };
            if !ok {
                return Err(Error::new(
                    ErrorCode::Internal,
                    format!(
                        "{}.lua: KEYS[{}] is {name}, called with a {} key ({key})",
                        self.script.name,
                        i + 1,
                        key.role()
                    ),
                ));
            }
        }
        Ok(())
    }

    /// The EVALSHA command for this call, checked first (see [`Invocation::check`]).
    pub(crate) fn command(&self, guarded: bool) -> Result<redis::Cmd> {
        self.check()?;
        Ok(self.evalsha(guarded))
    }

    fn evalsha(&self, guarded: bool) -> redis::Cmd {
        let sha = self.script.sha(guarded);
        let key_bytes: usize = self.keys.iter().map(|k| k.as_str().len()).sum();
        let mut cmd = redis::Cmd::with_capacity(
            3 + self.keys.len() + self.args.len(),
            7 + sha.len() + 4 + key_bytes + self.args.bytes.len(),
        );
        cmd.arg("EVALSHA").arg(sha).arg(self.keys.len());
        for k in &self.keys {
            cmd.arg(k);
        }
        for a in self.args.iter() {
            cmd.arg(a);
        }
        cmd
    }

    /// The script being called.
    pub fn script(&self) -> &'static Script {
        self.script
    }

    /// Runs the call: EVALSHA, and on NOSCRIPT load the script and retry once.
    pub async fn invoke<T: FromRedisValue>(self, store: &Store) -> Result<T> {
        use tracing::Instrument;
        let span = tracing::debug_span!(
            "emq.script",
            script = self.script.name,
            keys = self.keys.len()
        );
        let mut conn = store.conn();
        self.invoke_on(store, &mut conn).instrument(span).await
    }

    /// Runs the call on `conn` (a dedicated connection, say) with the same one NOSCRIPT retry.
    pub(crate) async fn invoke_on<T: FromRedisValue, C: ConnectionLike + Send>(
        &self,
        store: &Store,
        conn: &mut C,
    ) -> Result<T> {
        let cmd = self.command(store.guarded())?;
        send_loading(store, conn, &Request::One(cmd), &[self.script]).await
    }
}

/// The fixed front of a script's calls, checked once: `EVALSHA <sha> <numkeys>` and every key but
/// the last, for a script called again and again with only its last key and its arguments
/// changing (add_one.lua: the queue's eleven keys, then the job's record). Building it from an
/// [`Invocation`] checks the header's counts, the roles at every position and the one-slot rule;
/// a call then adds a last key of the same role and slot ([`Prefix::call`] refuses any other) and
/// arguments, and skips re-cloning, re-checking and re-writing the fixed keys on every call.
pub(crate) struct Prefix {
    script: &'static Script,
    cmd: redis::Cmd,
    last_role: &'static str,
    slot: u16,
    args: (usize, bool),
}

impl Prefix {
    /// From a complete, valid call (`sample`, whose last key and arguments are only examples),
    /// in the given mode.
    pub(crate) fn new(sample: &Invocation, guarded: bool) -> Result<Prefix> {
        sample.check()?;
        let h = sample.script.header()?;
        let (last, fixed) = sample
            .keys
            .split_last()
            .ok_or_else(|| Error::new(ErrorCode::Internal, "a prefix needs a last key"))?;
        let sha = sample.script.sha(guarded);
        let mut cmd = redis::Cmd::with_capacity(3 + sample.keys.len() + 8, 256);
        cmd.arg("EVALSHA").arg(sha).arg(sample.keys.len());
        for k in fixed {
            cmd.arg(k);
        }
        Ok(Prefix {
            script: sample.script,
            cmd,
            last_role: last.role(),
            slot: last.slot(),
            args: (h.argv.len() - usize::from(h.argv_repeat), h.argv_repeat),
        })
    }

    /// One call: the prefix, `last` and `args` (each one ARGV entry), sent as
    /// [`Invocation::invoke`] sends (EVALSHA, one load and resend on NOSCRIPT).
    pub(crate) async fn call<T: FromRedisValue>(
        &self,
        store: &Store,
        last: &Key,
        args: &[&[u8]],
    ) -> Result<T> {
        self.check_call(last, args.len())?;
        let mut cmd = self.cmd.clone();
        cmd.arg(last);
        for a in args {
            cmd.arg(*a);
        }
        use tracing::Instrument;
        let span = tracing::debug_span!("emq.script", script = self.script.name, keys = 0);
        let mut conn = store.conn();
        send_loading(store, &mut conn, &Request::One(cmd), &[self.script])
            .instrument(span)
            .await
    }

    /// Refuses a last key of another role or slot than the sample's, or an ARGV count the header
    /// does not take.
    fn check_call(&self, last: &Key, args: usize) -> Result<()> {
        let (fixed, repeat) = self.args;
        if last.role() == self.last_role
            && last.slot() == self.slot
            && (args == fixed || (repeat && args >= fixed))
        {
            return Ok(());
        }
        Err(Error::new(
            ErrorCode::Internal,
            format!(
                "{}.lua: a call of its prefix with a {} key ({last}) and {args} args",
                self.script.name,
                last.role(),
            ),
        ))
    }

    #[cfg(test)]
    fn command(&self, last: &Key, args: &[&[u8]]) -> redis::Cmd {
        let mut cmd = self.cmd.clone();
        cmd.arg(last);
        for a in args {
            cmd.arg(*a);
        }
        cmd
    }
}

/// Sends many script calls in one pipelined round trip (EVALSHA each); after NOSCRIPT, loads the
/// scripts involved and resends the whole pipeline once. Only for calls that are safe to repeat
/// (a call that ran before the NOSCRIPT of another runs again).
pub async fn pipeline<T: FromRedisValue>(store: &Store, calls: &[Invocation]) -> Result<Vec<T>> {
    let guarded = store.guarded();
    let mut pipe = redis::pipe();
    for c in calls {
        pipe.add_command(c.command(guarded)?);
    }
    let scripts: Vec<&'static Script> = calls.iter().map(|c| c.script).collect();
    let mut conn = store.conn();
    send_loading(store, &mut conn, &Request::Many(pipe), &scripts).await
}

/// What one round trip carries: one call or a pipeline of calls.
enum Request {
    One(redis::Cmd),
    Many(redis::Pipeline),
}

impl Request {
    async fn send<T: FromRedisValue, C: ConnectionLike + Send>(
        &self,
        conn: &mut C,
    ) -> redis::RedisResult<T> {
        match self {
            Request::One(cmd) => cmd.query_async(conn).await,
            Request::Many(pipe) => pipe.query_async(conn).await,
        }
    }
}

/// True when the server no longer has a script it was asked to run: the NOSCRIPT of a call, or of
/// any call of a pipeline (whose error is the kind of its first failure only).
fn is_noscript(e: &redis::RedisError) -> bool {
    use redis::{ErrorKind, ServerErrorKind};
    e.kind() == ErrorKind::Server(ServerErrorKind::NoScript)
        || e.clone().into_server_errors().is_some_and(|failures| {
            failures
                .iter()
                .any(|(_, f)| f.kind() == Some(ServerErrorKind::NoScript))
        })
}

/// The one NOSCRIPT retry: sends `req`; when the server answers NOSCRIPT (after `SCRIPT FLUSH`, a
/// restart, or a failover to a node that never loaded it), loads each of `scripts` once and
/// resends once.
async fn send_loading<T: FromRedisValue, C: ConnectionLike + Send>(
    store: &Store,
    conn: &mut C,
    req: &Request,
    scripts: &[&'static Script],
) -> Result<T> {
    match req.send(conn).await {
        Err(e) if is_noscript(&e) => {
            let mut loaded: Vec<&'static str> = Vec::new();
            for s in scripts.iter().copied() {
                if !loaded.contains(&s.name) {
                    loaded.push(s.name);
                    s.load(store).await?;
                }
            }
            Ok(req.send(conn).await?)
        }
        other => Ok(other?),
    }
}

/// Loads every script in the store's mode (on a cluster: on every node).
pub async fn load_all(store: &Store) -> Result<()> {
    for s in ALL {
        s.load(store).await?;
    }
    Ok(())
}

/// Words that name an instant; an ARGV entry may not carry one (scripts take "now" from `TIME`).
const INSTANT_WORDS: &[&str] = &[
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

macro_rules! scripts {
    ($($(#[$doc:meta])* $ident:ident => $file:literal,)*) => {
        $( $(#[$doc])* pub static $ident: Script = Script::new($file, include_str!(concat!("../lua/", $file, ".lua")));)*
        /// Every script in `lua/`.
        pub static ALL: &[&Script] = &[$(&$ident),*];
    };
}

scripts! {
    /// Writes the wire version on first connect, returns the stored one.
    VERSION_CHECK => "version_check",
    /// Leases a node id for minting job ids.
    NODE_ACQUIRE => "node_acquire",
    /// Renews a node-id lease.
    NODE_RENEW => "node_renew",
    /// Releases a node-id lease.
    NODE_RELEASE => "node_release",
    /// Adds a batch of jobs.
    ADD => "add",
    /// Adds one plain job (no delay, priority, dedup, group, parent or LIFO).
    ADD_ONE => "add_one",
    /// Leases ready jobs to a worker.
    CLAIM => "claim",
    /// Leases the job a wake-up marker named and returns its record.
    CLAIM_ID => "claim_id",
    /// Registers a worker that is about to block, so an add may hand it a job.
    WAIT_REGISTER => "wait_register",
    /// Completes a batch of jobs and leases the next ones.
    COMPLETE => "complete",
    /// Fails a job: retry or move to failed.
    FAIL => "fail",
    /// Renews leases of in-flight jobs.
    RENEW => "renew",
    /// Marks leased-ahead jobs as started (their stalls are charged from then on).
    STARTED => "started",
    /// Puts a running job back to delayed at its handler's request.
    DELAY_JOB => "delay_job",
    /// Gives unfinished jobs back on shutdown.
    RELEASE => "release",
    /// Selects stalled jobs (one sweeper at a time).
    SWEEP => "sweep",
    /// Recovers one stalled job.
    RECOVER => "recover",
    /// Reads a job and its state.
    JOB_STATE => "job_state",
    /// Removes one job.
    REMOVE_JOB => "remove_job",
    /// Selects finished jobs to trim or clean.
    SELECT_FINISHED => "select_finished",
    /// Removes a batch of finished jobs.
    REMOVE_FINISHED => "remove_finished",
    /// Pauses a queue.
    PAUSE => "pause",
    /// Resumes a queue.
    RESUME => "resume",
    /// Records progress.
    PROGRESS => "progress",
    /// Appends a log line.
    LOG => "log",
    /// Retries a failed job.
    RETRY_JOB => "retry_job",
    /// Promotes a delayed job.
    PROMOTE_JOB => "promote_job",
    /// Gives a job that has not finished a new priority.
    CHANGE_PRIORITY => "change_priority",
    /// Cancels a job: one not running yet ends cancelled, a running one's worker is told.
    CANCEL => "cancel",
    /// Replaces a delayed dedup holder's data and pushes its due time.
    DEBOUNCE => "debounce",
    /// Drops dedup keys whose TTL hold has ended.
    DEDUP_EXPIRE => "dedup_expire",
    /// Creates or replaces a job scheduler.
    SCHEDULER_UPSERT => "scheduler_upsert",
    /// Deletes a job scheduler.
    SCHEDULER_REMOVE => "scheduler_remove",
    /// Selects due schedulers.
    SCHEDULERS_DUE => "schedulers_due",
    /// Fires one due scheduler.
    SCHEDULER_FIRE => "scheduler_fire",
    /// Adds a flow's parent, waiting for its children.
    ADD_PARENT => "add_parent",
    /// Records a child's outcome in its parent (the second, idempotent step).
    CHILD_DONE => "child_done",
    /// Registers or heartbeats a worker in the queue's worker registry.
    WORKER_BEAT => "worker_beat",
    /// Removes a closing worker from the registry.
    WORKER_GONE => "worker_gone",
    /// Lists the queue's live workers.
    WORKERS_LIST => "workers_list",
    /// Inserts one finished job copied by `emq migrate`, and marks its source migrated.
    MIGRATE_FINISHED => "migrate_finished",
    /// Reads the clock of the node that owns the queue.
    SERVER_TIME => "server_time",
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn header_parses() {
        let h = parse_header(
            "-- x: does a thing\n-- KEYS[1] wait  the list\n-- KEYS[2..] job  per job\n-- ARGV[1] ttl_ms\nlocal x = 1\n-- KEYS[9] not header",
        )
        .unwrap();
        assert_eq!(h.keys, vec!["wait", "job"]);
        assert!(h.keys_repeat);
        assert_eq!(h.argv, vec!["ttl_ms"]);
        assert!(!h.argv_repeat);
        assert!(parse_header("-- KEYS[2] skipped\n").is_err());
        let h = parse_header(
            "-- KEYS[1] finished=completed|failed the set\n-- KEYS[2..] job=record+logs\n",
        )
        .unwrap();
        assert_eq!(h.keys, vec!["finished", "job"]);
        assert_eq!(
            h.key_roles,
            vec![vec!["completed", "failed"], vec!["record", "logs"]]
        );
        assert!(parse_header("-- KEYS[1] x=a||b\n").is_err());
    }

    #[test]
    fn the_arg_buffer_keeps_each_argument_whole_and_in_order() {
        // One buffer holds every ARGV entry: empty ones, numbers, text and an id must come out of
        // the EVALSHA command exactly as given, one argument each.
        let k = q().keys();
        let id = crate::JobId::parse(&crate::JobId::from_parts(1, 2, 3).to_string()).unwrap();
        let inv = PAUSE
            .prepare()
            .key(&k.wait)
            .arg("")
            .arg(42u64)
            .arg("a|b")
            .arg(id)
            .arg(&b"\x00\xff"[..]);
        assert_eq!(inv.args.len(), 5);
        let got: Vec<Vec<u8>> = inv.args.iter().map(<[u8]>::to_vec).collect();
        let want: Vec<Vec<u8>> = vec![
            b"".to_vec(),
            b"42".to_vec(),
            b"a|b".to_vec(),
            id.to_string().into_bytes(),
            vec![0, 255],
        ];
        assert_eq!(got, want);
        let cmd = inv.evalsha(false);
        let sent: Vec<Vec<u8>> = cmd
            .args_iter()
            .map(|a| match a {
                redis::Arg::Simple(b) => b.to_vec(),
                _ => panic!("only plain arguments"),
            })
            .collect();
        assert_eq!(sent[0], b"EVALSHA");
        assert_eq!(sent[2], b"1");
        assert_eq!(sent[3], k.wait.as_str().as_bytes());
        assert_eq!(&sent[4..], &want[..]);
    }

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

    #[test]
    fn a_prefix_sends_what_the_invocation_sends_and_refuses_a_wrong_last_key() {
        use crate::keyspace::JobPart;
        let q = crate::QueueName::new("prefixed").unwrap();
        let k = q.keys();
        let full = |id: crate::JobId, args: &[&str]| {
            let mut inv = crate::queue::add_one_keyed(&q, &k, id);
            for a in args {
                inv = inv.arg(*a);
            }
            inv
        };
        let bytes = |cmd: &redis::Cmd| -> Vec<Vec<u8>> {
            cmd.args_iter()
                .map(|a| match a {
                    redis::Arg::Simple(b) => b.to_vec(),
                    _ => panic!("only plain arguments"),
                })
                .collect()
        };
        let sample = crate::JobId::from_parts(1, 1, 1);
        for guarded in [false, true] {
            let prefix = Prefix::new(&full(sample, &["n", "{}"]), guarded).unwrap();
            for (i, args) in [
                vec!["j", "{\"i\":1}"],
                vec!["j", "{}", "{\"remove_on_complete\":true}"],
                vec!["j", "2", "{\"attempts\":3}", "3", "5"],
            ]
            .into_iter()
            .enumerate()
            {
                let id = crate::JobId::from_parts(7, 3, i as u16);
                let want = full(id, &args).command(guarded).unwrap();
                let raw: Vec<&[u8]> = args.iter().map(|a| a.as_bytes()).collect();
                let rec = q.job_key(id, JobPart::Record);
                assert_eq!(bytes(&prefix.command(&rec, &raw)), bytes(&want));
            }
        }
        // A last key of another role or another queue's slot, or too few args, is refused.
        let prefix = Prefix::new(&full(sample, &["n", "{}"]), false).unwrap();
        let other = (0..)
            .map(|i| crate::QueueName::new(&format!("other{i}")).unwrap())
            .find(|o| o.slot() != q.slot())
            .unwrap();
        let rec = q.job_key(sample, JobPart::Record);
        assert!(prefix.check_call(&rec, 2).is_ok() && prefix.check_call(&rec, 5).is_ok());
        assert!(prefix.check_call(&rec, 1).is_err(), "too few args");
        assert!(prefix
            .check_call(&q.job_key(sample, JobPart::Logs), 2)
            .is_err());
        assert!(prefix
            .check_call(&other.job_key(sample, JobPart::Record), 2)
            .is_err());
    }

    fn q() -> crate::QueueName {
        crate::QueueName::new("swapped").unwrap()
    }

    #[test]
    fn a_swapped_pair_of_keys_is_refused_before_sending() {
        use crate::keyspace::Family;
        let k = q().keys();
        // RESUME's header: wait, paused, meta, marker, events (see lua/resume.lua).
        let h = RESUME.header().unwrap();
        let key_of = |name: &str| match name {
            "wait" => k.wait.clone(),
            "paused" => k.paused.clone(),
            "meta" => k.meta.clone(),
            "marker" => k.marker.clone(),
            "events" => k.events.clone(),
            other => panic!("resume.lua names {other}; update this test"),
        };
        let keys: Vec<Key> = h.keys.iter().map(|n| key_of(n)).collect();
        let mut ok = RESUME.prepare();
        for key in &keys {
            ok = ok.key(key);
        }
        let args = h.argv.len();
        for _ in 0..args {
            ok = ok.arg("1");
        }
        ok.check().expect("the keys in header order pass");
        let mut swapped_keys = keys.clone();
        swapped_keys.swap(0, 1); // same slot, same count: only the names tell
        let mut swapped = RESUME.prepare();
        for key in &swapped_keys {
            swapped = swapped.key(key);
        }
        for _ in 0..args {
            swapped = swapped.arg("1");
        }
        let err = swapped.check().unwrap_err();
        assert_eq!(err.code(), ErrorCode::Internal);
        assert!(err.message().contains("KEYS[1]"), "{}", err.message());
        assert!(err.message().contains(&h.keys[0]), "{}", err.message());
        assert!(swapped.command(false).is_err(), "command() checks too");
        // A wrong family at one position, same count.
        let mut wrong = RESUME.prepare().key(&q().key(Family::Delayed));
        for key in &keys[1..] {
            wrong = wrong.key(key);
        }
        for _ in 0..args {
            wrong = wrong.arg("1");
        }
        assert!(wrong.check().is_err());
    }

    #[test]
    fn a_repeating_group_takes_its_sequence_whole() {
        use crate::keyspace::JobPart;
        let (k, q) = (q().keys(), q());
        let id = crate::JobId::from_parts(1, 1, 1);
        let base = || {
            REMOVE_FINISHED
                .prepare()
                .key(&k.completed)
                .key(&k.meta)
                .key(&k.events)
        };
        let args = |mut inv: Invocation| {
            for _ in 0..REMOVE_FINISHED.header().unwrap().argv.len() {
                inv = inv.arg("1");
            }
            inv
        };
        let rec = q.job_key(id, JobPart::Record);
        let logs = q.job_key(id, JobPart::Logs);
        let good = args(base().key(&rec).key(&logs));
        assert!(good.check().is_ok(), "{:?}", good.check());
        assert!(
            args(base().key(&logs).key(&rec)).check().is_err(),
            "order within a pair"
        );
        assert!(args(base().key(&rec)).check().is_err(), "half a pair");
        let failed = REMOVE_FINISHED
            .prepare()
            .key(&k.failed)
            .key(&k.meta)
            .key(&k.events);
        assert!(args(failed).check().is_ok(), "finished takes failed too");
        let wait = REMOVE_FINISHED
            .prepare()
            .key(&k.wait)
            .key(&k.meta)
            .key(&k.events);
        assert!(args(wait).check().is_err(), "but not wait");
    }

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
