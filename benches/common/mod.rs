//! What the benchmarks share: fresh databases, `onceform` child processes, seeding through
//! the accept transaction, peak RSS and percentiles.
#![allow(dead_code)]

pub mod drain;

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};

use diesel::connection::SimpleConnection;
use onceform::config::{Config, DEFAULT_CONFIG};
use onceform::db::Pool;
use onceform::domain::{normalise, OperationId};
use onceform::services::accept::{Acceptor, Intake};
use onceform::services::request_log::Channel;

pub fn pg_admin() -> String {
    std::env::var("ONCEFORM_TEST_PG_URL")
        .unwrap_or_else(|_| "postgres://postgres@127.0.0.1:5432/postgres".into())
}

/// A fresh database (SQLite file or PostgreSQL database) and a scratch directory, removed on drop.
pub struct Db {
    pub url: String,
    pub dir: std::path::PathBuf,
    pg_name: Option<String>,
}

impl Db {
    pub fn new(backend: &str) -> Db {
        let tag = uuid::Uuid::new_v4().simple().to_string();
        let dir = scratch_parent().join(tag.as_str());
        std::fs::create_dir_all(&dir).unwrap();
        if backend == "sqlite" {
            return Db { url: format!("sqlite://{}", dir.join("bench.db").display()), dir, pg_name: None };
        }
        let name = format!("onceform_bench_{tag}");
        onceform::db::establish_pg(&pg_admin())
            .unwrap()
            .batch_execute(&format!("CREATE DATABASE {name}"))
            .unwrap();
        let admin = pg_admin();
        let server = admin.rsplit_once('/').unwrap().0;
        Db { url: format!("{server}/{name}"), dir, pg_name: Some(name) }
    }

    pub fn is_pg(&self) -> bool {
        self.pg_name.is_some()
    }

    /// The default configuration (workers inside `serve`) with the file CRM in `DIR/crm` and
    /// mail as files in `DIR/mail`, as `cargo run` users get it; also the CRM's directory.
    pub fn default_config(&self) -> (std::path::PathBuf, Config, std::path::PathBuf) {
        let (crm, mail) = (self.dir.join("crm"), self.dir.join("mail"));
        let (path, config) = self.config(&format!(
            "[crm]\nadapter = \"file\"\ndir = {:?}\n\n[smtp]\nmail_dir = {:?}",
            crm.display().to_string(),
            mail.display().to_string()
        ));
        assert!(config.worker.enabled, "the default configuration runs the workers inside serve");
        (path, config, crm)
    }

    /// Writes a configuration file: the demo forms, this database, `extra` TOML sections.
    pub fn config(&self, extra: &str) -> (std::path::PathBuf, Config) {
        self.config_with_forms(extra, default_forms())
    }

    /// `config` with `forms` instead of the default configuration's forms.
    pub fn config_with_forms(&self, extra: &str, forms: &str) -> (std::path::PathBuf, Config) {
        // Everything the server writes goes to this run's directory, never the checkout's ./data.
        let at = |name: &str| self.dir.join(name).display().to_string();
        let server = format!(
            "[server]\nsecret_file = {:?}\ninitial_password_file = {:?}\nspool_dir = {:?}\nfiles_dir = {:?}\npid_file = {:?}",
            at("secret"),
            at("initial-admin-password"),
            at("spool"),
            at("files"),
            at("onceform.pid")
        );
        let text = format!("[database]\nurl = {:?}\n\n{server}\n\n{extra}\n\n{forms}", self.url);
        let path = self.dir.join(format!("onceform-{}.toml", uuid::Uuid::new_v4().simple()));
        std::fs::write(&path, text).unwrap();
        let parsed = onceform::services::check_config::load(Some(&path), |_| None).unwrap();
        (path, parsed)
    }
}

/// The forms of the default configuration (its `contact` form), as TOML.
pub fn default_forms() -> &'static str {
    &DEFAULT_CONFIG[DEFAULT_CONFIG.find("[forms.contact]").unwrap()..]
}

/// The benchmarks' scratch directories' parent, marked as a top of directory hierarchies
/// (`chattr +T`) where the filesystem knows the flag (ext4): ext4 then places each run's
/// directory in a block group of its own instead of beside its parent. Without a journal, ext4
/// skips inodes freed within the last minute when it allocates one (`recently_deleted`), so a
/// run that created its files where the run before had just deleted ~30,000 of its own paid a
/// scan for every file (half the workers' CPU, by perf), which a deployment, that keeps its
/// files, does not pay.
fn scratch_parent() -> std::path::PathBuf {
    let parent = std::env::temp_dir().join("onceform-bench");
    if std::fs::create_dir(&parent).is_ok() {
        let _ = Command::new("chattr").arg("+T").arg(&parent).stderr(Stdio::null()).status();
    }
    parent
}

impl Drop for Db {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
        if let (Some(name), Ok(mut admin)) = (&self.pg_name, onceform::db::establish_pg(&pg_admin())) {
            let _ = admin.batch_execute(&format!("DROP DATABASE IF EXISTS {name} WITH (FORCE)"));
        }
    }
}

/// An `onceform` child process (killed on drop); `first_line` is what it printed first.
pub struct Process {
    pub child: Child,
    pub first_line: String,
}

impl Process {
    pub fn start(args: &[&str], env: &[(&str, &str)]) -> Process {
        Process::start_bin(std::path::Path::new(env!("CARGO_BIN_EXE_onceform")), args, env)
    }

    /// `start` with another build's `onceform` binary (a same-run before/after comparison).
    pub fn start_bin(bin: &std::path::Path, args: &[&str], env: &[(&str, &str)]) -> Process {
        let mut cmd = Command::new(bin);
        cmd.args(args).env("RUST_LOG", "warn").stdout(Stdio::piped());
        for (k, v) in env {
            cmd.env(k, v);
        }
        let mut child = cmd.spawn().unwrap();
        let mut out = BufReader::new(child.stdout.take().unwrap());
        let mut first_line = String::new();
        out.read_line(&mut first_line).unwrap();
        std::thread::spawn(move || std::io::copy(&mut out, &mut std::io::sink()));
        Process { child, first_line }
    }

    /// The address a `serve` process printed.
    pub fn address(&self) -> String {
        self.first_line.trim().rsplit(' ').next().unwrap().to_string()
    }

    /// CPU time used so far (user + system, every thread), in seconds (Linux `/proc/PID/stat`).
    pub fn cpu_seconds(&self) -> f64 {
        cpu_seconds(self.child.id())
    }

    /// Peak resident set size so far, in MiB (Linux `VmHWM`).
    pub fn peak_rss_mib(&self) -> f64 {
        self.status_mib("VmHWM:")
    }

    /// Resident set size now, in MiB (Linux `VmRSS`).
    pub fn rss_mib(&self) -> f64 {
        self.status_mib("VmRSS:")
    }

    fn status_mib(&self, key: &str) -> f64 {
        let status = std::fs::read_to_string(format!("/proc/{}/status", self.child.id())).unwrap_or_default();
        status
            .lines()
            .find_map(|l| l.strip_prefix(key))
            .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<f64>().ok())
            .map_or(0.0, |kb| kb / 1024.0)
    }
}

impl Drop for Process {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// User + system CPU seconds of process `pid` so far (0 when unreadable).
pub fn cpu_seconds(pid: u32) -> f64 {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
    // Fields after the command name (which may hold spaces): state is the first, utime the 12th.
    let rest = stat.rsplit_once(')').map_or("", |(_, r)| r);
    let fields: Vec<&str> = rest.split_whitespace().collect();
    let ticks = |i: usize| fields.get(i).and_then(|v| v.parse::<f64>().ok()).unwrap_or(0.0);
    // /proc counts in USER_HZ, 100 on Linux whatever the kernel's own tick rate.
    (ticks(11) + ticks(12)) / 100.0
}

/// A valid contact inquiry as field pairs, from its own visitor.
pub fn inquiry(message: &str) -> Vec<(String, String)> {
    let email = format!("{}@example.com", uuid::Uuid::new_v4().simple());
    [("name", "Bench Mark"), ("email", email.as_str()), ("topic", "Sales"), ("message", message)]
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

/// The keyring a bench's server loads from `config` (`ONCEFORM_SECRET`, else its secret
/// file): what an in-process acceptor beside that server digests with.
pub fn keyring(config: &Config) -> std::sync::Arc<onceform::domain::keyring::Keyring> {
    let env = |name: &str| std::env::var(name).ok();
    let keyring = onceform::domain::keyring::Keyring::load(
        &config.server.secret_file,
        env("ONCEFORM_SECRET").as_deref(),
        env("ONCEFORM_SECRET_PREVIOUS").as_deref(),
    );
    std::sync::Arc::new(keyring.unwrap())
}

/// Accepts `n` submissions through the accept transaction.
pub fn seed(pool: &Pool, config: &Config, n: usize) {
    let form = onceform::config::Form::new("contact", config.form("contact").unwrap().clone());
    let acceptor =
        Acceptor::one_transaction_each(config.clone().into(), pool.clone(), keyring(config)).unwrap();
    for i in 0..n {
        let fields = normalise(&*form, &inquiry(&format!("Inquiry {i}"))).unwrap();
        let intake = Intake {
            form: form.clone(),
            operation_id: Some(OperationId::generate()),
            channel: Channel::Api,
            fields,
            scans: Default::default(),
            received: None,
            test: false,
        };
        acceptor.accept(intake).unwrap();
    }
}

/// Effect records of form submissions (inbound webhook handlers' `hook:…` records left out).
pub fn form_effects(stats: &onceform::db::Stats) -> i64 {
    stats.effects.iter().filter(|(kind, _, _)| !kind.starts_with("hook:")).map(|(_, _, n)| n).sum()
}

/// The `q` quantile (0..=1) of sorted microsecond samples, in milliseconds.
pub fn quantile_ms(sorted: &[u64], q: f64) -> f64 {
    if sorted.is_empty() {
        return 0.0;
    }
    let i = ((sorted.len() - 1) as f64 * q).round() as usize;
    sorted[i] as f64 / 1000.0
}
