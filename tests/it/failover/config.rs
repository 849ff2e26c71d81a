//! `check-config` on a replicated database's URL: several hosts without
//! `target_session_attrs=read-write` are accepted with a warning (libpq would take the first
//! node that answers, which after a failover may be the standby).

use std::process::Command;

fn check_config(url: &str) -> (bool, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_onceform"))
        .arg("check-config")
        .current_dir(crate::support::own_dir())
        .env_remove("ONCEFORM_CONFIG")
        .env("ONCEFORM_DATABASE_URL", url)
        .env("RUST_LOG", "off")
        .output()
        .unwrap();
    (out.status.success(), String::from_utf8_lossy(&out.stderr).into_owned())
}

#[test]
fn check_config_warns_about_several_hosts_without_target_session_attrs() {
    let (ok, stderr) = check_config("postgres://onceform@db1:5432,db2:5432/onceform");
    assert!(ok, "a warning, not a refusal: {stderr}");
    assert!(
        stderr.contains("warning: database.url: several hosts without target_session_attrs=read-write"),
        "{stderr}"
    );

    for quiet in [
        "postgres://onceform@db1:5432,db2:5432/onceform?target_session_attrs=read-write",
        "postgres://onceform@db1:5432/onceform",
    ] {
        let (ok, stderr) = check_config(quiet);
        assert!(ok && !stderr.contains("target_session_attrs"), "{quiet}: {stderr}");
    }
}
