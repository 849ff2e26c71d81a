//! The binary's subcommands and its one-line errors.

use std::process::{Command, Output};

use crate::support::{Backend, TestDb};

fn onceform(args: &[&str], env: &[(&str, &str)]) -> Output {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_onceform"));
    cmd.args(args).env_remove("ONCEFORM_CONFIG").env_remove("ONCEFORM_DATABASE_URL").env("RUST_LOG", "off");
    // A working directory of its own: whatever it writes under ./data stays out of the checkout.
    let dir = std::env::temp_dir().join(format!("onceform-cli-{}", uuid::Uuid::new_v4().simple()));
    std::fs::create_dir_all(&dir).unwrap();
    cmd.current_dir(dir);
    for (k, v) in env {
        cmd.env(k, v);
    }
    cmd.output().unwrap()
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

fn temp_file(name: &str, text: &str) -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!("onceform-cli-{}", uuid::Uuid::new_v4().simple()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join(name);
    std::fs::write(&path, text).unwrap();
    path
}

#[test]
fn check_config_accepts_the_default_and_names_each_problem() {
    let ok = onceform(&["check-config"], &[]);
    assert!(ok.status.success(), "{}", stderr(&ok));
    assert!(String::from_utf8_lossy(&ok.stdout).contains("1 form(s): contact"));

    let bad = temp_file(
        "bad.toml",
        "[forms.contact]\ntitle = 'x'\neffects = ['confirmation_email']\n[[forms.contact.fields]]\nname = 'kind'\ntype = 'select'\n",
    );
    let out = onceform(&["check-config", "--config", bad.to_str().unwrap()], &[]);
    assert_eq!(out.status.code(), Some(1));
    let err = stderr(&out);
    assert!(
        err.contains("select needs options")
            && err.contains("confirmation_email needs a field of type email"),
        "{err}"
    );
    assert!(!err.contains("panicked"));
    assert_eq!(err.lines().count(), 1, "{err}");

    let typo = temp_file("typo.toml", "[forms.contact]\ntitel = 'x'\n");
    let out = onceform(&["check-config", "--config", typo.to_str().unwrap()], &[]);
    assert_eq!(out.status.code(), Some(1));
    assert!(stderr(&out).contains("titel"), "{}", stderr(&out));
}

#[test]
fn check_config_names_a_route_that_can_never_match() {
    let form =
        "[forms.contact]\ntitle = 'x'\nnotify = ['sales@example.com']\neffects = ['owner_notification']\n\
                [[forms.contact.fields]]\nname = 'topic'\ntype = 'select'\noptions = ['Sales', 'Support']\n";
    let fine = temp_file(
        "fine.toml",
        &format!("{form}[[forms.contact.routes]]\nname = 'support'\nwhen = {{ topic = 'Support' }}\n"),
    );
    let out = onceform(&["check-config", "--config", fine.to_str().unwrap()], &[]);
    assert!(out.status.success(), "{}", stderr(&out));
    let bad = temp_file(
        "routes.toml",
        &format!(
            "{form}[[forms.contact.routes]]\nname = 'everyone'\n\
             [[forms.contact.routes]]\nname = 'support'\nwhen = {{ topic = 'Support' }}\n"
        ),
    );
    let out = onceform(&["check-config", "--config", bad.to_str().unwrap()], &[]);
    assert_eq!(out.status.code(), Some(1));
    let err = stderr(&out);
    assert!(
        err.contains(
            "forms.contact.routes[1] (support): can never match: route everyone before it has no `when`"
        ),
        "{err}"
    );
}

#[test]
fn bad_flags_and_missing_files_end_with_one_line() {
    let out = onceform(&["--frobnicate"], &[]);
    assert_eq!(out.status.code(), Some(2));
    assert_eq!(stderr(&out).lines().count(), 1, "{}", stderr(&out));

    let out = onceform(&["serve", "--config", "/nonexistent/onceform.toml"], &[]);
    assert_eq!(out.status.code(), Some(1));
    assert!(stderr(&out).contains("/nonexistent/onceform.toml"));
    assert_eq!(stderr(&out).lines().count(), 1);
}

#[test]
fn an_unreachable_database_is_named_at_start() {
    let out = onceform(&["serve"], &[("ONCEFORM_DATABASE_URL", "postgres://postgres@127.0.0.1:1/none")]);
    assert_eq!(out.status.code(), Some(1));
    let err = stderr(&out);
    assert!(err.starts_with("onceform: cannot connect to PostgreSQL") && err.contains("refused"), "{err}");
    assert!(!err.contains("panicked"));

    let out = onceform(&["migrate"], &[("ONCEFORM_DATABASE_URL", "mysql://localhost/x")]);
    assert_eq!(out.status.code(), Some(1));
    assert!(stderr(&out).contains("unsupported database scheme `mysql`"), "{}", stderr(&out));
}

#[test]
fn migrate_prepares_both_backends() {
    for backend in [Backend::Sqlite, Backend::Postgres] {
        let db = TestDb::new(backend);
        for _ in 0..2 {
            let out = onceform(&["migrate"], &[("ONCEFORM_DATABASE_URL", &db.url)]);
            assert!(out.status.success(), "{:?} {:?}: {}", backend, out.status, stderr(&out));
        }
    }
}

/// `serve` and `worker` started together on a fresh SQLite file (a compose file, two systemd
/// units) both migrate it: one applies the migrations, the others find them applied.
#[test]
fn processes_started_at_once_on_a_fresh_sqlite_file_all_migrate() {
    for _ in 0..3 {
        let db = TestDb::new(Backend::Sqlite);
        let children: Vec<_> = (0..4)
            .map(|_| {
                let mut cmd = Command::new(env!("CARGO_BIN_EXE_onceform"));
                cmd.arg("migrate")
                    .current_dir(crate::support::own_dir())
                    .env_remove("ONCEFORM_CONFIG")
                    .env("ONCEFORM_DATABASE_URL", &db.url)
                    .env("RUST_LOG", "off")
                    .stderr(std::process::Stdio::piped());
                cmd.spawn().unwrap()
            })
            .collect();
        for child in children {
            let out = child.wait_with_output().unwrap();
            assert!(out.status.success(), "{:?}: {}", out.status, stderr(&out));
        }
        let check = onceform(&["migrate"], &[("ONCEFORM_DATABASE_URL", &db.url)]);
        assert!(check.status.success(), "{}", stderr(&check));
    }
}

#[test]
fn admin_create_user_takes_the_password_from_the_environment_and_refuses_weak_or_repeated() {
    let db = TestDb::new(Backend::Sqlite);
    let env = [("ONCEFORM_DATABASE_URL", db.url.as_str()), ("ADMIN_PW", "a long enough password")];
    let args = [
        "admin",
        "create-user",
        "--email",
        "Ops@Example.com",
        "--role",
        "viewer",
        "--password-env",
        "ADMIN_PW",
    ];
    let out = onceform(&args, &env);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(String::from_utf8_lossy(&out.stdout).contains("created viewer user ops@example.com"));
    let again = onceform(&args, &env);
    assert_eq!(again.status.code(), Some(1));
    assert!(stderr(&again).contains("exists already"), "{}", stderr(&again));
    let weak = onceform(
        &["admin", "create-user", "--email", "x@example.com", "--password-env", "ADMIN_PW"],
        &[("ONCEFORM_DATABASE_URL", db.url.as_str()), ("ADMIN_PW", "short")],
    );
    assert_eq!(weak.status.code(), Some(1));
    assert!(stderr(&weak).contains("at least 12 characters"));
    assert_eq!(onceform(&["admin", "delete-everything"], &[]).status.code(), Some(2));
}

#[test]
fn the_first_start_creates_one_admin_with_a_one_time_password() {
    use std::os::unix::fs::PermissionsExt;
    let db = TestDb::new(Backend::Sqlite);
    let mut config = onceform::config::Config::builtin().unwrap();
    config.database.url = onceform::db::DatabaseUrl::parse(&db.url).unwrap();
    let pool = onceform::db::Pool::connect(&config.database).unwrap();
    let dir = std::env::temp_dir().join(format!("onceform-pw-{}", uuid::Uuid::new_v4().simple()));
    let file = dir.join("initial-admin-password");
    let written =
        onceform::services::accounts::bootstrap(&pool, &file).unwrap().expect("a file the first time");
    assert_eq!(written, file);
    let mode = std::fs::metadata(&file).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o600, "readable by the owner only");
    let text = std::fs::read_to_string(&file).unwrap();
    let password = text.lines().nth(1).unwrap().to_string();
    assert!(password.len() >= 12);
    let throttle = onceform::services::accounts::LoginThrottle::new().unwrap();
    let login =
        |pw: &str| onceform::services::accounts::login(&pool, &throttle, "admin@localhost", pw).unwrap();
    let (_, user) = login(&password).expect("the written password signs in");
    assert!(user.must_change_password, "the first sign-in must choose a new password");
    assert!(login("wrong password!").is_none());
    assert_eq!(
        onceform::services::accounts::bootstrap(&pool, &file).unwrap(),
        None,
        "only when there is no account"
    );
    let _ = std::fs::remove_dir_all(dir);
}

#[test]
fn check_config_refuses_keys_shorter_than_content_and_warns_below_max_retry_age() {
    let with = |retention: &str| {
        let text = format!("{}\n[forms.contact.retention]\n{retention}\n", onceform::config::DEFAULT_CONFIG);
        temp_file("retention.toml", &text)
    };
    let bad = with("content = \"90d\"\nkeys = \"30d\"");
    let out = onceform(&["check-config", "--config", bad.to_str().unwrap()], &[]);
    assert_eq!(out.status.code(), Some(1));
    assert!(stderr(&out).contains("retention.keys: 30d is shorter than content (90d)"), "{}", stderr(&out));
    let short = with("content = \"12h\"\nkeys = \"400d\"\nmax_retry_age = \"2d\"");
    let out = onceform(&["check-config", "--config", short.to_str().unwrap()], &[]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(stderr(&out)
        .contains("warning: forms.contact.retention.content: 12h is shorter than max_retry_age (2d)"));
    let typo = with("content = \"90 days\"");
    let out = onceform(&["check-config", "--config", typo.to_str().unwrap()], &[]);
    assert_eq!(out.status.code(), Some(1));
    assert!(stderr(&out).contains("is not a duration like 90d"), "{}", stderr(&out));
}

#[test]
fn admin_without_a_command_is_a_usage_error_naming_the_commands() {
    let out = onceform(&["admin"], &[]);
    assert_eq!(out.status.code(), Some(2));
    let err = stderr(&out);
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(!err.contains("unknown admin command"), "{err}");
    assert!(err.contains("requires a subcommand") && err.contains("create-user"), "{err}");
}

#[test]
fn help_lists_the_commands_and_the_environment() {
    let out = onceform(&["--help"], &[]);
    assert!(out.status.success(), "{}", stderr(&out));
    let help = String::from_utf8_lossy(&out.stdout);
    for word in ["check-config", "duplicates", "--config"] {
        assert!(help.contains(word), "{word}: {help}");
    }
    for (var, _) in onceform::config::ENVIRONMENT {
        assert!(help.contains(var), "{var} missing from --help");
    }
}

#[test]
fn check_config_connects_only_when_asked() {
    let stdout = |o: &Output| String::from_utf8_lossy(&o.stdout).into_owned();
    let admin = crate::support::pg_admin_url();
    let missing = format!("{}/onceform_no_such_database", admin.rsplit_once('/').unwrap().0);
    let missing = missing.as_str();
    let out = onceform(&["check-config"], &[("ONCEFORM_DATABASE_URL", missing)]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(
        stdout(&out).contains("database (postgres): not tried; `check-config --connect`"),
        "{}",
        stdout(&out)
    );

    let out = onceform(&["check-config", "--connect"], &[("ONCEFORM_DATABASE_URL", missing)]);
    assert_eq!(out.status.code(), Some(1));
    let err = stderr(&out);
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.starts_with("onceform: database (postgres): cannot connect to PostgreSQL"), "{err}");
    assert!(err.contains("onceform_no_such_database"), "{err}");

    let db = TestDb::new(Backend::Postgres);
    let out = onceform(&["check-config", "--connect"], &[("ONCEFORM_DATABASE_URL", &db.url)]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(
        stdout(&out).contains("connected") && stdout(&out).contains("migration(s) pending"),
        "{}",
        stdout(&out)
    );
    let migrated = onceform(&["migrate"], &[("ONCEFORM_DATABASE_URL", &db.url)]);
    assert!(migrated.status.success(), "{}", stderr(&migrated));
    let out = onceform(&["check-config", "--connect"], &[("ONCEFORM_DATABASE_URL", &db.url)]);
    assert!(stdout(&out).contains("database (postgres): connected, migrations applied"), "{}", stdout(&out));

    let sqlite = TestDb::new(Backend::Sqlite);
    let out = onceform(&["check-config", "--connect"], &[("ONCEFORM_DATABASE_URL", &sqlite.url)]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(stdout(&out).contains("does not exist yet"), "{}", stdout(&out));
    let migrated = onceform(&["migrate"], &[("ONCEFORM_DATABASE_URL", &sqlite.url)]);
    assert!(migrated.status.success(), "{}", stderr(&migrated));
    let out = onceform(&["check-config", "--connect"], &[("ONCEFORM_DATABASE_URL", &sqlite.url)]);
    assert!(stdout(&out).contains("database (sqlite): connected, migrations applied"), "{}", stdout(&out));
}

#[test]
fn every_misspelt_key_is_named_at_its_own_line_with_the_key_it_resembles() {
    let text =
        "[server]\nbind = '127.0.0.1:0'\nbody_timout_ms = 5000\n\n[forms.contact]\ntitle = 'Contact'\n\
                min_fil_seconds = 3\n[[forms.contact.fields]]\nname = 'email'\ntyp = 'email'\n";
    let typo = temp_file("typos.toml", text);
    let out = onceform(&["check-config", "--config", typo.to_str().unwrap()], &[]);
    assert_eq!(out.status.code(), Some(1));
    let err = stderr(&out);
    assert_eq!(err.lines().count(), 1, "{err}");
    for problem in [
        "line 3: server: unknown field `body_timout_ms` (did you mean `body_timeout_ms`?)",
        "line 7: forms.contact: unknown field `min_fil_seconds` (did you mean `min_fill_seconds`?)",
        "line 10: forms.contact.fields: unknown field `typ` (did you mean `type`?)",
    ] {
        assert!(err.contains(problem), "{problem}: {err}");
    }
    assert!(!err.contains("TOML parse error") && !err.contains(" | "), "no squashed snippet: {err}");
}

/// No test writes into the checkout's ./data: every `onceform` a test spawns is given a
/// working directory of its own (in-process servers get their paths from `test_config`).
#[test]
fn every_spawned_onceform_runs_in_a_directory_of_its_own() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/it");
    let mut files = vec![root];
    let mut unplaced = Vec::new();
    while let Some(path) = files.pop() {
        if path.is_dir() {
            files.extend(std::fs::read_dir(&path).unwrap().map(|e| e.unwrap().path()));
            continue;
        }
        let text = std::fs::read_to_string(&path).unwrap();
        let lines: Vec<&str> = text.lines().collect();
        for (i, line) in lines.iter().enumerate() {
            if line.contains(concat!("CARGO_BIN_EXE_", "onceform")) && line.contains("Command::new") {
                // The statement and those right after it, up to a blank line or the function's end.
                let window = lines[i..].iter().take_while(|l| !l.trim().is_empty() && !l.starts_with('}'));
                if !window.take(20).any(|l| l.contains("current_dir")) {
                    unplaced.push(format!("{}:{}", path.display(), i + 1));
                }
            }
        }
    }
    assert!(unplaced.is_empty(), "spawned without current_dir: {unplaced:?}");
}

/// Issue 45: bound to an address others reach with no metrics token, `/metrics` answered
/// anyone and nothing said so. `check-config` warns (and still accepts the configuration),
/// and `serve` logs the warning as it starts.
#[test]
fn an_open_metrics_endpoint_on_a_public_address_is_warned_about() {
    let public = [("ONCEFORM_BIND", "0.0.0.0:8080")];
    let out = onceform(&["check-config"], &public);
    assert!(out.status.success(), "a warning, not a refusal: {}", stderr(&out));
    assert!(
        stderr(&out).contains("warning: server.bind = 0.0.0.0:8080: /metrics is open"),
        "{}",
        stderr(&out)
    );
    let quiet =
        onceform(&["check-config"], &[public[0], ("ONCEFORM_METRICS_TOKEN", "a-token-for-the-scraper")]);
    assert!(!stderr(&quiet).contains("/metrics"), "{}", stderr(&quiet));
    assert!(!stderr(&onceform(&["check-config"], &[])).contains("/metrics"), "loopback by default");

    let db = TestDb::new(Backend::Sqlite);
    let mut serve = crate::support::serve_process::ServeProcess::command(&db.url, &[]);
    serve.env("ONCEFORM_BIND", "0.0.0.0:0").stderr(std::process::Stdio::piped());
    let mut child = serve.spawn().unwrap();
    let mut stdout = std::io::BufReader::new(child.stdout.take().unwrap());
    let mut line = String::new();
    std::io::BufRead::read_line(&mut stdout, &mut line).unwrap();
    assert!(line.starts_with("onceform listening on http://0.0.0.0:"), "{line:?}");
    child.kill().unwrap();
    let logged = child.wait_with_output().unwrap();
    assert!(stderr(&logged).contains("/metrics is open to every client"), "{}", stderr(&logged));
}

/// `--help` names every variable docs/CONFIGURATION.md's environment table documents, and
/// the operations commands.
#[test]
fn help_names_every_documented_variable_and_the_operations_commands() {
    let out = onceform(&["--help"], &[]);
    let help = String::from_utf8_lossy(&out.stdout);
    let reference = std::fs::read_to_string(
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/CONFIGURATION.md"),
    )
    .unwrap();
    let documented: Vec<&str> = reference
        .lines()
        .filter(|l| l.starts_with("| `ONCEFORM_") || l.starts_with("| `RUST_LOG`"))
        .map(|l| l.split('`').nth(1).unwrap())
        .collect();
    assert!(documented.len() > 10, "{documented:?}");
    let missing: Vec<&&str> = documented.iter().filter(|v| !help.contains(**v)).collect();
    assert!(missing.is_empty(), "missing from --help: {missing:?}");
    for command in ["healthcheck", "backup", "restore"] {
        assert!(help.contains(command), "{command}: {help}");
    }
}

/// A configuration with a Standard Webhooks source keyed by `$SW_KEY` and the contact form's
/// outbound webhook keyed by `$OUT_KEY`.
fn webhook_keys_config() -> std::path::PathBuf {
    let effects = r#"effects = ["crm_lead", "confirmation_email", "owner_notification"]"#;
    let text = onceform::config::DEFAULT_CONFIG.replace(effects, r#"effects = ["webhook"]"#)
        + "\n[forms.contact.webhook]\nurl = \"https://hooks.example.com/in\"\nsecret_env = \"OUT_KEY\"\n\
           \n[hooks.sw]\nverify = \"standard-webhooks\"\nsecret_env = \"SW_KEY\"\n";
    temp_file("keys.toml", &text)
}

/// Issue 45: `whsec_` (an empty key), `AA==` (no `whsec_`, one byte) and a 16-byte key passed
/// check-config, though the docs said start-up is refused. Each names its variable now, never
/// its value.
#[test]
fn check_config_refuses_an_empty_unprefixed_or_short_webhook_key() {
    let config = webhook_keys_config();
    let check = |key: &str| {
        onceform(
            &["check-config", "--config", config.to_str().unwrap()],
            &[("SW_KEY", key), ("OUT_KEY", key)],
        )
    };
    for key in ["whsec_", "AA==", "whsec_MDEyMzQ1Njc4OWFiY2RlZg=="] {
        let out = check(key);
        let err = stderr(&out);
        assert_eq!(out.status.code(), Some(1), "{key}: {err}");
        assert!(err.contains("hooks.sw.secret_env: SW_KEY: "), "{key}: {err}");
        assert!(err.contains("forms.contact.webhook.secret_env: OUT_KEY: "), "{key}: {err}");
        assert!(key == "whsec_" || !err.contains(key), "the value is never shown: {err}");
        assert_eq!(err.lines().count(), 1, "{err}");
    }
    let out = check("whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw");
    assert!(out.status.success(), "{}", stderr(&out));
}

/// Issue 45: `serve` started with an empty key and accepted deliveries signed with it.
#[test]
fn serve_refuses_to_start_with_an_empty_webhook_key() {
    let db = TestDb::new(Backend::Sqlite);
    let config = webhook_keys_config();
    let mut child = Command::new(env!("CARGO_BIN_EXE_onceform"))
        .args(["--config", config.to_str().unwrap(), "serve"])
        .current_dir(crate::support::own_dir())
        .env_remove("ONCEFORM_CONFIG")
        .env("ONCEFORM_DATABASE_URL", &db.url)
        .env("ONCEFORM_BIND", "127.0.0.1:0")
        .env("RUST_LOG", "off")
        .env("SW_KEY", "whsec_")
        .env("OUT_KEY", "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw")
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if std::time::Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            panic!("serve started with an empty webhook key");
        }
        std::thread::sleep(std::time::Duration::from_millis(100));
    };
    let out = child.wait_with_output().unwrap();
    let err = stderr(&out);
    assert_eq!(status.code(), Some(1), "{err}");
    assert!(err.contains("hooks.sw: SW_KEY: a secret's key is shorter than 24 bytes"), "{err}");
}
