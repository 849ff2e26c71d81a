//! Drain rate of the side-effect workers: effects/s for one and two `onceform worker`
//! processes, leads to an instant loopback CRM and to the `file` adapter, mail as files, and
//! outbound webhooks (the form's only effect) to an instant loopback receiver, on
//! SQLite and PostgreSQL (the loopback rows are also the last table of `--bench load`), with
//! the workers' CPU time per 1,000 effects, the machine's CPU use and issue 11's target.
//!
//! A second table drains a burst of `--burst N` (10,000) submissions, each routed to three
//! destinations, against the same burst to one destination (issue 41's row).
//!
//! `cargo bench --bench drain [-- --submissions N (5,000)] [--burst N (10,000)] [--backend sqlite|postgres] [--leads http|file|webhook|routed]`
//! (PostgreSQL from ONCEFORM_TEST_PG_URL, default postgres://postgres@127.0.0.1:5432/postgres).
//! It prints a table; it asserts only that every effect ended SENT and every lead (webhook)
//! arrived once.
#![allow(clippy::unwrap_used, clippy::expect_used)]

#[path = "common/mod.rs"]
mod common;

use common::drain::Leads;

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let value = |name: &str| args.iter().position(|a| a == name).and_then(|i| args.get(i + 1)).cloned();
    let submissions = value("--submissions").and_then(|n| n.parse().ok()).unwrap_or(5000usize);
    let backends =
        value("--backend").map_or_else(|| vec!["sqlite".to_string(), "postgres".into()], |b| vec![b]);
    let burst = value("--burst").and_then(|n| n.parse().ok()).unwrap_or(10_000usize);
    let leads = match value("--leads").as_deref() {
        Some("http") => vec![Leads::Http],
        Some("file") => vec![Leads::File],
        Some("webhook") => vec![Leads::Webhook],
        Some("routed") => vec![],
        _ => vec![Leads::Http, Leads::File, Leads::Webhook],
    };
    if !leads.is_empty() {
        common::drain::print_table_with(backends.iter().map(String::as_str), submissions, &leads);
        println!();
    }
    if matches!(value("--leads").as_deref(), None | Some("routed")) {
        common::drain::print_routed(backends.iter().map(String::as_str), burst);
    }
}
