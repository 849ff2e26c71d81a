//! Log output: human-readable text (the default) or one JSON object per line with
//! `ONCEFORM_LOG_FORMAT=json`; `RUST_LOG` filters either. A request's lines carry its
//! `request_id` (the span `request`, see `http::request_id`).

/// Installs the global subscriber writing to stderr. `format` is `ONCEFORM_LOG_FORMAT`.
pub fn init(format: Option<&str>) -> Result<(), String> {
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info,actix_server=warn"));
    let builder = tracing_subscriber::fmt().with_env_filter(filter).with_writer(std::io::stderr);
    match format.map(str::to_ascii_lowercase).as_deref() {
        None | Some("" | "text") => {
            builder.with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr())).init();
            Ok(())
        }
        Some("json") => {
            builder.json().with_current_span(true).with_span_list(false).init();
            Ok(())
        }
        Some(other) => Err(format!("ONCEFORM_LOG_FORMAT must be `text` or `json`, not `{other}`")),
    }
}
