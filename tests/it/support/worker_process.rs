//! Real `onceform worker` child processes, killed with SIGKILL when a test says so or when
//! dropped.

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::Duration;

pub struct WorkerProcess(Child, mpsc::Receiver<String>);

impl WorkerProcess {
    /// `onceform worker --config CONFIG`, returned once it has said it runs.
    pub fn start(config: &std::path::Path) -> WorkerProcess {
        let mut child = Command::new(env!("CARGO_BIN_EXE_onceform"))
            .args(["worker", "--config", config.to_str().unwrap()])
            // Relative paths (./data) resolve beside its configuration, not in the working directory.
            .current_dir(config.parent().unwrap())
            .env("RUST_LOG", "warn")
            .stdout(Stdio::piped())
            .spawn()
            .unwrap();
        let mut out = BufReader::new(child.stdout.take().unwrap());
        let mut line = String::new();
        out.read_line(&mut line).unwrap();
        assert!(line.starts_with("onceform worker"), "{line:?}");
        let (said, lines) = mpsc::channel();
        std::thread::spawn(move || {
            for line in out.lines().map_while(Result::ok) {
                let _ = said.send(line);
            }
        });
        WorkerProcess(child, lines)
    }

    pub fn pid(&self) -> u32 {
        self.0.id()
    }

    /// The next line it prints on standard output (e.g. how a reload went), within `limit`.
    pub fn next_line(&self, limit: Duration) -> String {
        self.1.recv_timeout(limit).expect("the worker said nothing in time")
    }

    pub fn kill9(&mut self) {
        self.0.kill().unwrap(); // SIGKILL
        self.0.wait().unwrap();
    }
}

impl Drop for WorkerProcess {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}
