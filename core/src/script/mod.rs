//! The scripts: every Lua script in `lua/`, its header, and how it is invoked, one file per concern:
//! - `registry`: [`Script`] (a file of `lua/`, its header, its two compiled texts and SHAs) and
//!   the list of every script ([`ALL`], one static per file);
//! - `header`: [`Header`], read off the `KEYS[i]` / `ARGV[i]` lines every script opens with (a
//!   trailing `KEYS[n..]` or `ARGV[n..]` line declares a repeating group);
//! - `assemble`: the text the server runs ([`assemble`]): `lua/lib/guard.lua` (the only place
//!   `redis.call` appears, and the only clock), the libraries the header names, and in guarded
//!   mode the key table of `lua/lib/keyspec.lua` in front, so `call` checks every key argument
//!   against `KEYS`; each mode has its own SHA;
//! - `invocation`: one call ([`Invocation`]): keys only as [`Key`](crate::Key)s, the counts
//!   checked against the header, each key's role and the one-slot rule checked before sending;
//! - `prefix`: the checked fixed front of a script called again and again (`Prefix`);
//! - `send`: EVALSHA for one call ([`Invocation::invoke`]) or a pipeline ([`pipeline`]) with the
//!   one NOSCRIPT retry (load, resend once), and loading ([`Script::load`], [`load_all`]);
//! - `lint`: the wire rules read off a script's text ([`lint`]).

mod assemble;
mod header;
mod invocation;
#[cfg(any(test, feature = "testing"))]
mod lint;
mod prefix;
mod registry;
mod send;

// What only the tests call (core/tests, through `emq::testing` with the `testing` feature).
#[cfg(any(test, feature = "testing"))]
pub use assemble::assemble;
#[cfg(any(test, feature = "testing"))]
pub use header::Header;
pub use invocation::Invocation;
#[cfg(any(test, feature = "testing"))]
pub use lint::lint;
pub(crate) use prefix::Prefix;
pub use registry::*;
#[cfg(any(test, feature = "testing"))]
pub use send::load_all;
pub use send::pipeline;
