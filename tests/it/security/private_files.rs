//! What the server keeps of submissions on disk is its user's only: another account on the
//! host reads neither the database nor the attached files, mail and lead files (issue 45:
//! they were created 0644 while the secret was 0600).

use std::os::unix::fs::PermissionsExt;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use crate::support::files::pdf;
use crate::support::serve_process::ServeProcess;
use crate::support::{inquiry, new_key, own_dir};

/// The demo form with a file field, its effects (a lead file, two `.eml` files) delivered soon.
fn config_with_a_file_field() -> String {
    format!(
        "{}\n[[forms.contact.fields]]\nname = \"attachment\"\nlabel = \"Attachment\"\ntype = \"file\"\n\
         accept = [\".pdf\"]\n\n[worker]\npoll_ms = 50\n",
        onceform::config::DEFAULT_CONFIG
    )
}

/// The files directly in `dir` whose names end with `suffix`.
fn files_ending(dir: &Path, suffix: &str) -> Vec<PathBuf> {
    let entries = std::fs::read_dir(dir).into_iter().flatten().flatten();
    entries.map(|e| e.path()).filter(|p| p.to_string_lossy().ends_with(suffix)).collect()
}

fn mode(path: &Path) -> u32 {
    std::fs::metadata(path).unwrap().permissions().mode() & 0o777
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn another_local_user_cannot_read_the_data_files() {
    let dir = own_dir();
    let config = dir.join("onceform.toml");
    std::fs::write(&config, config_with_a_file_field()).unwrap();
    let mut cmd =
        ServeProcess::command("sqlite://./data/onceform.db", &["--config", config.to_str().unwrap()]);
    cmd.current_dir(&dir);
    // The usual umask, whatever the test runner's: it would let group and others read.
    // SAFETY: `umask` is async-signal-safe and touches only the child's own state.
    unsafe {
        cmd.pre_exec(|| {
            libc::umask(0o022);
            Ok(())
        });
    }
    let serve = ServeProcess::start(cmd);
    let client = reqwest::Client::new();

    let upload = client
        .post(format!("{}/api/forms/contact/uploads", serve.address))
        .header("Content-Type", "application/octet-stream")
        .header("Onceform-File-Name", "brief.pdf")
        .body(pdf("a brief"))
        .send()
        .await
        .unwrap();
    assert_eq!(upload.status(), 201);
    let upload: Value = upload.json().await.unwrap();
    let mut body = inquiry("With a brief attached");
    body["attachment"] = json!([upload["upload_id"]]);
    let submitted = client
        .post(format!("{}/api/forms/contact/submissions", serve.address))
        .header("Idempotency-Key", new_key())
        .json(&body)
        .send()
        .await
        .unwrap();
    assert_eq!(submitted.status(), 201, "{}", submitted.text().await.unwrap());

    let data = dir.join("data");
    let (mail, leads) = (data.join("mail"), data.join("crm/leads"));
    let deadline = Instant::now() + Duration::from_secs(30);
    while files_ending(&mail, ".eml").len() < 2 || files_ending(&leads, ".json").is_empty() {
        assert!(Instant::now() < deadline, "the effects were not delivered");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let shard = std::fs::read_dir(data.join("files"))
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .find(|p| !p.ends_with("tmp"))
        .expect("a blob's folder");
    let mut files = vec![data.join("onceform.db")];
    files.extend(
        ["onceform.db-wal", "onceform.db-shm"].map(|f| data.join(f)).into_iter().filter(|p| p.exists()),
    );
    files.extend(files_ending(&shard, ""));
    files.extend(files_ending(&mail, ".eml"));
    files.extend(files_ending(&leads, ".json"));
    assert!(files.len() >= 5, "{files:?}");
    for file in &files {
        assert_eq!(mode(file) & 0o077, 0, "{} is {:o}", file.display(), mode(file));
    }
    for folder in [&data, &data.join("files"), &shard, &mail, &data.join("crm"), &leads] {
        assert_eq!(mode(folder) & 0o077, 0, "{} is {:o}", folder.display(), mode(folder));
    }
    drop(serve);
    let _ = std::fs::remove_dir_all(dir);
}
