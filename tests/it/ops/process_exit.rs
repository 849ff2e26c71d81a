//! A process whose PostgreSQL connections end on other threads while it exits must exit
//! cleanly. Without `db::establish_pg` telling OpenSSL to skip its exit-time clean-up, such a
//! process died with SIGSEGV or "double free" in about a third of runs (a test that had
//! passed, then crashed on its way out, failed CI).

use std::process::Command;
use std::time::Duration;

use diesel::connection::SimpleConnection;
use diesel::prelude::*;

use crate::support::{pg_admin_url, PG_TEST_PARAMS};

const CHILD: &str = "ONCEFORM_TEST_EXIT_CHILD";
const RUNS: usize = 20;

#[test]
fn a_process_exiting_while_tls_connections_end_on_other_threads_does_not_crash() {
    if std::env::var_os(CHILD).is_some() {
        return exit_while_threads_end();
    }
    let url = child_url();
    let mut conn = onceform::db::establish_pg(&url).unwrap();
    let tls: bool = diesel::select(diesel::dsl::sql::<diesel::sql_types::Bool>(
        "(SELECT ssl FROM pg_stat_ssl WHERE pid = pg_backend_pid())",
    ))
    .get_result(&mut conn)
    .unwrap();
    assert!(tls, "libpq must use TLS to this server for the test to mean anything");
    let me = std::env::current_exe().unwrap();
    let name = "process_exit::a_process_exiting_while_tls_connections_end_on_other_threads_does_not_crash";
    for run in 1..=RUNS {
        let out = Command::new(&me)
            .args(["--exact", name, "--test-threads", "1"])
            .env(CHILD, "1")
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "run {run} of {RUNS} ended with {:?}:\n{}",
            out.status,
            String::from_utf8_lossy(&out.stderr)
        );
    }
}

fn child_url() -> String {
    let base = pg_admin_url();
    format!("{base}{}{PG_TEST_PARAMS}", if base.contains('?') { '&' } else { '?' })
}

/// The child: eight threads each open a connection and run a query; the process exits
/// while they finish.
fn exit_while_threads_end() {
    for _ in 0..8 {
        let url = child_url();
        std::thread::spawn(move || {
            let mut conn = onceform::db::establish_pg(&url).unwrap();
            conn.batch_execute("SELECT 1").unwrap();
        });
    }
    std::thread::sleep(Duration::from_millis(8));
}
