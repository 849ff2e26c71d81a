//! libpq's OpenSSL at process exit.
//!
//! OpenSSL 3 frees its global state from an `atexit` handler. A thread that ends at that
//! moment (a pool or blocking thread that held a TLS connection to PostgreSQL) runs
//! OpenSSL's per-thread clean-up against the freed state, and the process dies on its way out
//! with SIGSEGV or "double free or corruption". Asked before its first use, OpenSSL skips
//! that handler; the operating system reclaims the memory anyway.

use std::ffi::{c_int, c_void};
use std::sync::Once;

/// `OPENSSL_INIT_NO_ATEXIT` in OpenSSL 1.1.1b and later.
const OPENSSL_INIT_NO_ATEXIT: u64 = 0x0008_0000;

/// Tells OpenSSL, if the process has it (through libpq), not to clean up at exit.
/// Idempotent; must run before the first PostgreSQL connection.
fn skip_openssl_exit_cleanup() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        // SAFETY: dlsym with a NUL-terminated name only looks a symbol up. When found, it is
        // OpenSSL's `int OPENSSL_init_crypto(uint64_t, const OPENSSL_INIT_SETTINGS *)`, for
        // which a null settings pointer means the defaults.
        unsafe {
            let symbol = libc::dlsym(libc::RTLD_DEFAULT, c"OPENSSL_init_crypto".as_ptr());
            if !symbol.is_null() {
                let init: extern "C" fn(u64, *const c_void) -> c_int = std::mem::transmute(symbol);
                init(OPENSSL_INIT_NO_ATEXIT, std::ptr::null());
            }
        }
    });
}

/// A PostgreSQL connection outside the pool (migrations, tests, tools), made only after
/// OpenSSL has been told not to clean up at exit.
pub fn establish_pg(url: &str) -> diesel::ConnectionResult<diesel::PgConnection> {
    use diesel::Connection;
    skip_openssl_exit_cleanup();
    diesel::PgConnection::establish(url)
}
