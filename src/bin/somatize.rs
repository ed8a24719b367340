//! The native command-line companion: `somatize --help` lists what it does.

fn main() -> std::process::ExitCode {
    somatize::cli::main()
}
