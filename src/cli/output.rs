//! Standard output for every command: when the reader goes away (`somatize seen S --run R |
//! head -1`), the rest of the output is dropped quietly and the command ends as it would have,
//! with its own exit status (0 for the listings), instead of panicking.
//!
//! Why a writer and not `SIGPIPE` reset to its default: the default signal would also kill
//! `somatize record` when its training command closes a pipe and `serve` when a browser drops
//! a connection, and cut `import` or `demo` short in the middle of writing a store; it needs
//! `unsafe` libc calls, and does nothing on Windows. Why not 141 (a shell's code for death by
//! SIGPIPE): the reader took what it wanted, and a pipeline under `set -o pipefail` should not
//! fail because `head` stopped reading, while `diagnose --fail-on` keeps its status 1. Every
//! command prints through [`outln!`]/[`out!`] (defined in `cli/mod.rs`) or [`stdout`].

use std::fmt;
use std::io::{self, Write};
use std::sync::atomic::{AtomicBool, Ordering};

/// Set once stdout's reader has gone: everything written after is dropped.
static CLOSED: AtomicBool = AtomicBool::new(false);

/// Whether the reader of stdout has gone (a write met a closed pipe).
pub fn closed() -> bool {
    CLOSED.load(Ordering::Relaxed)
}

/// A write's result, with a closed pipe turned into success (and remembered).
fn quiet<T>(result: io::Result<T>, instead: T) -> io::Result<T> {
    match result {
        Err(e) if e.kind() == io::ErrorKind::BrokenPipe => {
            CLOSED.store(true, Ordering::Relaxed);
            Ok(instead)
        }
        other => other,
    }
}

/// Buffered stdout that drops what is written once the pipe is closed; other write errors are
/// returned.
pub struct Stdout(io::BufWriter<io::StdoutLock<'static>>);

/// Stdout for a command writing much (tables, JSON): buffered, locked, quiet on a closed pipe.
pub fn stdout() -> Stdout {
    Stdout(io::BufWriter::new(io::stdout().lock()))
}

impl Write for Stdout {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        if closed() {
            return Ok(buf.len());
        }
        quiet(self.0.write(buf), buf.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        if closed() {
            return Ok(());
        }
        quiet(self.0.flush(), ())
    }
}

/// What `print!` does, but once the pipe is closed the text is dropped, and any other write
/// error ends the process with status 2 and a message on stderr instead of a panic.
pub fn print(args: fmt::Arguments<'_>) {
    if closed() {
        return;
    }
    let mut out = io::stdout().lock();
    if let Err(e) = quiet(out.write_fmt(args).and_then(|()| out.flush()), ()) {
        eprintln!("somatize: cannot write to stdout: {e}");
        std::process::exit(2);
    }
}
