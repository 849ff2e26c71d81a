//! libpq's OpenSSL at process exit.
//!
//! OpenSSL 3 frees its global state from an `atexit` handler. A thread that ends at that
//! moment (a pool or blocking thread that held a TLS connection to PostgreSQL) runs
//! OpenSSL's per-thread clean-up against the freed state, and the process dies on its way out
//! with SIGSEGV or "double free or corruption". Asked before its first use, OpenSSL skips
//! that handler; the operating system reclaims the memory anyway.
//!
//! libpq is built from source with a vendored, statically linked OpenSSL (pq-sys `bundled`,
//! openssl-sys `vendored`), so its OpenSSL is the one `openssl_sys` links: `openssl_sys::init`
//! initialises it with `OPENSSL_INIT_NO_ATEXIT`. (A dynamic `dlsym` lookup would no longer
//! find the symbol: a statically linked executable does not export it.)

/// Tells libpq's OpenSSL not to clean up at exit. Idempotent; must run before the first
/// PostgreSQL connection.
fn skip_openssl_exit_cleanup() {
    openssl_sys::init();
}

/// A PostgreSQL connection outside the pool (migrations, tests, tools), made only after
/// OpenSSL has been told not to clean up at exit.
pub fn establish_pg(url: &str) -> diesel::ConnectionResult<diesel::PgConnection> {
    use diesel::Connection;
    skip_openssl_exit_cleanup();
    diesel::PgConnection::establish(url)
}
