//! The native command-line companion: `somatize --help` lists what it does.

#[cfg(not(target_arch = "wasm32"))]
fn main() -> std::process::ExitCode {
    somatize::cli::main()
}

/// The command line is native only; the wasm build ships the library.
#[cfg(target_arch = "wasm32")]
fn main() {}
