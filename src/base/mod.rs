//! The helpers every layer may use: the time, how times and references are written, the shipped
//! locales, logging, the metric families of `/metrics`, the server secret, the requests in
//! flight, files only the server reads.

pub mod clock;
pub mod format;
pub mod i18n;
pub mod logging;
pub mod metrics;
pub mod private_files;
pub mod secret;
pub mod traffic;
