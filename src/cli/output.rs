//! Standard output for every command: when the reader goes away (`somatize seen S --run R |
//! head -1`), the process ends quietly with status 0 instead of panicking.
//!
//! Why a writer and not `SIGPIPE` reset to its default: the default signal would also kill
//! `somatize record` when its training command closes a pipe, and `serve` when a browser drops
//! a connection; it needs `unsafe` libc calls, and does nothing on Windows. Why status 0 and
//! not 141 (a shell's code for death by SIGPIPE): the reader took what it wanted, and a
//! pipeline under `set -o pipefail` should not fail because `head` stopped reading. Every
//! command prints through [`outln!`]/[`out!`] (defined in `cli/mod.rs`) or [`stdout`].

use std::fmt;
use std::io::{self, Write};

/// End the process quietly: the reader of stdout has gone, there is no one to tell.
fn closed() -> ! {
    std::process::exit(0)
}

/// Pass a write's result on, ending the process quietly when stdout's pipe is closed.
fn quiet<T>(result: io::Result<T>) -> io::Result<T> {
    match result {
        Err(e) if e.kind() == io::ErrorKind::BrokenPipe => closed(),
        other => other,
    }
}

/// Buffered stdout whose writes end the process quietly on a closed pipe; other write errors
/// are returned.
pub struct Stdout(io::BufWriter<io::StdoutLock<'static>>);

/// Stdout for a command writing much (tables, JSON): buffered, locked, quiet on a closed pipe.
pub fn stdout() -> Stdout {
    Stdout(io::BufWriter::new(io::stdout().lock()))
}

impl Write for Stdout {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        quiet(self.0.write(buf))
    }

    fn flush(&mut self) -> io::Result<()> {
        quiet(self.0.flush())
    }
}

impl Drop for Stdout {
    fn drop(&mut self) {
        // BufWriter's own drop would swallow a closed pipe and any other error; flush here so
        // a closed pipe still ends quietly. An error other than a closed pipe is reported
        // where it is known, by the caller's explicit `flush`.
        let _ = self.flush();
    }
}

/// What `print!` does, but a closed pipe ends the process quietly (status 0), and any other
/// write error ends it with status 2 and a message on stderr instead of a panic.
pub fn print(args: fmt::Arguments<'_>) {
    let mut out = io::stdout().lock();
    if let Err(e) = quiet(out.write_fmt(args).and_then(|()| out.flush())) {
        eprintln!("somatize: cannot write to stdout: {e}");
        std::process::exit(2);
    }
}
