//! deploy/Dockerfile and deploy/compose.yaml are never run here (no container runtime), so
//! what they can get wrong is checked against the code: every onceform command they run
//! (the Dockerfile's ENTRYPOINT + CMD and HEALTHCHECK, compose's `command:` and
//! `healthcheck:` of the services built from the Dockerfile) parses with the command line's
//! own definitions, and every ONCEFORM_* variable they set is one docs/CONFIGURATION.md
//! documents, with a value the configuration takes.

use std::collections::BTreeMap;
use std::path::Path;

fn read(path: &str) -> String {
    std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join(path)).unwrap()
}

/// The variables docs/CONFIGURATION.md's environment table names.
fn documented() -> Vec<String> {
    read("docs/CONFIGURATION.md")
        .lines()
        .filter(|l| l.starts_with("| `ONCEFORM_"))
        .map(|l| l.split('`').nth(1).unwrap().to_string())
        .collect()
}

/// The arguments after the binary of an exec-form command (`["/usr/local/bin/onceform", …]`).
fn onceform_args(words: &[String]) -> Vec<String> {
    let mut words = words.to_vec();
    if words.first().is_some_and(|w| w == "CMD") {
        words.remove(0);
    }
    if words.first().is_some_and(|w| w == "onceform" || w.ends_with("/onceform")) {
        words.remove(0);
    }
    words
}

fn json_words(text: &str) -> Vec<String> {
    serde_json::from_str(text.trim()).unwrap_or_else(|e| panic!("not a JSON array of words: {text}: {e}"))
}

/// The problems with one command line and one set of variables.
fn problems(what: &str, args: &[String], env: &BTreeMap<String, String>) -> Vec<String> {
    let mut out = Vec::new();
    if let Err(e) = onceform::cli::parse(args.iter().cloned()) {
        out.push(format!("{what}: `onceform {}`: {}", args.join(" "), e.message));
    }
    let documented = documented();
    for name in env.keys().filter(|k| k.starts_with("ONCEFORM_")) {
        if !documented.contains(name) {
            out.push(format!("{what}: {name} is not a documented variable"));
        }
    }
    let mut config = onceform::config::Config::builtin().unwrap();
    if let Err(e) = config.apply_env(|k| env.get(k).cloned()) {
        out.push(format!("{what}: the configuration refuses its environment: {e}"));
    }
    out
}

/// The Dockerfile's instructions, continuation lines joined.
fn instructions(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut current = String::new();
    for line in text.lines().filter(|l| !l.trim_start().starts_with('#')) {
        let (part, more) = match line.trim_end().strip_suffix('\\') {
            Some(p) => (p, true),
            None => (line, false),
        };
        current.push_str(part.trim());
        current.push(' ');
        if !more {
            if !current.trim().is_empty() {
                out.push(current.trim().to_string());
            }
            current.clear();
        }
    }
    out
}

#[derive(Default, Debug)]
struct Service {
    onceform: bool,
    command: Option<Vec<String>>,
    healthcheck: Option<Vec<String>>,
    healthcheck_disabled: bool,
    env: BTreeMap<String, String>,
}

/// compose.yaml's services, read line by line (the file keeps to plain block mappings and
/// JSON-array commands; a `command:` in any other form fails the test).
fn services(text: &str) -> BTreeMap<String, Service> {
    let mut out: BTreeMap<String, Service> = BTreeMap::new();
    let (mut in_services, mut service, mut block) = (false, None::<String>, "");
    for line in text.lines().filter(|l| !l.trim_start().starts_with('#') && !l.trim().is_empty()) {
        let indent = line.len() - line.trim_start().len();
        let (key, value) =
            line.trim().split_once(':').map(|(k, v)| (k, v.trim())).unwrap_or((line.trim(), ""));
        match indent {
            0 => {
                in_services = key == "services";
                service = None;
            }
            2 if in_services => {
                service = Some(key.to_string());
                out.entry(key.to_string()).or_default();
            }
            4 => block = if value.is_empty() { key } else { "" },
            _ => {}
        }
        let Some(s) = service.as_ref().and_then(|name| out.get_mut(name)) else { continue };
        match (indent, key) {
            (4, "image") if value.starts_with("onceform") => s.onceform = true,
            (4, "command") => s.command = Some(json_words(value)),
            (6, "dockerfile") if block == "build" && value == "deploy/Dockerfile" => s.onceform = true,
            (6, "test") if block == "healthcheck" => s.healthcheck = Some(json_words(value)),
            (6, "disable") if block == "healthcheck" => s.healthcheck_disabled = value == "true",
            (6, name) if block == "environment" => {
                s.env.insert(name.to_string(), value.to_string());
            }
            _ => {}
        }
    }
    out
}

#[test]
fn the_dockerfile_runs_only_commands_and_variables_that_exist() {
    let text = read("deploy/Dockerfile");
    let mut entrypoint = Vec::new();
    let mut cmd = Vec::new();
    let mut health = None;
    let mut env = BTreeMap::new();
    let mut user = None;
    let mut volume = false;
    for i in instructions(&text) {
        let (op, rest) = i.split_once(' ').unwrap_or((&i, ""));
        match op {
            "ENTRYPOINT" => entrypoint = json_words(rest),
            "CMD" => cmd = json_words(rest),
            "HEALTHCHECK" => health = Some(json_words(&rest[rest.find("CMD").unwrap() + 3..])),
            "ENV" => env.extend(rest.split_whitespace().map(|kv| {
                let (k, v) = kv.split_once('=').unwrap();
                (k.to_string(), v.to_string())
            })),
            "USER" => user = Some(rest.trim().to_string()),
            "VOLUME" => volume = true,
            _ => {}
        }
    }
    assert!(entrypoint.last().is_some_and(|e| e.ends_with("/onceform")), "{entrypoint:?}");
    let mut wrong = problems("CMD", &onceform_args(&[entrypoint.clone(), cmd].concat()), &env);
    let health = health.expect("a HEALTHCHECK");
    assert_eq!(onceform_args(&health).first().map(String::as_str), Some("healthcheck"), "{health:?}");
    wrong.extend(problems("HEALTHCHECK", &onceform_args(&health), &env));
    assert!(wrong.is_empty(), "deploy/Dockerfile:\n{}", wrong.join("\n"));
    let user = user.expect("a USER");
    assert!(!["root", "0", "0:0"].contains(&user.as_str()), "runs as {user}");
    assert!(volume, "declares its data volume");
}

#[test]
fn compose_runs_onceform_on_postgres_with_one_worker_and_only_what_exists() {
    let services = services(&read("deploy/compose.yaml"));
    let ours: Vec<(&String, &Service)> = services.iter().filter(|(_, s)| s.onceform).collect();
    let mut wrong = Vec::new();
    for (name, s) in &ours {
        let command = s.command.clone().unwrap_or_else(|| panic!("{name}: no command"));
        wrong.extend(problems(&format!("{name} command"), &command, &s.env));
        if let Some(test) = &s.healthcheck {
            wrong.extend(problems(&format!("{name} healthcheck"), &onceform_args(test), &s.env));
        }
        let url = s.env.get("ONCEFORM_DATABASE_URL").map(String::as_str).unwrap_or("");
        let parsed = url::Url::parse(url).unwrap_or_else(|e| panic!("{name}: {url}: {e}"));
        assert_eq!(parsed.scheme(), "postgres", "{name}: {url}");
        assert_eq!(parsed.password(), None, "{name}: the password goes in PGPASSWORD, never in the URL");
    }
    assert!(wrong.is_empty(), "deploy/compose.yaml:\n{}", wrong.join("\n"));
    let command = |s: &Service| s.command.clone().unwrap_or_default().join(" ");
    let workers: Vec<_> = ours.iter().filter(|(_, s)| command(s) == "worker").collect();
    assert_eq!(workers.len(), 1, "one worker: {ours:?}");
    assert!(workers[0].1.healthcheck_disabled, "a worker has no listener for the image's health check");
    assert!(ours.iter().any(|(_, s)| command(s) == "serve" && s.healthcheck.is_some()), "{ours:?}");
    assert!(services.contains_key("postgres"), "{:?}", services.keys());
}
