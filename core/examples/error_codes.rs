//! Writes every language's list of error codes from the core's one table ([`ErrorCode::ALL`] in
//! `core/src/error.rs`), as valkey-glide maps its one table into each client:
//!
//! - `python/src/emq/_codes.py`: `CODES`, (code, class name) pairs; `emq.errors` maps each code
//!   to its exception class through it;
//! - `node/codes.js`: `CLASS_NAMES`, code → class name; `node/src/errors.ts` checks its classes
//!   against it when the package loads;
//! - `node/codes.d.ts`: its types, and the `ErrorCode` union, over which `errors.ts` types its
//!   code → class table (so tsc refuses a code without a class).
//!
//! The class name of a code is its Rust variant's name (`invalid_queue_name` is
//! `InvalidQueueName`), as uniffi gives Kotlin and Swift (`bindings/uniffi/src/error.rs`).
//!
//! ```text
//! cargo run -q -p emq --example error_codes            # (re)writes the files
//! cargo run -q -p emq --example error_codes -- --check # fails, naming them, when one is stale
//! ```

use emq::ErrorCode;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

const REGENERATE: &str = "cargo run -q -p emq --example error_codes";

fn class_name(code: ErrorCode) -> String {
    format!("{code:?}")
}

fn banner(comment: &str) -> String {
    format!(
        "{comment} Generated from core/src/error.rs (ErrorCode::ALL) by `{REGENERATE}`.\n\
         {comment} Do not edit: change the core's table and run that command again.\n"
    )
}

fn python() -> String {
    let mut out = banner("#");
    out.push_str(
        "\"\"\"The core's stable error codes, in its order, each with its exception class's name.\"\"\"\n\n\
         from typing import Tuple\n\n\
         CODES: Tuple[Tuple[str, str], ...] = (\n",
    );
    for c in ErrorCode::ALL {
        out.push_str(&format!(
            "    (\"{}\", \"{}\"),\n",
            c.as_str(),
            class_name(c)
        ));
    }
    out.push_str(")\n");
    out
}

fn node_cjs() -> String {
    let mut out = String::from("'use strict';\n");
    out.push_str(&banner("//"));
    out.push_str(
        "\n/** Every stable error code of the core, in its order, with its error class's name. */\n\
         const CLASS_NAMES = Object.freeze({\n",
    );
    for c in ErrorCode::ALL {
        out.push_str(&format!("  {}: '{}',\n", c.as_str(), class_name(c)));
    }
    out.push_str("});\n\nmodule.exports = { CLASS_NAMES };\n");
    out
}

fn node_dts() -> String {
    let mut out = banner("//");
    out.push_str(
        "\n/** A stable error code of the core (`EmqError.code`). */\nexport type ErrorCode =\n",
    );
    let codes: Vec<String> = ErrorCode::ALL
        .iter()
        .map(|c| format!("  | '{}'", c.as_str()))
        .collect();
    out.push_str(&codes.join("\n"));
    out.push_str(";\n\n/** Code → error class name, for every code (node/codes.js). */\n");
    out.push_str("export declare const CLASS_NAMES: { readonly [C in ErrorCode]: string };\n");
    out
}

fn main() -> ExitCode {
    let check = match std::env::args().nth(1).as_deref() {
        None => false,
        Some("--check") => true,
        Some(other) => {
            eprintln!("error_codes: unknown argument {other:?}; usage: {REGENERATE} [-- --check]");
            return ExitCode::from(2);
        }
    };
    let root: PathBuf = Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("core/ has a parent")
        .to_path_buf();
    let files = [
        ("python/src/emq/_codes.py", python()),
        ("node/codes.js", node_cjs()),
        ("node/codes.d.ts", node_dts()),
    ];
    let mut stale = Vec::new();
    for (rel, text) in &files {
        let path = root.join(rel);
        let current = std::fs::read_to_string(&path).unwrap_or_default();
        if current == *text {
            continue;
        }
        if check {
            stale.push(*rel);
        } else if let Err(e) = std::fs::write(&path, text) {
            eprintln!("error_codes: cannot write {}: {e}", path.display());
            return ExitCode::FAILURE;
        } else {
            println!("error_codes: wrote {rel}");
        }
    }
    if !stale.is_empty() {
        eprintln!(
            "error_codes: out of date with core/src/error.rs: {}\n  regenerate them with: {REGENERATE}",
            stale.join(", ")
        );
        return ExitCode::FAILURE;
    }
    if check {
        println!(
            "error_codes: {} files match the core's {} codes",
            files.len(),
            ErrorCode::ALL.len()
        );
    }
    ExitCode::SUCCESS
}
