//! Drain rate of the side-effect workers: effects/s for one and two `onceform worker`
//! processes, leads to an instant loopback CRM and to the `file` adapter, mail as files, on
//! SQLite and PostgreSQL (the loopback rows are also the last table of `--bench load`).
//!
//! `cargo bench --bench drain [-- --submissions N]` (PostgreSQL from ONCEFORM_TEST_PG_URL,
//! default postgres://postgres@127.0.0.1:5432/postgres). It prints a table; it asserts only
//! that every effect ended SENT and every lead was created once.
#![allow(clippy::unwrap_used, clippy::expect_used)]

#[path = "common/mod.rs"]
mod common;

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let submissions = args
        .iter()
        .position(|a| a == "--submissions")
        .and_then(|i| args.get(i + 1))
        .and_then(|n| n.parse().ok())
        .unwrap_or(1000usize);
    let leads = [common::drain::Leads::Http, common::drain::Leads::File];
    common::drain::print_table_with(["sqlite", "postgres"], submissions, &leads);
}
