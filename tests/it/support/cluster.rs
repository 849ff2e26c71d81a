//! A replicated PostgreSQL for one test: `scripts/failover-cluster.sh` (pg_auto_failover, a
//! monitor and two synchronous data nodes) on free loopback ports in a directory of its own,
//! torn down when dropped, also when the test fails. `Cluster::start()` is `None` where the
//! packages are missing (`./test.sh` installs them).

use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

const SCRIPT: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/scripts/failover-cluster.sh");
/// No Kerberos, no TLS on the cluster (`tests/it/support/mod.rs` says why GSSAPI is off).
/// This file is also the chaos benchmark's (`benches/chaos.rs`): it stands alone.
const PARAMS: &str = "gssencmode=disable&sslmode=disable";

pub struct Cluster {
    dir: PathBuf,
    /// The monitor's port; the nodes listen on the next two.
    pub port: u16,
}

/// Whether pg_auto_failover is installed.
pub fn available() -> bool {
    Command::new("pg_autoctl").arg("--version").stdout(Stdio::null()).stderr(Stdio::null()).status().is_ok()
}

/// Three consecutive ports nothing listens on now (another test may still take one: `start`
/// tries again elsewhere), below Linux's ephemeral range (32768 on): a node restarted on its
/// port must not find it taken by some client connection's local end.
pub fn free_ports() -> u16 {
    loop {
        let base = 20_000 + fastrand::u16(0..12_000);
        if (0..3).all(|i| std::net::TcpListener::bind(("127.0.0.1", base + i)).is_ok()) {
            return base;
        }
    }
}

fn script(args: &[&str]) -> std::process::Output {
    Command::new("bash").arg(SCRIPT).args(args).stdin(Stdio::null()).output().unwrap()
}

impl Cluster {
    /// Starts a cluster (primary and synchronous secondary), or `None` without pg_auto_failover.
    pub fn start() -> Option<Cluster> {
        if !available() {
            eprintln!("pg_auto_failover is not installed (postgresql-15-auto-failover): skipped");
            return None;
        }
        let mut last = String::new();
        for _ in 0..3 {
            let dir =
                std::env::temp_dir().join(format!("onceform-cluster-{}", uuid::Uuid::new_v4().simple()));
            std::fs::create_dir_all(&dir).unwrap();
            let port = free_ports();
            let cluster = Cluster { dir, port };
            // Torn down by the script's watchdog if this process dies without unwinding.
            let owner = std::process::id().to_string();
            let out = script(&["up", cluster.dir(), &port.to_string(), &owner]);
            if out.status.success() {
                return Some(cluster);
            }
            last =
                format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
            drop(cluster);
        }
        panic!("the cluster did not start: {last}");
    }

    fn dir(&self) -> &str {
        self.dir.to_str().unwrap()
    }

    /// The data nodes' ports.
    pub fn nodes(&self) -> [u16; 2] {
        [self.port + 1, self.port + 2]
    }

    /// The URL onceform is given: both nodes, following the writable one when `follow`
    /// (`target_session_attrs=read-write`), else libpq's default (the first that answers).
    pub fn url(&self, follow: bool) -> String {
        let [a, b] = self.nodes();
        let tsa = if follow { "&target_session_attrs=read-write" } else { "" };
        format!("postgres://postgres@127.0.0.1:{a},127.0.0.1:{b}/onceform?{}{tsa}", PARAMS)
    }

    /// A URL to one node.
    pub fn node_url(&self, port: u16) -> String {
        format!("postgres://postgres@127.0.0.1:{port}/onceform?{}", PARAMS)
    }

    /// The port of the node the monitor has as primary (`None` during a failover).
    pub fn primary(&self) -> Option<u16> {
        String::from_utf8_lossy(&script(&["primary", self.dir()]).stdout).trim().parse().ok()
    }

    /// Data node 1 or 2 (by port) killed with SIGKILL: its keeper and its Postgres.
    pub fn kill(&self, port: u16) {
        let n = (port - self.port).to_string();
        assert!(script(&["kill", self.dir(), &n]).status.success());
    }

    /// The killed node's keeper started again: it rejoins as a secondary.
    pub fn restart(&self, port: u16) {
        let n = (port - self.port).to_string();
        assert!(script(&["start", self.dir(), &n]).status.success());
    }

    /// Waits until one node is primary and the other a synchronous secondary again.
    pub fn wait_healthy(&self, seconds: u32) {
        let out = script(&["wait", self.dir(), &seconds.to_string()]);
        assert!(out.status.success(), "not healthy: {}", String::from_utf8_lossy(&out.stderr));
    }

    /// The monitor stopped: nothing promotes a standby any more.
    pub fn stop_monitor(&self) {
        assert!(script(&["stop-monitor", self.dir()]).status.success());
    }

    /// Waits until `port` takes writes (promoted and confirmed); how long that took.
    pub fn wait_writable(&self, port: u16, limit: Duration) -> Duration {
        let started = Instant::now();
        loop {
            if let Ok(mut c) = onceform::db::establish_pg(&self.node_url(port)) {
                if onceform::db::primary_pg::writable(&mut c).unwrap_or(false) {
                    return started.elapsed();
                }
            }
            assert!(started.elapsed() < limit, "node {port} did not take writes within {limit:?}");
            std::thread::sleep(Duration::from_millis(100));
        }
    }
}

impl Drop for Cluster {
    fn drop(&mut self) {
        let _ = script(&["down", self.dir()]);
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}
