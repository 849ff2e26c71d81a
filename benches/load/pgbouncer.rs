//! Scale-out through a pooler (`--pgbouncer`): pgbouncer in transaction pooling mode in
//! front of one PostgreSQL database, four `serve` and two `worker` processes connected
//! through it with prepared statements off (`[database] prepared_statements = false`).
//! Accept traffic goes round robin to the four; then the workers drain every effect to an
//! instant loopback CRM and mail files, and the consistency check must hold: one submission
//! per operation accepted, three effect records each, all SENT, each lead created once.
//! Skipped when pgbouncer is not installed (`apt-get install pgbouncer`).

use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use onceform::config::DEFAULT_CONFIG;
use onceform::db::{DbError, Pool, Store};
use onceform::with_conn;

use crate::common::drain::InstantCrm;
use crate::common::{Db, Process};
use crate::traffic::{self, Scenario};
use crate::Options;

struct Bouncer(Child);

impl Drop for Bouncer {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port()
}

pub fn run(rt: &tokio::runtime::Runtime, opts: &Options) {
    if Command::new("pgbouncer").arg("--version").output().is_err() {
        println!("\npgbouncer is not installed: its run is skipped\n");
        return;
    }
    let db = Db::new("postgres");
    let name = db.url.rsplit('/').next().unwrap().to_string();
    let port = free_port();
    // Debian's pgbouncer refuses to run as root; it then runs as `postgres` (-u).
    let scratch = std::env::temp_dir().join(format!("onceform-pgbouncer-{port}"));
    std::fs::create_dir_all(&scratch).unwrap();
    let ini = scratch.join("pgbouncer.ini");
    std::fs::write(
        &ini,
        format!(
            "[databases]\n{name} = host=127.0.0.1 port=5432 dbname={name} user=postgres \
             connect_query='SET lock_timeout = 2000'\n\n\
             [pgbouncer]\nlisten_addr = 127.0.0.1\nlisten_port = {port}\nunix_socket_dir =\n\
             auth_type = any\npool_mode = transaction\nmax_client_conn = 500\ndefault_pool_size = 20\n\
             ignore_startup_parameters = extra_float_digits,options\n"
        ),
    )
    .unwrap();
    let mut cmd = Command::new("pgbouncer");
    if is_root() {
        cmd.args(["-u", "postgres"]);
    }
    let _bouncer = Bouncer(cmd.arg(&ini).stdout(Stdio::null()).stderr(Stdio::null()).spawn().unwrap());
    let through = format!("postgres://postgres@127.0.0.1:{port}/{name}");
    wait_for(&through);

    let crm = InstantCrm::start();
    let forms = &DEFAULT_CONFIG[DEFAULT_CONFIG.find("[forms.contact]").unwrap()..];
    let mail = db.dir.join("mail").display().to_string();
    let config = |worker: &str| {
        let text = format!(
            "[database]\nurl = {through:?}\nprepared_statements = false\npool_size = 8\n\n\
             [crm]\nurl = {:?}\n\n[smtp]\nmail_dir = {mail:?}\n\n[worker]\n{worker}\n\n{forms}",
            crm.url
        );
        let path = db.dir.join(format!("onceform-{}.toml", uuid::Uuid::new_v4().simple()));
        std::fs::write(&path, text).unwrap();
        path
    };
    let (serving, working) = (config("enabled = false"), config("concurrency = 64\npoll_ms = 10"));
    let servers: Vec<Process> = (0..4).map(|_| crate::serve(&serving)).collect();
    let working = working.to_str().unwrap();
    let workers: Vec<Process> =
        (0..2).map(|_| Process::start(&["worker", "--config", working], &[])).collect();
    let addrs: Vec<String> = servers.iter().map(Process::address).collect();
    let leads_before = crm.created();

    let tally = rt.block_on(traffic::run(&addrs, Scenario::Accept, 64, opts.seconds.max(5)));
    let burst_end = Instant::now();
    let direct =
        Pool::connect(&onceform::config::DatabaseConfig { url: db.url.clone(), ..Default::default() })
            .unwrap();
    let stats = || with_conn!(&direct, |c| c.stats().map_err(DbError::from)).unwrap();
    let sent = |s: &onceform::db::Stats| {
        s.effects.iter().filter(|e| e.1 == onceform::domain::EffectState::Sent).map(|e| e.2).sum::<i64>()
    };
    let mut s = stats();
    while sent(&s) < s.effects_total() && burst_end.elapsed() < Duration::from_secs(300) {
        std::thread::sleep(Duration::from_millis(200));
        s = stats();
    }
    let drained = burst_end.elapsed().as_secs_f64();
    drop(workers);
    drop(servers);
    let leads = crm.created() - leads_before;
    println!(
        "| postgres | accept via pgbouncer (transaction pooling): 4 serve + 2 worker processes | 64 | {:.0} | \
         {:.2} | {:.2} | every effect SENT {drained:.1} s after the traffic | {} |",
        tally.rate,
        tally.p50_ms,
        tally.p99_ms,
        if sent(&s) == s.effects_total() { "yes" } else { "**no**" }
    );
    let ok = s.submissions == tally.created as i64
        && s.effects_total() == 3 * s.submissions
        && sent(&s) == s.effects_total()
        && leads == tally.created
        && tally.unexpected == 0
        && tally.five_xx == 0;
    println!(
        "\npgbouncer consistency: {} submissions for {} operations accepted, {} effect records, {} SENT, \
         {leads} leads created, {} unexpected answers, {} 5xx: {}\n",
        s.submissions,
        tally.created,
        s.effects_total(),
        sent(&s),
        tally.unexpected,
        tally.five_xx,
        if ok { "OK" } else { "FAILED" }
    );
    assert!(ok, "the pgbouncer run's consistency check failed");
    let _ = std::fs::remove_dir_all(&scratch);
}

fn is_root() -> bool {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines().find_map(|l| l.strip_prefix("Uid:")).map(|u| u.split_whitespace().next() == Some("0"))
        })
        .unwrap_or(false)
}

/// Waits until pgbouncer answers a query.
fn wait_for(url: &str) {
    for _ in 0..100 {
        if let Ok(mut c) = onceform::db::establish_pg(url) {
            if diesel::connection::SimpleConnection::batch_execute(&mut c, "SELECT 1").is_ok() {
                return;
            }
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    panic!("pgbouncer did not come up on {url}");
}
