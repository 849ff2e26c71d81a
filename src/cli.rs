//! The command line: `serve` (default), `migrate`, `check-config`.

use std::io::Write;
use std::path::PathBuf;
use std::sync::Arc;

use tokio::sync::watch;

use crate::admin::account_changes;
use crate::admin::accounts::{self, Role};
use crate::app::Application;
use crate::config::Config;
use crate::db::{Pool, Writes};
use crate::worker::Worker;

pub const USAGE: &str =
    "usage: onceform [--config PATH] [serve | worker | migrate | check-config | alert-rules | admin ...
                  | purge | erase ... | import ... | duplicates rescreen ...]

  serve         HTTP server and side-effect workers (the default)
  worker        side-effect workers only
  admin create-user --email E [--role admin|viewer] [--password-env VAR]
                an admin account; the password is read from stdin unless VAR names it
  admin set-password --email E [--password-env VAR]
                a new password (stdin unless VAR names it); ends all of E's sessions
  admin disable-user --email E
                no more sign-ins for E; ends all of E's sessions
  migrate       apply pending database migrations and exit
  check-config  validate the configuration and exit
  alert-rules   print the Prometheus alert rules with [alerts] owner and runbook_url
  --version     print the version
  purge         run retention once, print what it purged
  erase --email E | --phone P [--dry-run]
                erase one person's content now; lists the references that left
  import --form F FILE.csv [--source NAME] [--encoding big5|gb18030] [--dry-run] [--with-effects]
                bring in historic submissions
  duplicates rescreen [--form F] [--since DATE]
                screen stored submissions again with the current rules; keeps admin decisions

  --config PATH  configuration file (or ONCEFORM_CONFIG); without one, a demo `contact`
                 form on SQLite at ./data/onceform.db
Environment: ONCEFORM_DATABASE_URL, ONCEFORM_BIND, ONCEFORM_SMTP_URL, ONCEFORM_CRM_URL,
             ONCEFORM_RATE_LIMIT=off, ONCEFORM_TRUSTED_PROXIES=10.0.0.1,10.1.0.0/16, RUST_LOG,
             ONCEFORM_LOG_FORMAT=json";

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Command {
    Serve,
    Worker,
    Migrate,
    CheckConfig,
    AlertRules,
    CreateUser { email: String, role: Role, password_env: Option<String> },
    SetPassword { email: String, password_env: Option<String> },
    DisableUser { email: String },
    Lifecycle(crate::lifecycle::commands::LifecycleCommand),
    Rescreen(crate::duplicates::rescreen::RescreenArgs),
    Help,
    Version,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Args {
    pub command: Command,
    pub config: Option<PathBuf>,
}

/// A failure and the exit code it ends the process with.
#[derive(Debug)]
pub struct Exit {
    pub code: i32,
    pub message: String,
}

impl Exit {
    fn usage(message: String) -> Exit {
        Exit { code: 2, message: format!("{message} (see `onceform --help`)") }
    }

    fn failure(e: impl std::fmt::Display) -> Exit {
        Exit { code: 1, message: e.to_string() }
    }
}

/// Parses the arguments after the program name.
pub fn parse(args: impl IntoIterator<Item = String>) -> Result<Args, Exit> {
    let mut command = None;
    let mut config = None;
    let mut args = args.into_iter();
    while let Some(arg) = args.next() {
        let set = |slot: &mut Option<Command>, c: Command| match slot.replace(c) {
            Some(_) => Err(Exit::usage(format!("unexpected argument `{arg}`"))),
            None => Ok(()),
        };
        match arg.as_str() {
            "-h" | "--help" | "help" => set(&mut command, Command::Help)?,
            "-V" | "--version" => set(&mut command, Command::Version)?,
            "serve" => set(&mut command, Command::Serve)?,
            "worker" => set(&mut command, Command::Worker)?,
            "migrate" => set(&mut command, Command::Migrate)?,
            "check-config" => set(&mut command, Command::CheckConfig)?,
            "alert-rules" => set(&mut command, Command::AlertRules)?,
            "admin" => {
                let c = parse_admin(&mut args)?;
                set(&mut command, c)?
            }
            "purge" | "erase" | "import" => {
                let c = crate::lifecycle::commands::parse(&arg, &mut args).map_err(Exit::usage)?;
                set(&mut command, Command::Lifecycle(c))?
            }
            "duplicates" => {
                let c = crate::duplicates::rescreen::parse_args(&mut args).map_err(Exit::usage)?;
                set(&mut command, Command::Rescreen(c))?
            }
            "--config" => match args.next() {
                Some(path) => config = Some(PathBuf::from(path)),
                None => return Err(Exit::usage("--config needs a path".into())),
            },
            a if a.starts_with("--config=") => config = Some(PathBuf::from(&a["--config=".len()..])),
            a if a.starts_with('-') => return Err(Exit::usage(format!("unknown flag `{a}`"))),
            a => return Err(Exit::usage(format!("unknown command `{a}`"))),
        }
    }
    let config = config.or_else(|| std::env::var_os("ONCEFORM_CONFIG").map(PathBuf::from));
    Ok(Args { command: command.unwrap_or(Command::Serve), config })
}

/// `admin create-user --email E [--role R] [--password-env VAR]`,
/// `admin set-password --email E [--password-env VAR]`, `admin disable-user --email E`.
fn parse_admin(args: &mut impl Iterator<Item = String>) -> Result<Command, Exit> {
    let sub = args.next().unwrap_or_default();
    let flags: &[&str] = match sub.as_str() {
        "create-user" => &["--email", "--role", "--password-env"],
        "set-password" => &["--email", "--password-env"],
        "disable-user" => &["--email"],
        other => return Err(Exit::usage(format!("unknown admin command `{other}`"))),
    };
    let (mut email, mut role, mut password_env) = (None, Role::Admin, None);
    while let Some(flag) = args.next() {
        if !flags.contains(&flag.as_str()) {
            return Err(Exit::usage(format!("unknown flag `{flag}` for admin {sub}")));
        }
        let value = args.next().ok_or_else(|| Exit::usage(format!("{flag} needs a value")))?;
        match flag.as_str() {
            "--email" => email = Some(value),
            "--role" => {
                role = Role::parse(&value).ok_or_else(|| Exit::usage(format!("unknown role `{value}`")))?
            }
            _ => password_env = Some(value),
        }
    }
    let email = email.ok_or_else(|| Exit::usage(format!("admin {sub} needs --email")))?;
    Ok(match sub.as_str() {
        "create-user" => Command::CreateUser { email, role, password_env },
        "set-password" => Command::SetPassword { email, password_env },
        _ => Command::DisableUser { email },
    })
}

/// The password from `$VAR`, else one line of stdin.
fn read_password(password_env: Option<&str>) -> Result<String, Exit> {
    match password_env {
        Some(var) => std::env::var(var).map_err(|_| Exit::failure(format!("{var} is not set"))),
        None => {
            let mut line = String::new();
            std::io::stdin().read_line(&mut line).map_err(Exit::failure)?;
            Ok(line.trim_end_matches(['\r', '\n']).to_string())
        }
    }
}

/// Runs a parsed command to completion.
pub fn run(args: Args) -> Result<(), Exit> {
    match args.command {
        Command::Help => {
            println!("{USAGE}");
            Ok(())
        }
        Command::Version => {
            println!("onceform {}", env!("CARGO_PKG_VERSION"));
            Ok(())
        }
        Command::CheckConfig => {
            let config = load(&args)?;
            for warning in crate::check::warnings(&config) {
                eprintln!("warning: {warning}");
            }
            let names: Vec<&str> = config.forms.keys().map(String::as_str).collect();
            println!("configuration OK: {} form(s): {}", names.len(), names.join(", "));
            Ok(())
        }
        Command::AlertRules => {
            print!("{}", crate::alert_rules::render(&load(&args)?.alerts));
            Ok(())
        }
        Command::Migrate => {
            let config = load(&args)?;
            let url = crate::db::migrate(&config.database).map_err(Exit::failure)?;
            println!("migrations applied ({})", url.backend());
            Ok(())
        }
        Command::CreateUser { ref email, role, ref password_env } => {
            let config = load(&args)?;
            let password = read_password(password_env.as_deref())?;
            let pool = Pool::connect(&config.database).map_err(Exit::failure)?;
            accounts::create_user(&pool, email, &password, role).map_err(Exit::failure)?;
            println!("created {} user {}", role.as_str(), email.trim().to_lowercase());
            Ok(())
        }
        Command::SetPassword { ref email, ref password_env } => {
            let config = load(&args)?;
            let password = read_password(password_env.as_deref())?;
            let pool = Pool::connect(&config.database).map_err(Exit::failure)?;
            let target = account_changes::Target::Email(email);
            let done =
                account_changes::set_password(&pool, target, &password, &account_changes::Actor::CommandLine)
                    .map_err(Exit::failure)?;
            println!("password set for {}; {} session(s) ended", done.email, done.sessions_ended);
            Ok(())
        }
        Command::DisableUser { ref email } => {
            let config = load(&args)?;
            let pool = Pool::connect(&config.database).map_err(Exit::failure)?;
            let target = account_changes::Target::Email(email);
            let done = account_changes::disable_user(&pool, target, &account_changes::Actor::CommandLine)
                .map_err(Exit::failure)?;
            println!("disabled {}; {} session(s) ended", done.email, done.sessions_ended);
            Ok(())
        }
        Command::Lifecycle(ref c) => crate::lifecycle::commands::run(c, &load(&args)?).map_err(Exit::failure),
        Command::Rescreen(ref r) => {
            let config = load(&args)?;
            let pool = crate::lifecycle::connect(&config).map_err(Exit::failure)?;
            let report = crate::duplicates::rescreen::rescreen(&config, &pool, r.form.as_deref(), r.since)
                .map_err(Exit::failure)?;
            println!("{report}");
            Ok(())
        }
        Command::Serve => serve(load(&args)?),
        Command::Worker => worker(load(&args)?),
    }
}

fn load(args: &Args) -> Result<Config, Exit> {
    crate::check::load(args.config.as_deref(), |k| std::env::var(k).ok()).map_err(Exit::failure)
}

fn serve(config: Config) -> Result<(), Exit> {
    let pool = crate::lifecycle::connect(&config).map_err(Exit::failure)?;
    let config = Arc::new(config);
    let (stop, stopped) = watch::channel(false);
    let workers = match config.worker.enabled {
        true => Some(spawn_worker(&config, &pool, stopped)?),
        false => None,
    };
    let password_file = std::path::PathBuf::from(&config.server.initial_password_file);
    let first_admin = accounts::bootstrap(&pool, &password_file).map_err(Exit::failure)?;
    // On SQLite the retention pass's batches queue on the accepts' writer (no race for the lock).
    let writes = Writes::shared(&pool, &config.database).map_err(Exit::failure)?;
    let purging = crate::lifecycle::schedule::spawn(&config, writes, stop.subscribe());
    let served = actix_web::rt::System::new().block_on(async move {
        let app = Application::build(config.clone(), pool).map_err(Exit::failure)?;
        let base = format!("http://{}", std::net::SocketAddr::new(config.server.bind.ip(), app.port()));
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
        tracing::info!(database = %pool_label(&config), "serving");
        app.run().await.map_err(Exit::failure)
    });
    // The HTTP server has stopped (SIGINT/SIGTERM): let the workers finish their pass.
    let _ = stop.send(true);
    if let Some(handle) = workers {
        let _ = handle.join();
    }
    if let Some(handle) = purging {
        let _ = handle.join();
    }
    served
}

/// A runtime for the workers, and the workers built inside it (the SMTP pool needs one).
fn worker_runtime(config: &Arc<Config>, pool: &Pool) -> Result<(tokio::runtime::Runtime, Worker), Exit> {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .map_err(Exit::failure)?;
    let registry = {
        let _entered = rt.enter();
        crate::app::registry(config.clone()).map_err(Exit::failure)?
    };
    // SQLite: the transactions go through this process's group-commit writer, shared with
    // `serve`'s acceptor, so that a burst of accepts does not starve the workers.
    let writes = Writes::shared(pool, &config.database).map_err(Exit::failure)?;
    Ok((rt, Worker::new(writes, registry, config.worker.clone())))
}

/// The workers of `serve` run on their own thread and runtime, apart from the HTTP workers.
fn spawn_worker(
    config: &Arc<Config>,
    pool: &Pool,
    stopped: watch::Receiver<bool>,
) -> Result<std::thread::JoinHandle<()>, Exit> {
    let (rt, worker) = worker_runtime(config, pool)?;
    Ok(std::thread::spawn(move || rt.block_on(worker.run(stopped))))
}

/// `onceform worker`: the workers alone, until SIGINT or SIGTERM.
fn worker(config: Config) -> Result<(), Exit> {
    let pool = crate::lifecycle::connect(&config).map_err(Exit::failure)?;
    let (rt, worker) = worker_runtime(&Arc::new(config), &pool)?;
    rt.block_on(async move {
        let (stop, stopped) = watch::channel(false);
        tokio::spawn(async move {
            shutdown_signal().await;
            let _ = stop.send(true);
        });
        let mut out = std::io::stdout();
        let _ = writeln!(out, "onceform worker {} running", worker.owner());
        let _ = out.flush();
        worker.run(stopped).await;
    });
    Ok(())
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

/// The database in logs: the backend only, never the URL (it may hold a password).
fn pool_label(config: &Config) -> &'static str {
    config.database.url.backend()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p(args: &[&str]) -> Result<Args, Exit> {
        parse(args.iter().map(|s| s.to_string()))
    }

    #[test]
    fn serve_is_the_default() {
        assert_eq!(p(&[]).unwrap().command, Command::Serve);
        let a = p(&["--config", "x.toml", "check-config"]).unwrap();
        assert_eq!((a.command, a.config), (Command::CheckConfig, Some(PathBuf::from("x.toml"))));
        assert_eq!(p(&["migrate", "--config=y.toml"]).unwrap().config, Some(PathBuf::from("y.toml")));
    }

    #[test]
    fn bad_flags_are_usage_errors() {
        for bad in [&["--bogus"][..], &["frobnicate"], &["--config"], &["serve", "migrate"]] {
            let e = p(bad).unwrap_err();
            assert_eq!(e.code, 2, "{bad:?}");
            assert!(!e.message.contains('\n'));
        }
    }
}
