//! The command line (parsed by `clap`): `serve` (the default), `worker`, `migrate`,
//! `check-config`, `alert-rules`, `admin …`, `purge`, `erase`, `import`, `duplicates rescreen`,
//! `api-token …`, `healthcheck`, `backup`, `restore`.
//! Each command loads the configuration and hands over to its use case; `serve` and
//! `worker` are wired in `app::startup`.

use std::path::PathBuf;
use std::sync::Arc;

use chrono::NaiveDateTime;
use clap::{Parser, Subcommand};

use crate::app::startup;
use crate::config::{Config, FileStoreKind, Secrets, ENVIRONMENT};
use crate::db::probe::Probe;
use crate::db::Pool;
use crate::domain::Scopes;
use crate::services::accounts::changes as account_changes;
use crate::services::accounts::{self, Role};
use crate::services::lifecycle::commands::LifecycleCommand;

/// What `--help` adds below the commands: the environment the process reads
/// (`config::ENVIRONMENT`), each meaning beside its name, wrapped at 100 columns.
fn environment_help() -> String {
    const WIDTH: usize = 100;
    let indent = ENVIRONMENT.iter().map(|(name, _)| name.len()).max().unwrap_or(0) + 4;
    let mut text = String::from("Environment (docs/CONFIGURATION.md has every setting):");
    for (name, meaning) in ENVIRONMENT {
        text.push_str(&format!("\n  {name:<0$}", indent - 2));
        let mut column = indent;
        for (i, word) in meaning.split(' ').enumerate() {
            let width = word.chars().count();
            if i > 0 && column + 1 + width > WIDTH {
                text.push_str(&format!("\n{:indent$}", ""));
                column = indent;
            } else if i > 0 {
                text.push(' ');
                column += 1;
            }
            text.push_str(word);
            column += width;
        }
    }
    text
}

#[derive(Debug, Parser)]
#[command(
    name = "onceform",
    version,
    about = "Self-hosted form-submission backend: each logical submission takes effect exactly once.",
    after_help = environment_help()
)]
struct Cli {
    /// The configuration file (or ONCEFORM_CONFIG); without one, a demo `contact` form on
    /// SQLite at ./data/onceform.db.
    #[arg(long, value_name = "PATH", global = true)]
    config: Option<PathBuf>,
    #[command(subcommand)]
    command: Option<Command>,
}

#[derive(Debug, Clone, PartialEq, Eq, Subcommand)]
pub enum Command {
    /// HTTP server and side-effect workers (the default).
    Serve,
    /// Side-effect workers only.
    Worker,
    /// Apply pending database migrations and exit.
    Migrate,
    /// Check the configuration, then have the running `serve` and `worker` put it in force
    /// (SIGHUP to the processes in [server] pid_file and [worker] pid_file); a bad file
    /// changes nothing.
    Reload,
    /// Validate the configuration and exit.
    CheckConfig {
        /// Also connect to the database (with a deadline) and report whether it answers.
        #[arg(long)]
        connect: bool,
    },
    /// Print the Prometheus alert rules with [alerts] owner and runbook_url.
    AlertRules,
    /// Admin accounts.
    #[command(subcommand, arg_required_else_help = false)]
    Admin(AdminCommand),
    /// Run retention once, print what it purged.
    Purge,
    /// Erase one person's content now; lists the references that left.
    #[command(group = clap::ArgGroup::new("person").required(true).args(["email", "phone"]))]
    Erase {
        #[arg(long, value_name = "E")]
        email: Option<String>,
        #[arg(long, value_name = "P")]
        phone: Option<String>,
        /// List what would be erased, erase nothing.
        #[arg(long)]
        dry_run: bool,
    },
    /// Bring in historic submissions from a CSV file.
    Import {
        #[arg(long, value_name = "F")]
        form: String,
        #[arg(value_name = "FILE.csv")]
        file: PathBuf,
        /// Where the rows came from (shown in the admin).
        #[arg(long, value_name = "NAME", default_value = "import")]
        source: String,
        /// The file's encoding when it is not UTF-8 or UTF-16 with a BOM.
        #[arg(long, value_name = "big5|gb18030", value_parser = encoding)]
        encoding: Option<String>,
        #[arg(long)]
        dry_run: bool,
        /// Create the form's side effects for the imported rows too.
        #[arg(long)]
        with_effects: bool,
    },
    /// Duplicate detection.
    #[command(subcommand, arg_required_else_help = false)]
    Duplicates(DuplicatesCommand),
    /// The store of attached files.
    #[command(subcommand, arg_required_else_help = false)]
    Files(FilesCommand),
    /// Tokens of the read API (/api/v1).
    #[command(subcommand, arg_required_else_help = false)]
    ApiToken(ApiTokenCommand),
    /// Ask the running server whether it is up (exit 0) or not (exit 1); for a container's
    /// HEALTHCHECK.
    Healthcheck {
        /// Ask /readyz (a submission could be stored now) instead of /healthz.
        #[arg(long)]
        ready: bool,
        /// The server's address, http://HOST:PORT (default: server.bind, on loopback when it
        /// is 0.0.0.0 or ::).
        #[arg(long, value_name = "URL")]
        url: Option<String>,
    },
    /// Copy the database (SQLite; on PostgreSQL: print the pg_dump to run), the files and the
    /// configuration into a new folder, with a manifest of their SHA-256.
    Backup {
        #[arg(long, value_name = "DIR")]
        to: PathBuf,
    },
    /// Bring a backup back, once its manifest and every checksum are verified.
    Restore {
        #[arg(long, value_name = "DIR")]
        from: PathBuf,
        /// Replace a database that holds data.
        #[arg(long)]
        force: bool,
    },
}

#[derive(Debug, Clone, PartialEq, Eq, Subcommand)]
pub enum AdminCommand {
    /// An admin account; the password is read from stdin unless --password-env names it.
    CreateUser {
        #[arg(long, value_name = "E")]
        email: String,
        #[arg(long, value_name = "admin|viewer", default_value = "admin", value_parser = role)]
        role: Role,
        /// The environment variable holding the password.
        #[arg(long, value_name = "VAR")]
        password_env: Option<String>,
    },
    /// A new password (stdin unless --password-env names it); ends all of E's sessions.
    SetPassword {
        #[arg(long, value_name = "E")]
        email: String,
        #[arg(long, value_name = "VAR")]
        password_env: Option<String>,
    },
    /// No more sign-ins for E; ends all of E's sessions.
    DisableUser {
        #[arg(long, value_name = "E")]
        email: String,
    },
}

#[derive(Debug, Clone, PartialEq, Eq, Subcommand)]
pub enum ApiTokenCommand {
    /// A new token; its secret is printed once, and only its SHA-256 is stored.
    Create {
        /// What uses it (shown in the admin and the audit log).
        #[arg(long, value_name = "N")]
        name: String,
        /// read:submissions, read:effects, write:decisions (comma-separated).
        #[arg(long, value_name = "SCOPES", value_parser = scopes)]
        scope: Scopes,
        /// Only this form's records.
        #[arg(long, value_name = "F")]
        form: Option<String>,
        /// Stops working this many days from now (default: until revoked).
        #[arg(long, value_name = "D")]
        expires_days: Option<i64>,
    },
    /// Every token: name, scopes, form, created, expires, last used, revoked.
    List,
    /// Stops the token from now on.
    Revoke {
        #[arg(value_name = "ID")]
        id: String,
    },
}

#[derive(Debug, Clone, PartialEq, Eq, Subcommand)]
pub enum FilesCommand {
    /// Copy every file into the other store (checked against its SHA-256; what is there
    /// already is kept, so it can be run again), then report the counts. Switch
    /// [server] files afterwards.
    Migrate {
        #[arg(long, value_name = "database|folder", value_parser = file_store)]
        to: FileStoreKind,
    },
}

#[derive(Debug, Clone, PartialEq, Eq, Subcommand)]
pub enum DuplicatesCommand {
    /// Screen stored submissions again with the current rules; keeps admin decisions.
    Rescreen {
        #[arg(long, value_name = "F")]
        form: Option<String>,
        /// YYYY-MM-DD (UTC midnight) or RFC 3339.
        #[arg(long, value_name = "DATE", value_parser = since)]
        since: Option<NaiveDateTime>,
    },
}

fn role(v: &str) -> Result<Role, String> {
    Role::parse(v).ok_or_else(|| format!("unknown role `{v}`"))
}

fn file_store(v: &str) -> Result<FileStoreKind, String> {
    FileStoreKind::parse(v).ok_or_else(|| format!("unknown file store `{v}` (database or folder)"))
}

fn scopes(v: &str) -> Result<Scopes, String> {
    Scopes::parse(v)
}

fn encoding(v: &str) -> Result<String, String> {
    crate::services::lifecycle::csv::encoding_named(v).map(|_| v.to_string())
}

fn since(v: &str) -> Result<NaiveDateTime, String> {
    crate::services::duplicates::rescreen::parse_since(v)
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Args {
    pub command: Command,
    pub config: Option<PathBuf>,
}

/// How the process ends when it does not end well, or when it only printed (`--help`).
#[derive(Debug)]
pub struct Exit {
    /// 0: `message` is what was asked for (help, version), for stdout; 2: a usage error;
    /// 1: the command failed.
    pub code: i32,
    pub message: String,
}

impl Exit {
    fn failure(e: impl std::fmt::Display) -> Exit {
        Exit { code: 1, message: e.to_string() }
    }

    /// clap's error in one line (its first lines, before the usage), or its help text.
    fn from_clap(e: clap::Error) -> Exit {
        let text = e.render().to_string();
        if !e.use_stderr() {
            return Exit { code: 0, message: text };
        }
        let lines: Vec<&str> = text
            .lines()
            .take_while(|l| !l.starts_with("Usage:") && !l.starts_with("For more information"))
            .map(str::trim)
            .filter(|l| !l.is_empty())
            .collect();
        let message = lines.join(" ");
        let message = message.strip_prefix("error: ").unwrap_or(&message);
        Exit { code: 2, message: format!("{message} (see `onceform --help`)") }
    }
}

/// Parses the arguments after the program name.
pub fn parse(args: impl IntoIterator<Item = String>) -> Result<Args, Exit> {
    let argv = std::iter::once("onceform".to_string()).chain(args);
    let cli = Cli::try_parse_from(argv).map_err(Exit::from_clap)?;
    let config = cli.config.or_else(|| std::env::var_os("ONCEFORM_CONFIG").map(PathBuf::from));
    Ok(Args { command: cli.command.unwrap_or(Command::Serve), config })
}

/// `files migrate --to TO`: every blob of the other store copied into `TO`.
fn migrate_files(config: &Config, to: FileStoreKind) -> Result<(), Exit> {
    use crate::services::files::{migrate, Files};
    if to == FileStoreKind::Database && matches!(config.database.url, crate::config::DatabaseUrl::Sqlite(_)) {
        return Err(Exit::failure("files can be kept in the database on PostgreSQL only"));
    }
    crate::db::migrate(&config.database).map_err(Exit::failure)?;
    let from = match to {
        FileStoreKind::Database => FileStoreKind::Folder,
        FileStoreKind::Folder => FileStoreKind::Database,
    };
    let source = Files::of_kind(from, &config.server, &config.database);
    let target = Files::of_kind(to, &config.server, &config.database);
    let done = migrate::migrate(source.store(), target.store()).map_err(Exit::failure)?;
    println!("files: {} -> {}", from.as_str(), to.as_str());
    for line in done.lines() {
        println!("{line}");
    }
    match done.ok() {
        true => Ok(()),
        false => Err(Exit::failure("some files were not copied (see above)")),
    }
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
    // The environment, read once: the configuration's overrides and every secret come from it.
    let secrets = Arc::new(Secrets::from_env());
    let config = load(&args, &secrets)?;
    match args.command {
        Command::CheckConfig { connect } => check_config(&config, &secrets, connect),
        Command::AlertRules => {
            print!("{}", crate::services::alert_rules::render(&config.alerts));
            Ok(())
        }
        Command::Migrate => {
            let url = crate::db::migrate(&config.database).map_err(Exit::failure)?;
            println!("migrations applied ({})", url.backend());
            Ok(())
        }
        Command::Admin(admin) => run_admin(admin, &config),
        Command::Purge => run_lifecycle(LifecycleCommand::Purge, &config, &secrets),
        Command::Erase { email, phone, dry_run } => {
            run_lifecycle(LifecycleCommand::Erase { email, phone, dry_run }, &config, &secrets)
        }
        Command::Import { form, file, source, encoding, dry_run, with_effects } => {
            let import = LifecycleCommand::Import { form, file, source, dry_run, with_effects, encoding };
            run_lifecycle(import, &config, &secrets)
        }
        Command::Duplicates(DuplicatesCommand::Rescreen { form, since }) => {
            let (pool, keyring) = startup::open_store(&config, &secrets).map_err(Exit::failure)?;
            let report = crate::services::duplicates::rescreen::rescreen(
                &config,
                &pool,
                &keyring,
                form.as_deref(),
                since,
            )
            .map_err(Exit::failure)?;
            println!("{report}");
            Ok(())
        }
        Command::ApiToken(command) => api_token(command, &config),
        Command::Files(FilesCommand::Migrate { to }) => migrate_files(&config, to),
        Command::Reload => reload(&config),
        Command::Healthcheck { ready, url } => healthcheck(&config, ready, url.as_deref()),
        Command::Backup { to } => {
            let report =
                crate::services::lifecycle::backup::backup(&config, args.config.as_deref(), &to, &secrets);
            print_report(report.map_err(Exit::failure)?)
        }
        Command::Restore { from, force } => {
            let report = crate::services::lifecycle::restore::restore(
                &config,
                args.config.as_deref(),
                &from,
                force,
                &secrets,
            );
            print_report(report.map_err(Exit::failure)?)
        }
        Command::Serve => startup::serve(config, args.config.clone(), secrets).map_err(Exit::failure),
        Command::Worker => startup::worker(config, args.config.clone(), secrets).map_err(Exit::failure),
    }
}

fn print_report(lines: Vec<String>) -> Result<(), Exit> {
    for line in lines {
        println!("{line}");
    }
    Ok(())
}

/// `healthcheck`: one line either way (stdout when it answers 200, else the error).
fn healthcheck(config: &Config, ready: bool, url: Option<&str>) -> Result<(), Exit> {
    use crate::services::healthcheck::{check, Target};
    let target = match url {
        Some(url) => Target::url(url),
        None => Target::bound(config.server.bind),
    };
    let answered = target.and_then(|t| check(&t, ready)).map_err(Exit::failure)?;
    println!("{answered}");
    Ok(())
}

fn run_lifecycle(command: LifecycleCommand, config: &Config, secrets: &Secrets) -> Result<(), Exit> {
    let (pool, keyring) = startup::open_store(config, secrets).map_err(Exit::failure)?;
    crate::services::lifecycle::commands::run(&command, config, &pool, &keyring).map_err(Exit::failure)
}

fn run_admin(command: AdminCommand, config: &Config) -> Result<(), Exit> {
    match command {
        AdminCommand::CreateUser { email, role, password_env } => {
            let password = read_password(password_env.as_deref())?;
            let pool = Pool::connect(&config.database).map_err(Exit::failure)?;
            accounts::create_user(&pool, &email, &password, role).map_err(Exit::failure)?;
            println!("created {} user {}", role.as_str(), email.trim().to_lowercase());
        }
        AdminCommand::SetPassword { email, password_env } => {
            let password = read_password(password_env.as_deref())?;
            let pool = Pool::connect(&config.database).map_err(Exit::failure)?;
            let target = account_changes::Target::Email(&email);
            let done =
                account_changes::set_password(&pool, target, &password, &account_changes::Actor::CommandLine)
                    .map_err(Exit::failure)?;
            println!("password set for {}; {} session(s) ended", done.email, done.sessions_ended);
        }
        AdminCommand::DisableUser { email } => {
            let pool = Pool::connect(&config.database).map_err(Exit::failure)?;
            let target = account_changes::Target::Email(&email);
            let done = account_changes::disable_user(&pool, target, &account_changes::Actor::CommandLine)
                .map_err(Exit::failure)?;
            println!("disabled {}; {} session(s) ended", done.email, done.sessions_ended);
        }
    }
    Ok(())
}

/// `api-token create|list|revoke`, audited as the command line.
fn api_token(command: ApiTokenCommand, config: &Config) -> Result<(), Exit> {
    use crate::base::format::rfc3339;
    use crate::services::read_api::tokens::{self, TokenRequest};
    let pool = Pool::connect(&config.database).map_err(Exit::failure)?;
    let actor = crate::services::audit::Actor { id: "cli".into(), label: "command line".into() };
    let when = |t: Option<NaiveDateTime>| t.map(rfc3339).unwrap_or_else(|| "-".into());
    match command {
        ApiTokenCommand::Create { name, scope, form, expires_days } => {
            let request = TokenRequest { name, scopes: scope, form, expires_days };
            let created = tokens::create(&pool, &request, |f| config.forms.contains_key(f), &actor)
                .map_err(Exit::failure)?;
            println!("{}", created.secret);
            eprintln!(
                "token {} created (expires: {}); the line above is its secret, shown only now",
                created.id,
                when(created.expires_at)
            );
        }
        ApiTokenCommand::List => {
            println!("ID\tNAME\tSCOPES\tFORM\tCREATED\tEXPIRES\tLAST USED\tREVOKED");
            for (t, _) in tokens::list(&pool).map_err(Exit::failure)? {
                println!(
                    "{}\t{}\t{}\t{}\t{}\t{}\t{}\t{}",
                    t.id,
                    t.name,
                    t.scopes.to_text().replace(' ', ","),
                    t.form.as_deref().unwrap_or("*"),
                    rfc3339(t.created_at),
                    when(t.expires_at),
                    when(t.last_used_at),
                    when(t.revoked_at)
                );
            }
        }
        ApiTokenCommand::Revoke { id } => {
            let token = tokens::revoke(&pool, &id, &actor).map_err(Exit::failure)?;
            println!("revoked token {} ({})", token.id, token.name);
        }
    }
    Ok(())
}

/// `check-config [--connect]`: the problems refuse the configuration (in `load`), and so do
/// the secrets it names when they are unset or not what their provider documents; the
/// warnings are printed; the database is tried only when asked, within `CONNECT_DEADLINE`.
fn check_config(config: &Config, env: &Secrets, connect: bool) -> Result<(), Exit> {
    for warning in crate::services::check_config::warnings(config) {
        eprintln!("warning: {warning}");
    }
    let secrets = crate::services::check_config::secret_problems(config, &|k| env.var(k));
    if !secrets.is_empty() {
        return Err(Exit::failure(format!("{} secret problem(s): {}", secrets.len(), secrets.join("; "))));
    }
    let names: Vec<&str> = config.forms.keys().map(String::as_str).collect();
    println!("configuration OK: {} form(s): {}", names.len(), names.join(", "));
    let backend = config.database.url.backend();
    if !connect {
        println!("database ({backend}): not tried; `check-config --connect` connects to it");
        return Ok(());
    }
    let (tx, rx) = std::sync::mpsc::channel();
    let database = config.database.clone();
    // A thread of its own: a host that drops packets would hold the connect far longer.
    std::thread::spawn(move || tx.send(crate::db::probe::probe(&database)));
    let secs = CONNECT_DEADLINE.as_secs();
    match rx.recv_timeout(CONNECT_DEADLINE) {
        Ok(Ok(Probe::Answered { pending: 0 })) => println!("database ({backend}): connected, migrations applied"),
        Ok(Ok(Probe::Answered { pending })) => println!(
            "database ({backend}): connected, {pending} migration(s) pending (`onceform migrate` or the next start applies them)"
        ),
        Ok(Ok(Probe::NoFileYet)) => println!(
            "database ({backend}): the file does not exist yet; `onceform migrate` or the first start creates it"
        ),
        Ok(Err(e)) => return Err(Exit::failure(format!("database ({backend}): {e}"))),
        Err(_) => return Err(Exit::failure(format!("database ({backend}): no answer within {secs} s"))),
    }
    Ok(())
}

/// `reload`: the configuration passed `load`'s checks; signal the running server and worker
/// (whichever of `[server] pid_file` and `[worker] pid_file` names a process; at least one).
fn reload(config: &Config) -> Result<(), Exit> {
    let files = [("serve", &config.server.pid_file), ("worker", &config.worker.pid_file)];
    let mut signalled = 0;
    for (command, path) in files {
        let Some(pid) = std::fs::read_to_string(path)
            .ok()
            .and_then(|t| t.trim().parse::<libc::pid_t>().ok())
            .filter(|pid| *pid > 0)
        else {
            continue;
        };
        // SAFETY: kill takes plain integers; it only sends SIGHUP to that process.
        if unsafe { libc::kill(pid, libc::SIGHUP) } != 0 {
            let error = std::io::Error::last_os_error();
            return Err(Exit::failure(format!("cannot signal process {pid} (from {path}): {error}")));
        }
        println!("configuration checked; `onceform {command}` (process {pid}) reloads it (its log says when it is in force)");
        signalled += 1;
    }
    if signalled == 0 {
        let (server, worker) = (&config.server.pid_file, &config.worker.pid_file);
        return Err(Exit::failure(format!(
            "no process ID in {server} or {worker}: is `onceform serve` or `onceform worker` running?"
        )));
    }
    Ok(())
}

/// How long `check-config --connect` waits for the database.
const CONNECT_DEADLINE: std::time::Duration = std::time::Duration::from_secs(5);

fn load(args: &Args, secrets: &Secrets) -> Result<Config, Exit> {
    crate::services::check_config::load(args.config.as_deref(), |k| secrets.var(k)).map_err(Exit::failure)
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
        assert_eq!(
            (a.command, a.config),
            (Command::CheckConfig { connect: false }, Some(PathBuf::from("x.toml")))
        );
        assert_eq!(p(&["migrate", "--config=y.toml"]).unwrap().config, Some(PathBuf::from("y.toml")));
    }

    #[test]
    fn bad_flags_are_usage_errors() {
        for bad in [&["--bogus"][..], &["frobnicate"], &["--config"], &["serve", "migrate"], &["admin"]] {
            let e = p(bad).unwrap_err();
            assert_eq!(e.code, 2, "{bad:?}");
            assert!(!e.message.contains('\n'), "{}", e.message);
        }
    }

    #[test]
    fn the_lifecycle_commands_take_their_flags_in_any_order() {
        let a = p(&["import", "--form", "contact", "old.csv", "--source", "excel", "--dry-run"]).unwrap();
        assert_eq!(
            a.command,
            Command::Import {
                form: "contact".into(),
                file: "old.csv".into(),
                source: "excel".into(),
                encoding: None,
                dry_run: true,
                with_effects: false,
            }
        );
        let a = p(&["purge", "--config", "onceform.toml"]).unwrap();
        assert_eq!((a.command, a.config), (Command::Purge, Some(PathBuf::from("onceform.toml"))));
        assert!(p(&["import", "--form", "contact", "x.csv", "--encoding", "latin9"])
            .unwrap_err()
            .message
            .contains("unknown encoding `latin9`"));
        for bad in [&["erase"][..], &["erase", "--email", "a@b", "--phone", "1"], &["import", "x.csv"]] {
            assert_eq!(p(bad).unwrap_err().code, 2, "{bad:?}");
        }
    }

    #[test]
    fn rescreen_takes_a_form_and_a_date() {
        let parsed = p(&["duplicates", "rescreen", "--form", "contact", "--since", "2026-11-01"]).unwrap();
        let Command::Duplicates(DuplicatesCommand::Rescreen { form, since }) = parsed.command else {
            panic!("{parsed:?}")
        };
        assert_eq!(form.as_deref(), Some("contact"));
        assert_eq!(since.map(|t| t.to_string()).as_deref(), Some("2026-11-01 00:00:00"));
        assert!(p(&["duplicates", "rescreen", "--since", "yesterday"])
            .unwrap_err()
            .message
            .contains("not a date"));
        assert!(p(&["duplicates", "rescreen", "--all"]).unwrap_err().message.contains("--all"));
        assert!(p(&["duplicates", "frob"]).unwrap_err().message.contains("frob"));
    }
}
