//! The `onceform` binary: parse the command line, run it, exit with one clear line on error.

/// jemalloc: glibc's allocator took about a fifth of the server's CPU under accepts
/// (docs/benchmarks/history.md, fourteenth session).
#[global_allocator]
static ALLOCATOR: tikv_jemallocator::Jemalloc = tikv_jemallocator::Jemalloc;

fn main() {
    if let Err(message) = onceform::base::logging::init(std::env::var("ONCEFORM_LOG_FORMAT").ok().as_deref())
    {
        eprintln!("onceform: {message}");
        std::process::exit(2);
    }
    let result = onceform::cli::parse(std::env::args().skip(1)).and_then(onceform::cli::run);
    match result {
        Ok(()) => {}
        // `--help`, `--version`: what was asked for, on stdout.
        Err(exit) if exit.code == 0 => print!("{}", exit.message),
        Err(exit) => {
            eprintln!("onceform: {}", exit.message);
            std::process::exit(exit.code);
        }
    }
}
