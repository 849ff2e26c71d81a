//! Start-up: what `serve` and `worker` build before they run, and the store every command
//! that touches data opens first. `serve` builds the state and the listener
//! (`Application::build`) beside the workers and the retention schedule, then runs until
//! SIGINT or SIGTERM; SIGHUP reloads its forms (`services::reload`).

use std::io::Write;
use std::sync::Arc;

use tokio::sync::watch;

use super::worker_reload::{self, Reload, Reloaded};
use super::Application;
use crate::base::secret::{PREVIOUS_SECRET_ENV, SECRET_ENV};
use crate::base::traffic::Traffic;
use crate::config::{Config, ScanMode, Secrets};
use crate::db::{Pool, Writes};
use crate::domain::keyring::Keyring;
use crate::services::accounts;
use crate::services::worker::Worker;

/// What `serve`, `worker` and the data commands do first: load the keyring (the server
/// secret from `ONCEFORM_SECRET` in `secrets`, the environment `cli` read at start, else
/// `server.secret_file`), connect and migrate, and key any stored digests that are not keyed
/// with the current secret yet. The keyring goes to whatever digests personal data (the
/// acceptor, the app state, the lifecycle commands), the secrets beside it to whatever
/// reads one (the effects, the captcha check, the OIDC sign-in, the hooks).
pub fn open_store(config: &Config, secrets: &Secrets) -> anyhow::Result<(Pool, Arc<Keyring>)> {
    let keyring = Arc::new(Keyring::load(
        &config.server.secret_file,
        secrets.get(SECRET_ENV),
        secrets.get(PREVIOUS_SECRET_ENV),
    )?);
    let pool = Pool::connect(&config.database)?;
    let (submissions, conflicts) = crate::services::lifecycle::rekey::rekey(&pool, config, &keyring)
        .map_err(|e| anyhow::anyhow!("keying stored digests: {e}"))?;
    if submissions + conflicts > 0 {
        tracing::info!(submissions, conflicts, "stored digests keyed with the current secret");
    }
    Ok((pool, keyring))
}

/// `onceform serve`: the HTTP server, with the workers (unless `worker.enabled = false`)
/// and the retention schedule beside it, until SIGINT or SIGTERM. SIGHUP re-reads `source`
/// (the configuration file; `None`: the built-in demo) and puts its forms in force.
pub fn serve(
    config: Config,
    source: Option<std::path::PathBuf>,
    secrets: Arc<Secrets>,
) -> anyhow::Result<()> {
    if let Some(warning) = crate::config::open_metrics_warning(&config) {
        tracing::warn!("{warning}");
    }
    let (pool, keyring) = open_store(&config, &secrets)?;
    let config = Arc::new(with_admin_forms(&pool, config, &secrets)?);
    let (stop, stopped) = watch::channel(false);
    let traffic = Traffic::default();
    let workers = match config.worker.enabled {
        true => {
            let reloads = (source.clone(), pool.clone(), keyring.clone(), secrets.clone());
            Some(spawn_worker(&config, reloads, traffic.clone(), stopped)?)
        }
        false => None,
    };
    let password_file = std::path::PathBuf::from(&config.server.initial_password_file);
    let first_admin = accounts::bootstrap(&pool, &password_file)?;
    // On SQLite the retention pass's batches queue on the accepts' writer (no race for the lock).
    let writes = Writes::shared(&pool, &config.database)?;
    let purging = crate::services::lifecycle::schedule::spawn(&config, writes.clone(), stop.subscribe());
    let pid_file = config.server.pid_file.clone();
    let served = actix_web::rt::System::new().block_on(async move {
        if config.forms.values().any(|f| f.scan == ScanMode::Clamd) {
            let files = crate::services::files::Files::of(&config.server, &config.database);
            let period = std::time::Duration::from_secs(30);
            actix_web::rt::spawn(crate::services::files::rescan_every(writes, files, period));
        }
        let hangups = crate::services::reload::catch_hangups()?;
        let from = crate::services::reload::ConfigSource::of(source.clone());
        let app = Application::build_with(config.clone(), from, pool.clone(), (keyring, secrets), traffic)?;
        actix_web::rt::spawn(crate::services::reload::on_hangup(hangups, source, app.forms(), pool));
        write_pid_file(&config.server.pid_file);
        let base = format!("http://{}", std::net::SocketAddr::new(config.server.bind.ip(), app.port()));
        announce(&config, &base, first_admin.as_deref());
        tracing::info!(database = config.database.url.backend(), "serving");
        app.run().await.map_err(anyhow::Error::from)
    });
    // The HTTP server has stopped (SIGINT/SIGTERM): no process to reload any more; let the
    // workers finish their pass.
    let _ = std::fs::remove_file(&pid_file);
    let _ = stop.send(true);
    if let Some(handle) = workers {
        let _ = handle.join();
    }
    if let Some(handle) = purging {
        let _ = handle.join();
    }
    served
}

/// Writes this process's ID to `path` (where `onceform reload` finds whom to signal).
fn write_pid_file(path: &str) {
    let write = std::path::Path::new(path)
        .parent()
        .map_or(Ok(()), std::fs::create_dir_all)
        .and_then(|()| std::fs::write(path, format!("{}\n", std::process::id())));
    if let Err(error) = write {
        tracing::warn!(%error, path, "the process ID could not be written: `onceform reload` cannot find it");
    }
}

/// Where the server listens, the first form, and where a first admin's password was written.
fn announce(config: &Config, base: &str, first_admin: Option<&std::path::Path>) {
    // Not println!: a closed stdout must not take the server down.
    let mut out = std::io::stdout();
    let _ = writeln!(out, "onceform listening on {base}");
    if let Some(form) = config.forms.keys().next() {
        let _ = writeln!(out, "open {base}/f/{form} for the {form} form, {base}/admin for the admin");
    }
    if let Some(path) = first_admin {
        let _ = writeln!(
            out,
            "no admin account existed: created admin@localhost; its password is in {} (readable by \
             this user only); the first sign-in asks for a new one",
            path.display()
        );
    }
    let _ = out.flush();
}

/// `onceform worker`: the workers alone, until SIGINT or SIGTERM. SIGHUP re-reads `source`
/// (`None`: the built-in demo) and puts its effect settings in force (`worker_reload`).
pub fn worker(
    config: Config,
    source: Option<std::path::PathBuf>,
    secrets: Arc<Secrets>,
) -> anyhow::Result<()> {
    // The keyring re-keys stored rows at start, and signs the file links a CRM gets.
    let (pool, keyring) = open_store(&config, &secrets)?;
    // The admin-defined forms, and its forms' versions, as `serve` stores them
    // (`Application::build`).
    let config = Arc::new(with_admin_forms(&pool, config, &secrets)?);
    let (rt, worker) = worker_runtime(&config, &pool, (&keyring, &secrets), None)?;
    let worker = Arc::new(worker);
    let pid_file = config.worker.pid_file.clone();
    let reload = Reload::new(source, worker.clone(), pool, keyring, (config.clone(), secrets));
    let ran = rt.block_on(async {
        let (stop, stopped) = watch::channel(false);
        tokio::spawn(async move {
            shutdown_signal().await;
            let _ = stop.send(true);
        });
        tokio::spawn(worker_reload::on_hangup(worker_reload::catch_hangups()?, reload.clone(), say_reloaded));
        tokio::spawn(worker_reload::follow_admin_forms(reload));
        write_pid_file(&pid_file);
        let mut out = std::io::stdout();
        let _ = writeln!(out, "onceform worker {} running", worker.owner());
        let _ = out.flush();
        worker.run(stopped).await;
        anyhow::Ok(())
    });
    let _ = std::fs::remove_file(&pid_file);
    ran
}

/// One line on standard output per reload of `onceform worker` (as it says it runs).
fn say_reloaded(reloaded: &Reloaded) {
    let mut out = std::io::stdout();
    let _ = match reloaded {
        Reloaded::InForce => writeln!(out, "onceform worker reloaded its settings"),
        Reloaded::Refused(error, refused) => {
            writeln!(out, "onceform worker kept its settings ({refused} reload(s) refused so far): {error}")
        }
    };
    let _ = out.flush();
}

/// A runtime for the workers, and the workers built inside it (the SMTP pool needs one);
/// beside `serve`'s requests (`traffic`) its threads yield the CPU to the requests', and the
/// worker paces itself while they last (`Worker::beside`).
fn worker_runtime(
    config: &Arc<Config>,
    pool: &Pool,
    (keyring, secrets): (&Arc<Keyring>, &Secrets),
    traffic: Option<Traffic>,
) -> anyhow::Result<(tokio::runtime::Runtime, Worker)> {
    let mut builder = tokio::runtime::Builder::new_multi_thread();
    if traffic.is_some() {
        builder.on_thread_start(yield_to_requests);
    }
    let rt = builder.thread_name(WORKER_THREAD).worker_threads(2).enable_all().build()?;
    let registry = {
        let _entered = rt.enter();
        super::registry_with(config.clone(), keyring.clone(), secrets)?
    };
    // SQLite: the transactions go through this process's group-commit writer, shared with
    // `serve`'s acceptor, so that a burst of accepts does not starve the workers.
    let writes = Writes::shared(pool, &config.database)?;
    let worker = Worker::new(writes, registry, config.worker.clone());
    Ok((
        rt,
        match traffic {
            Some(traffic) => worker.beside(traffic),
            None => worker,
        },
    ))
}

/// `config` with the admin-defined forms merged in (`services::admin_forms`), the versions
/// of the forms in force stored before any submission is accepted or delivered under them.
fn with_admin_forms(pool: &Pool, config: Config, secrets: &Secrets) -> anyhow::Result<Config> {
    crate::services::admin_forms::merge_stored(pool, config, secrets)
        .map_err(|e| anyhow::anyhow!("merging the admin-defined forms, storing the forms' versions: {e}"))
}

/// The workers of `serve` run on their own thread and runtime, apart from the HTTP workers.
/// SIGHUP puts the effect settings of `source` (re-read) in force for them, as for
/// `onceform worker` (`worker_reload`).
fn spawn_worker(
    config: &Arc<Config>,
    (source, pool, keyring, secrets): (Option<std::path::PathBuf>, Pool, Arc<Keyring>, Arc<Secrets>),
    traffic: Traffic,
    stopped: watch::Receiver<bool>,
) -> anyhow::Result<std::thread::JoinHandle<()>> {
    let (rt, worker) = worker_runtime(config, &pool, (&keyring, &secrets), Some(traffic))?;
    let worker = Arc::new(worker);
    let reload = Reload::new(source, worker.clone(), pool, keyring, (config.clone(), secrets));
    let hangups = {
        let _entered = rt.enter();
        worker_reload::catch_hangups()?
    };
    let thread = std::thread::Builder::new().name(WORKER_THREAD.into());
    Ok(thread.spawn(move || {
        yield_to_requests();
        rt.spawn(worker_reload::on_hangup(hangups, reload.clone(), |_| {}));
        rt.spawn(worker_reload::follow_admin_forms(reload));
        rt.block_on(worker.run(stopped))
    })?)
}

/// The name of the workers' threads (`/proc/PID/task/*/comm`).
const WORKER_THREAD: &str = "effect-worker";

/// The nice value of `serve`'s worker threads: under a full CPU the scheduler gives a thread
/// at 10 about a tenth of the share of one at 0, and all of an idle CPU.
const WORKER_NICE: libc::c_int = 10;

/// Lowers the calling thread's CPU priority (on Linux nice is per thread), so that the
/// workers inside `serve` deliver with what the requests leave of the CPU: under a burst the
/// accepts keep their pace and the effects wait (they are stored; the burst benchmark times
/// their delivery), and an idle server delivers at full speed. `onceform worker` is not
/// lowered. The database's own processes and SQLite's writer thread are not lowered either.
fn yield_to_requests() {
    #[cfg(target_os = "linux")]
    // SAFETY: setpriority takes plain integers and changes only this thread's nice value.
    unsafe {
        libc::setpriority(libc::PRIO_PROCESS, 0, WORKER_NICE);
    }
}

async fn shutdown_signal() {
    let term = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut s) => {
                s.recv().await;
            }
            Err(_) => std::future::pending::<()>().await,
        }
    };
    tokio::select! {
        _ = tokio::signal::ctrl_c() => {}
        _ = term => {}
    }
}
