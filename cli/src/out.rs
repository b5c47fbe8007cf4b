//! Writing to stdout. When the reader has gone (`emq jobs … | head -1`), the write fails with a
//! broken pipe; [`write`] then records that and returns an error, which every command passes up
//! with `?` (so what it holds, an embedded server too, is dropped as usual), and `main` ends
//! quietly with exit 0 ([`closed`]) instead of printing an error or panicking as `println!` does.
//!
//! Use [`outln!`](crate::outln) and [`out!`](crate::out) where `println!` and `print!` would go.

use emq::{Error, ErrorCode};
use std::fmt;
use std::io::{ErrorKind, Write};
use std::sync::atomic::{AtomicBool, Ordering};

static CLOSED: AtomicBool = AtomicBool::new(false);

/// Whether a write found stdout closed by its reader.
pub fn closed() -> bool {
    CLOSED.load(Ordering::Relaxed)
}

/// Writes `args` to stdout and flushes.
pub fn write(args: fmt::Arguments<'_>) -> emq::Result<()> {
    let mut out = std::io::stdout().lock();
    match out.write_fmt(args).and_then(|()| out.flush()) {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == ErrorKind::BrokenPipe => {
            CLOSED.store(true, Ordering::Relaxed);
            Err(Error::new(ErrorCode::Internal, "stdout was closed"))
        }
        Err(e) => Err(Error::new(
            ErrorCode::Internal,
            format!("cannot write to stdout: {e}"),
        )),
    }
}

/// `println!` that returns (with `?`) when stdout fails, a closed pipe included.
#[macro_export]
macro_rules! outln {
    () => { $crate::out::write(format_args!("\n"))? };
    ($($arg:tt)*) => { $crate::out::write(format_args!("{}\n", format_args!($($arg)*)))? };
}

/// `print!` that returns (with `?`) when stdout fails, a closed pipe included.
#[macro_export]
macro_rules! out {
    ($($arg:tt)*) => { $crate::out::write(format_args!($($arg)*))? };
}
