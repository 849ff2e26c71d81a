//! `serve`'s workers run below its requests' CPU priority (nice 10 on their threads), so that
//! under a burst the accepts keep their pace; `onceform worker`'s threads are not lowered.

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader};
use std::process::Stdio;

use crate::support::serve_process::ServeProcess;
use crate::support::{own_dir, Backend, TestDb};

/// The nice values of a process's threads, by thread name.
fn nice_by_thread(pid: u32) -> BTreeMap<String, Vec<i32>> {
    let mut out: BTreeMap<String, Vec<i32>> = BTreeMap::new();
    for task in std::fs::read_dir(format!("/proc/{pid}/task")).unwrap().flatten() {
        let stat = std::fs::read_to_string(task.path().join("stat")).unwrap_or_default();
        let comm = std::fs::read_to_string(task.path().join("comm")).unwrap_or_default();
        // After the name in parentheses: state (field 3) … nice (field 19).
        let rest = stat.rsplit_once(')').map(|(_, r)| r).unwrap_or_default();
        if let Some(nice) = rest.split_whitespace().nth(16).and_then(|n| n.parse().ok()) {
            out.entry(comm.trim().to_string()).or_default().push(nice);
        }
    }
    out
}

#[test]
fn serves_workers_yield_the_cpu_and_a_worker_process_does_not() {
    let db = TestDb::new(Backend::Sqlite);
    let serve = ServeProcess::start(ServeProcess::command(&db.url, &[]));
    // `serve` prints its address before the HTTP server's threads start: wait for them (up
    // to a generous limit, not a timing assertion).
    let started = std::time::Instant::now();
    let mut threads = nice_by_thread(serve.child.id());
    while !threads.keys().any(|k| k.starts_with("actix")) && started.elapsed().as_secs() < 30 {
        std::thread::sleep(std::time::Duration::from_millis(20));
        threads = nice_by_thread(serve.child.id());
    }
    let workers = threads.get("effect-worker").cloned().unwrap_or_default();
    assert!(workers.len() >= 3, "the worker loop and its runtime's threads: {threads:?}");
    assert!(workers.iter().all(|n| *n == 10), "{threads:?}");
    let http: Vec<i32> =
        threads.iter().filter(|(k, _)| k.starts_with("actix")).flat_map(|(_, v)| v.clone()).collect();
    assert!(!http.is_empty() && http.iter().all(|n| *n == 0), "the requests' threads: {threads:?}");
    drop(serve);

    let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_onceform"))
        .arg("worker")
        .env("ONCEFORM_DATABASE_URL", &db.url)
        .env("RUST_LOG", "warn")
        .current_dir(own_dir())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut line = String::new();
    BufReader::new(child.stdout.take().unwrap()).read_line(&mut line).unwrap();
    assert!(line.contains("worker"), "{line:?}");
    let threads = nice_by_thread(child.id());
    let _ = child.kill();
    let _ = child.wait();
    let workers = threads.get("effect-worker").cloned().unwrap_or_default();
    assert!(!workers.is_empty() && workers.iter().all(|n| *n == 0), "{threads:?}");
}
