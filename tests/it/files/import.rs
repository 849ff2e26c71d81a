//! A historic import names files in the folder beside its CSV: they are stored like any
//! attachment (one blob per content, named by the imported submission); a name that leaves
//! the folder, or a file that is not there, rejects its row; a dry run stores nothing.

use super::attach::{stored, QUOTE};
use crate::lifecycle::{onceform_with, stdout};
use crate::on_both_backends;
use crate::support::files::{kept_blobs, pdf, png, sha256};
use crate::support::{spawn_app_with, Backend};

on_both_backends!(an_import_stores_the_files_its_rows_name);

async fn an_import_stores_the_files_its_rows_name(backend: Backend) {
    let app = spawn_app_with(backend, super::attach::with_quote).await;
    let dir = std::env::temp_dir().join(format!("onceform-import-files-{}", uuid::Uuid::new_v4().simple()));
    std::fs::create_dir_all(dir.join("scans")).unwrap();
    std::fs::write(dir.join("scans/drawing.pdf"), pdf("imported")).unwrap();
    std::fs::write(dir.join("photo.png"), png()).unwrap();
    std::fs::write(dir.join("../outside.pdf"), pdf("outside")).ok();
    let csv = "email,drawing,received_at\n\
               mei@example.com,scans/drawing.pdf; photo.png,2026-01-02 10:00:00\n\
               lin@example.com,../outside.pdf,2026-01-02 11:00:00\n\
               wu@example.com,missing.pdf,2026-01-02 12:00:00\n";
    let file = dir.join("history.csv");
    std::fs::write(&file, csv).unwrap();
    let files_dir = app.config.server.files_dir.clone();
    let config = format!("{QUOTE}\n[server]\nfiles_dir = \"{files_dir}\"\n");
    let import = |extra: &[&str]| {
        let mut args = vec!["import", "--form", "quote", file.to_str().unwrap()];
        args.extend_from_slice(extra);
        let out = onceform_with(&app, &config, &args);
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        stdout(&out)
    };

    let dry = import(&["--dry-run"]);
    assert!(dry.starts_with("dry run: imported 1, already present 0, rejected 2"), "{dry}");
    assert!(kept_blobs(&app.config).is_empty(), "a dry run stores no file");

    let done = import(&[]);
    assert!(done.starts_with("imported 1, already present 0, rejected 2"), "{done}");
    assert!(
        done.contains("line 3: `drawing`: ../outside.pdf: not a file of the folder beside the CSV"),
        "{done}"
    );
    assert!(done.contains("line 4: `drawing`: missing.pdf: "), "{done}");
    let rows = stored(&app).await;
    assert_eq!(rows.len(), 1);
    let value = rows[0]["drawing"].as_str().unwrap();
    let mut want = vec![sha256(&pdf("imported")), sha256(&png())];
    want.sort();
    assert_eq!(super::attach::digests(&rows[0]["drawing"]), want, "{value}");
    assert!(
        value.contains(" drawing%2Epdf") && value.contains(" photo%2Epng"),
        "names without folders: {value}"
    );
    assert_eq!(kept_blobs(&app.config), want);
    assert!(import(&[]).starts_with("imported 0, already present 1"), "a re-run imports nothing new");
}
