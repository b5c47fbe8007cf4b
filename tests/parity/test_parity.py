"""Binding parity, checked: every public operation of the core's `Queue` and `WorkerHandle`, and every
field of the core's `JobOptions`, is exported by Python (async and sync), Node and uniffi (Kotlin and
Swift), or is named below in a commented list of deliberate absences.

The operations are read off the sources: `pub fn` / `pub async fn` in every `impl Queue` and `impl
WorkerHandle` block of core/src, and the methods of each binding's classes. Names are compared in
snake_case (Node's camelCase is converted). `PROVIDED_AS` says where a binding offers an operation
under another name or on another class. The table (operation x language) is written to
bindings/README.md by `python tests/parity/test_parity.py --write`; the test fails when the committed
table is out of date, so the README always shows what the code exports.

Run: `python -m pytest tests/parity` (no server needed).
"""

import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
LANGS = ["python", "python_sync", "node", "uniffi"]
LANG_TITLES = {"python": "Python (async)", "python_sync": "Python (sync)", "node": "Node", "uniffi": "Kotlin/Swift (uniffi)"}

# Core operations no binding exports, on purpose. Each entry says why.
CORE_ONLY = {
    # Rust plumbing: a handle built on a Store the caller already holds, and its parts.
    "Queue.with_store": "Rust plumbing: bindings connect by URL (`connect`)",
    "Queue.open": "Rust plumbing: a handle on a Store the caller holds; bindings connect by URL (`connect`, with `partitions`)",
    "Queue.slot_queues": "Rust handles on each slot's queue; bindings name them in `worker.queues`",
    "Queue.partitions": "Rust handles on each partition; bindings read the count (`partitions`, the core's `partition_count`)",
    "Queue.queue": "Rust plumbing (the handle's own clone)",
    "Queue.store": "Rust plumbing: the connection is not exposed",
    "Queue.keys": "Rust plumbing: keys are the core's business (wire rule 1)",
    # Rust conveniences whose binding form is another operation.
    "Queue.get_str": "bindings pass the id text to `get`, which parses it through the one gate",
    "Queue.add_json": "bindings pass a value to `add`; the core serialises it",
    "Queue.list_ids": "bindings list whole jobs (`list`)",
    # Run by every worker's maintenance loops; a user never needs to call them.
    "Queue.trim": "run by workers' retention loop (retention is an option)",
    "Queue.trim_metrics": "run by workers' maintenance loop",
    "Queue.expire_dedup": "run by workers' maintenance loop",
    "Queue.fire_due_schedulers": "run by workers' scheduler loop",
    "Queue.forward_dead_letters": "run by workers' maintenance loop (dead-letter moves a crash cut)",
    "Queue.record_batch_outcomes": "run by workers' maintenance loop (batched outcomes a crash cut)",
    "Queue.audit": "an operator's check: `emq audit` and the Rust API",
    "Queue.server_time_ms": "the queue node's clock (core/src/clock.rs), for the core's readers and the CLI; applications send durations only (wire rule 4)",
    # The queue registry is written by every add and worker heartbeat; operators repair it.
    "Queue.register": "written by adds and worker heartbeats; `emq queues --repair` for operators",
    "Queue.unregister": "done by `obliterate`; the Rust API for operators",
    # A one-off operator's step, run from the CLI (`emq migrate`), not from application code.
    # Read-only look-ups for operators (core/src/lookup.rs), served by `emq ui`.
    "Queue.find_by_dedup": "an operator's look-up: `emq ui` (find by dedup key) and the Rust API",
    "Queue.find_by_name": "an operator's look-up: `emq ui` (bounded scan by name) and the Rust API",
    "Queue.flow_children": "an operator's look-up: `emq ui`'s flow view and the Rust API",
    "Queue.job_events": "an operator's look-up: `emq ui`'s job timeline and the Rust API",
    "Queue.get_as_stored": "an operator's look-up: `emq ui` shows a job whose stored data cannot be read, marked, where `get` refuses it",
    "Queue.list_as_stored": "an operator's look-up: `emq ui`'s pages show a job whose stored data cannot be read, marked, where `list` refuses it",
    "Queue.waits_registered": "for the core's own tests: how many waits one handle holds, and whether its follower reads",
    "Queue.metrics_with_groups": "the per-group gauges of the Prometheus endpoint (`emq metrics --groups N`); applications read each group with `groups()`",
    "Queue.metrics_history": "an operator's look-up: `emq ui`'s Metrics page (the day view, the backlog); applications chart `metrics` with their own store (Prometheus)",
    "Queue.batches": "an operator's look-up: `emq batches` and `emq ui`'s Batches page; applications keep their batches' handles (`open_batch`)",
    "Queue.list_newest_first": "an operator's look-up: `emq ui`'s job pages, newest first, as `list_as_stored` reads them",
    "Queue.scheduler_instants": "an operator's look-up: `emq ui`'s schedulers page and the Rust API",
    "Queue.scheduler_spec": "an operator's look-up: `emq ui`'s scheduler form and the Rust API",
    "Queue.migrated_id": "the migration's lookup, for operators: `emq migrate` and the Rust API",
    "Queue.migrated_source": "the migration's lookup, for operators: `emq migrate` and the Rust API",
    "WorkerHandle.close_within": "Rust form of `close` with a deadline; bindings take it as a worker option",
    "WorkerHandle.running": "Rust introspection; bindings report `stats`",
}

# Operations a language offers under another name or class: op -> {lang: "Class.method"}.
PROVIDED_AS = {
    # Python's Job methods block by themselves in a plain def handler (the sync worker's).
    "Queue.update_progress": {"python": "Job.progress", "python_sync": "Job.progress", "node": "Queue.update_progress", "uniffi": "Queue.update_progress"},
    "Queue.log": {"python": "Job.log", "python_sync": "Job.log"},
    "Queue.children_results": {"python": "Job.children_results", "python_sync": "Job.children_results"},
    "Queue.connect": {"node": "Queue.connect"},
    # The partition count is a keyword of `connect` in every binding.
    "Queue.connect_with": {"python": "Queue.connect", "python_sync": "Queue.connect", "node": "Queue.connect", "uniffi": "Queue.connect"},
    "Queue.partition_count": {"python": "Queue.partitions", "python_sync": "Queue.partitions", "node": "Queue.partitions", "uniffi": "Queue.partitions"},
    # uniffi hands the dead-lettered jobs over as JSON text (their origin's options are free-form).
    "Queue.dead_letters": {"uniffi": "Queue.dead_letters_json"},
    # The second Ctrl-C: Rust takes an aborter before closing; bindings offer `abort()` on the worker.
    "WorkerHandle.aborter": {"python": "Worker.abort", "python_sync": "Worker.abort", "node": "Worker.abort", "uniffi": "Worker.abort"},
}

# (op, lang) pairs absent on purpose, with the reason.
ABSENT = {
    ("Queue.migrate_from_bullmq", "uniffi"): "an operator's one-off step, from a server or script: `emq migrate`, Python, Node and Rust",
    # A facility for bindings, not a user's call: Python's sync add uses it inside the native
    # module (bindings/python/src/local.rs), every language's users get its effect, none calls it.
    **{("Queue.on_own_connection", lang): "a binding's own facility (the sync API's per-thread connection), not a user's call"
       for lang in ("python", "python_sync", "node", "uniffi")},
    # The direct add (core/src/queue/direct.rs): Python's and Node's packages send a lone add on
    # their event loop's own socket inside `add`; every user of `add` gets it, none calls it.
    **{(op, lang): "a binding's own facility (a lone add on the event loop's socket, inside `add`), not a user's call"
       for op in ("Queue.direct_add", "Queue.direct_endpoint")
       for lang in ("python", "python_sync", "node", "uniffi")},
}

# The core's spec types (core/src/spec/mod.rs) a binding fills, and where each binding fills them: the
# function (file, `fn` name) whose body names every field it sets, or, for a binding that hands the
# spec over whole as JSON, whose body has the core read it (`READS_JSON`): the spec's own
# `Deserialize` fills every field, so the binding lists none.
READS_JSON = re.compile(r"(from_json_value|from_json_text|parse_spec)::<JobSpec>")
SPEC_FILLERS = {
    "JobSpec": {
        "python": ("bindings/python/src/options.rs", "job_spec"),
        "node": ("bindings/node/src/options.rs", "job_spec"),
        "uniffi": ("bindings/uniffi/src/options.rs", "to_spec(&self) -> Result<JobSpec"),
    },
    "WorkerSpec": {
        "python": ("bindings/python/src/options.rs", "worker_options"),
        "node": ("bindings/node/src/options.rs", "worker_options"),
        # `start_worker_many` adds strict/weights to the fields `worker_spec` fills (which
        # `Queue.start_worker`, one queue, shares).
        "uniffi": [("bindings/uniffi/src/worker.rs", "start_worker_many"), ("bindings/uniffi/src/worker.rs", "worker_spec")],
    },
}
SPEC_LANGS = ["python", "node", "uniffi"]

# (spec field, lang) pairs a binding does not take, on purpose, with the reason.
SPEC_ABSENT = {
    ("WorkerSpec.trim_interval", "python"): "tuning for tests and the Rust API; the default (5 s) suits applications",
    ("WorkerSpec.trim_interval", "node"): "tuning for tests and the Rust API; the default (5 s) suits applications",
    ("WorkerSpec.trim_interval", "uniffi"): "tuning for tests and the Rust API; the default (5 s) suits applications",
    ("WorkerSpec.prefetch", "python"): "tuning; the core's adaptive default (twice concurrency, only for short jobs)",
    ("WorkerSpec.prefetch", "node"): "tuning; the core's adaptive default (twice concurrency, only for short jobs)",
    ("WorkerSpec.prefetch", "uniffi"): "tuning; the core's adaptive default (twice concurrency, only for short jobs)",
    ("WorkerSpec.block_timeout", "python"): "the sync and async facades wake on their own; the default (5 s) is the core's",
}


def _block(text, start_re):
    """The text of the class/impl block that starts at a line matching start_re (to the next top-level line)."""
    m = re.search(start_re, text, re.M)
    if not m:
        return ""
    rest = text[m.end():]
    end = re.search(r"^\S", rest, re.M)
    return rest[: end.start()] if end else rest


def snake(name):
    return re.sub(r"(?<=[a-z0-9])([A-Z])", r"_\1", name).lower()


def core_ops():
    ops = set()
    for path in sorted((ROOT / "core/src").rglob("*.rs")):
        text = path.read_text()
        for m in re.finditer(r"^impl (?:crate::\w+::)*(Queue|WorkerHandle) \{(.*?)^\}", text, re.S | re.M):
            for f in re.finditer(r"^    pub (?:async )?fn (\w+)", m.group(2), re.M):
                ops.add(f"{m.group(1)}.{f.group(1)}")
    return ops


def core_job_option_fields():
    text = (ROOT / "core/src/options.rs").read_text()
    body = _block(text, r"^pub struct JobOptions \{")
    return [m.group(1) for m in re.finditer(r"^    pub (\w+):", body, re.M)]


def _py_methods(text, cls):
    body = _block(text, rf"^class {cls}\b.*:$")
    return {m.group(1) for m in re.finditer(r"^    (?:async )?def ([a-z]\w*)", body, re.M)}


def _js_methods(text, cls):
    body = _block(text, rf"^(?:export )?class {cls}(?:<[^>]*>)?(?: extends [\w.]+)? \{{")
    names = set()
    for m in re.finditer(r"^  (?:static )?(?:async )?(?:get )?([a-z]\w*)(?:<[^(]*>)?\(", body, re.M):
        names.add(snake(m.group(1)))
    return names


def _rs_methods(text, struct):
    names = set()
    for m in re.finditer(rf"^impl {struct} \{{(.*?)^\}}", text, re.S | re.M):
        names |= {f.group(1) for f in re.finditer(r"^    pub (?:async )?fn (\w+)", m.group(1), re.M)}
    return names


def _node_sources():
    """The Node package's TypeScript sources (one module per concern), concatenated."""
    return "\n".join(p.read_text() for p in sorted((ROOT / "node/src").glob("*.ts")))


def _uniffi_sources():
    """The uniffi binding's sources (one file per exported type), concatenated."""
    return "\n".join(p.read_text() for p in sorted((ROOT / "bindings/uniffi/src").rglob("*.rs")))


def _py_package():
    """The async Python package's modules (one per concern; not the sync facade), concatenated."""
    skip = {"sync.py", "cli.py", "__main__.py"}
    return "\n".join(p.read_text() for p in sorted((ROOT / "python/src/emq").glob("*.py")) if p.name not in skip)


def binding_methods():
    """lang -> class -> method names, read off each binding's sources."""
    py = _py_package()
    sync = (ROOT / "python/src/emq/sync.py").read_text()
    js = _node_sources()
    uni = _uniffi_sources()
    classes = {
        "python": {c: _py_methods(py, c) for c in ("Queue", "Worker", "Job")},
        "python_sync": {c: _py_methods(sync, c) for c in ("Queue", "Worker", "Job")},
        "node": {c: _js_methods(js, c) for c in ("Queue", "Worker")},
        "uniffi": {"Queue": _rs_methods(uni, "Queue"), "Worker": _rs_methods(uni, "WorkerHandle")},
    }
    # The sync facade uses the async Job (in a plain def handler its calls block by themselves).
    if not classes["python_sync"]["Job"]:
        classes["python_sync"]["Job"] = classes["python"]["Job"]
    # Python's Worker uses the async class in the sync module when it has none of its own.
    if not classes["python_sync"]["Worker"] and re.search(r"^from \. import .*Worker|^Worker = ", sync, re.M):
        classes["python_sync"]["Worker"] = classes["python"]["Worker"]
    return classes


def where(op, lang, classes):
    """The binding's name for op, or None when it lacks it."""
    cls, method = op.split(".")
    provided = PROVIDED_AS.get(op, {}).get(lang)
    if provided:
        cls, method = provided.split(".")
    if cls == "WorkerHandle":
        cls = "Worker"
    if method in classes[lang].get(cls, set()):
        return f"{cls}.{method}"
    return None


def table(ops, classes):
    lines = ["| operation | " + " | ".join(LANG_TITLES[lang] for lang in LANGS) + " |", "|---|" + "---|" * len(LANGS)]
    for op in sorted(ops):
        if op in CORE_ONLY:
            continue
        cells = []
        for lang in LANGS:
            got = where(op, lang, classes)
            if got:
                cells.append("yes" if got == op.replace("WorkerHandle", "Worker") else f"`{got}`")
            elif (op, lang) in ABSENT:
                cells.append("absent*")
            else:
                cells.append("**missing**")
        lines.append(f"| `{op}` | " + " | ".join(cells) + " |")
    lines.append("")
    lines.append("\\* deliberate absences, each with its reason in `tests/parity/test_parity.py`; core-only operations (Rust plumbing and maintenance the workers run) are listed there too.")
    return "\n".join(lines)


BEGIN, END = "<!-- parity:begin -->", "<!-- parity:end -->"
README = ROOT / "bindings/README.md"


def rendered():
    return table(core_ops(), binding_methods()) + "\n\nOptions: the fields of the core's spec types (`core/src/spec/`) each binding fills.\n\n" + spec_table()


def test_every_core_operation_is_exported_or_deliberately_absent():
    ops = core_ops()
    assert "Queue.add" in ops and "WorkerHandle.stats" in ops, "the core's operations were not found"
    classes = binding_methods()
    missing = [
        f"{op} in {lang}"
        for op in sorted(ops)
        if op not in CORE_ONLY
        for lang in LANGS
        if not where(op, lang, classes) and (op, lang) not in ABSENT
    ]
    assert not missing, "not exported and not listed as a deliberate absence:\n  " + "\n  ".join(missing)


def test_absence_lists_are_not_stale():
    ops = core_ops()
    classes = binding_methods()
    stale = [op for op in CORE_ONLY if op not in ops]
    stale += [f"{op} in {lang} (now exported)" for (op, lang) in ABSENT if where(op, lang, classes)]
    stale += [f"{op} (no such core operation)" for (op, _) in ABSENT if op not in ops]
    assert not stale, "remove these from the absence lists:\n  " + "\n  ".join(stale)


# JobOptions fields no binding takes, on purpose, with the reason.
JOB_OPTION_FIELDS_NOT_TAKEN = {
    "dead_lettered": "written by emq alone, on a dead-letter queue's copy of a failed job; every binding reads it back as the `origin` of `dead_letters`",
    "batch": "written by emq alone, on a job added through a batch (core/src/batch/)",
    "batch_done": "written by emq alone, on a batch's callback job (core/src/batch/)",
    "trace": "taken as the spec's two fields `traceparent` and `tracestate` (the spec-field table checks each binding takes them)",
}


def test_job_options_fields_reach_every_binding():
    fields = [f for f in core_job_option_fields() if f not in JOB_OPTION_FIELDS_NOT_TAKEN]
    assert "delay_ms" in fields and "priority" in fields
    js = _node_sources() + (ROOT / "bindings/node/src/options.rs").read_text()
    py = _py_package() + (ROOT / "bindings/python/src/convert.rs").read_text()
    uni = _block(_uniffi_sources(), r"^pub struct JobOptions \{")
    # The binding spelling of each field: durations drop their unit suffix (Python takes seconds,
    # Node ms, uniffi keeps `_ms`), Node is camelCase.
    missing = []
    for f in fields:
        base = f[:-3] if f.endswith("_ms") else f
        if not re.search(rf"\b{base}\b", py):
            missing.append(f"{f} in python")
        camel = re.sub(r"_(\w)", lambda m: m.group(1).upper(), base)
        if not re.search(rf"\b{camel}\b", js):
            missing.append(f"{f} in node")
        if not re.search(rf"\b(pub )?{f}\b|\b(pub )?{base}\b", uni):
            missing.append(f"{f} in uniffi")
    assert not missing, "JobOptions fields a binding does not take:\n  " + "\n  ".join(missing)


def core_spec_fields(struct):
    body = _block((ROOT / "core/src/spec/mod.rs").read_text() + (ROOT / "core/src/spec/worker.rs").read_text(), rf"^pub struct {struct} \{{")
    return [m.group(1) for m in re.finditer(r"^    pub (\w+):", body, re.M)]


def _fn_body(path, name):
    """The body of the `fn` whose signature starts with `name` (to the `}` at its indentation)."""
    lines = (ROOT / path).read_text().splitlines()
    for i, line in enumerate(lines):
        m = re.match(r"^(\s*)(?:pub(?:\(crate\))? )?(?:async )?fn " + re.escape(name), line)
        if m:
            end = next(j for j in range(i + 1, len(lines)) if lines[j] == m.group(1) + "}")
            return "\n".join(lines[i:end])
    return ""


def _filler_body(where):
    """The body of a filler: one (file, fn) or the bodies of a list of them together ("" if one is missing)."""
    parts = [_fn_body(*w) for w in (where if isinstance(where, list) else [where])]
    return "\n".join(parts) if all(parts) else ""


def spec_fields_filled():
    """(Spec.field) -> {lang: bool}: whether each binding's filler names the field."""
    out = {}
    for struct, fillers in SPEC_FILLERS.items():
        bodies = {lang: _filler_body(where) for lang, where in fillers.items()}
        for f in core_spec_fields(struct):
            out[f"{struct}.{f}"] = {
                lang: bool(READS_JSON.search(body) or re.search(rf"(\bs\.{f} =|^\s*{f}:)", body, re.M))
                for lang, body in bodies.items()
            }
    return out


def spec_table():
    lines = ["| spec field | " + " | ".join(LANG_TITLES.get(l, l) for l in SPEC_LANGS) + " |", "|---|" + "---|" * len(SPEC_LANGS)]
    for field, filled in spec_fields_filled().items():
        cells = ["yes" if filled[l] else ("absent*" if (field, l) in SPEC_ABSENT else "**missing**") for l in SPEC_LANGS]
        lines.append(f"| `{field}` | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def test_every_spec_field_is_filled_by_every_binding():
    filled = spec_fields_filled()
    assert "JobSpec.remove_on_complete" in filled and "WorkerSpec.concurrency" in filled, "the spec types were not found"
    for struct, fillers in SPEC_FILLERS.items():
        for lang, where in fillers.items():
            assert _filler_body(where), f"{struct}'s filler in {lang} not found: {where}"
    missing = [f"{f} in {l}" for f, by in filled.items() for l, ok in by.items() if not ok and (f, l) not in SPEC_ABSENT]
    assert not missing, "spec fields a binding does not fill (and not listed in SPEC_ABSENT):\n  " + "\n  ".join(missing)
    stale = [f"{f} in {l}" for (f, l) in SPEC_ABSENT if filled.get(f, {}).get(l, True)]
    assert not stale, "remove these from SPEC_ABSENT (now filled, or no such field):\n  " + "\n  ".join(stale)


def test_bindings_match_no_option_strings():
    """The option strings (backoff types, parent policies) are the core's (core/src/spec/mod.rs): a
    binding's conversion code names none of them as a match arm."""
    offenders = []
    for path in sorted((ROOT / "bindings").rglob("*.rs")):
        if "/target/" in str(path):
            continue
        text = path.read_text()
        for s in ["fixed", "exponential", "ignore"]:  # ("remove", "fail" also name operations)
            if re.search(rf'^\s*"{s}"\s*(=>|\|)', text, re.M):
                offenders.append(f"{path.relative_to(ROOT)}: \"{s}\" =>")
    assert not offenders, "option strings matched in a binding:\n  " + "\n  ".join(offenders)


# The names of python/src/emq/errors.py's __all__ that are not a code's class.
NOT_CODES = {"EmqError", "Unrecoverable", "Delay", "error_for_code"}


def core_error_codes():
    """The codes of ErrorCode::as_str's match arms (exhaustive, so every variant's), in order."""
    text = (ROOT / "core/src/error.rs").read_text()
    return re.findall(r'ErrorCode::(\w+) => "(\w+)"', text)


def test_error_codes_are_one_table_in_every_language():
    """Every language takes the core's ErrorCode table: the generated lists (`cargo run -q -p emq
    --example error_codes`, from ErrorCode::ALL) hold exactly the codes of error.rs's match arms,
    in order, and each language has its hand-written class for every code, no more."""
    pairs = core_error_codes()
    codes = [c for _, c in pairs]
    assert {"invalid_option", "internal", "timeout"} <= set(codes), codes
    names = [n for n, _ in pairs]
    regen = "; regenerate them with: cargo run -q -p emq --example error_codes"
    generated = {
        "python/src/emq/_codes.py": re.findall(r'^    \("(\w+)", "(\w+)"\),$', (ROOT / "python/src/emq/_codes.py").read_text(), re.M),
        "node/codes.js": re.findall(r"^  (\w+): '(\w+)',$", (ROOT / "node/codes.js").read_text(), re.M),
    }
    dts_codes = (ROOT / "node/codes.d.ts").read_text().split("export type ErrorCode =", 1)[1].split(";", 1)[0]
    stale = {where: got for where, got in generated.items() if got != [(c, n) for n, c in pairs]}
    if re.findall(r"'(\w+)'", dts_codes) != codes:
        stale["node/codes.d.ts"] = dts_codes
    assert not stale, "generated error-code lists out of step with core/src/error.rs" + regen + ": " + repr(stale)

    errors_py = (ROOT / "python/src/emq/errors.py").read_text()
    py_classes = dict(re.findall(r'^class (\w+)\(EmqError\):\n(?:    """.*?"""\n)?\n?    code = "(\w+)"', errors_py, re.M | re.S))
    all_block = errors_py.split("__all__ = [", 1)[1].split("]", 1)[0]
    init_py = (ROOT / "python/src/emq/__init__.py").read_text()
    errors_ts = (ROOT / "node/src/errors.ts").read_text()
    dts_classes = dict(re.findall(r"^export class (\w+) extends EmqError \{\s*declare readonly code: '(\w+)'", errors_ts, re.M))
    # uniffi's EmqException has no class per code: each of its cases carries the core's own
    # ErrorCode (derived uniffi::Enum in error.rs), so Kotlin's and Swift's enums are generated.
    uni = _block(_uniffi_sources(), r"^pub enum EmqException \{")
    uni_cases = re.findall(r"^    (\w+) \{\n        code: ErrorCode,$", uni, re.M)
    assert uni_cases == ["Failed", "JobFailed"], "bindings/uniffi EmqException: each case's first field is `code: ErrorCode`: " + uni
    assert re.search(r'#\[cfg_attr\(feature = "uniffi", derive\(uniffi::Enum\)\)\]\npub enum ErrorCode \{', (ROOT / "core/src/error.rs").read_text())
    wanted = dict(zip(names, codes))
    found = {
        "python/src/emq/errors.py classes": py_classes,
        "python/src/emq/errors.py __all__": {n: wanted.get(n) for n in re.findall(r'"(\w+)"', all_block) if n not in NOT_CODES},
        "python/src/emq/__init__.py": {n: wanted[n] for n in names if re.search(rf'^    "{n}",$', init_py, re.M)},
        "node/src/errors.ts classes": dts_classes,
    }
    wrong = {where: (sorted(set(wanted.items()) - set(got.items())), sorted(set(got.items()) - set(wanted.items()))) for where, got in found.items() if got != wanted}
    assert not wrong, "error classes out of step with core/src/error.rs (missing, extra): " + repr(wrong)


def test_the_readme_table_is_current():
    text = README.read_text()
    assert BEGIN in text and END in text, f"{README} lacks the parity markers"
    current = text.split(BEGIN)[1].split(END)[0].strip()
    assert current == rendered().strip(), "bindings/README.md is out of date: run python tests/parity/test_parity.py --write"


if __name__ == "__main__":
    if "--write" in sys.argv:
        text = README.read_text() if README.exists() else ""
        block = f"{BEGIN}\n{rendered()}\n{END}"
        if BEGIN in text:
            text = text.split(BEGIN)[0] + block + text.split(END)[1]
        else:
            text = text + ("\n" if text else "") + block + "\n"
        README.write_text(text)
        print(f"wrote {README}")
    else:
        print(rendered())
