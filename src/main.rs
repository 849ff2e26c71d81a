//! The `onceform` binary: parse the command line, run it, exit with one clear line on error.

fn main() {
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info,actix_server=warn"));
    tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
        .with_writer(std::io::stderr)
        .init();
    let result = onceform::cli::parse(std::env::args().skip(1)).and_then(onceform::cli::run);
    if let Err(exit) = result {
        eprintln!("onceform: {}", exit.message);
        std::process::exit(exit.code);
    }
}
