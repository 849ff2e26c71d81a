//! `src/db/schema.rs` is what diesel's CLI prints for a freshly migrated database: a new
//! migration without a regenerated schema (or a hand edit) fails here. The CLI is
//! `diesel_cli` with bundled SQLite, installed by `./test.sh`.

use std::path::Path;
use std::process::Command;

use onceform::db::Pool;

use crate::support::{test_config, Backend, TestDb};

#[test]
fn schema_rs_matches_the_migrations() {
    let db = TestDb::new(Backend::Sqlite);
    Pool::connect(&test_config(&db.url).database).unwrap();
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let out = Command::new("diesel")
        .args(["print-schema", "--database-url", db.url.trim_start_matches("sqlite://")])
        .current_dir(root)
        .output()
        .unwrap_or_else(|e| panic!("cannot run diesel ({e}); ./test.sh installs it (see diesel.toml)"));
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let printed = String::from_utf8_lossy(&out.stdout);
    let checked_in = std::fs::read_to_string(root.join("src/db/schema.rs")).unwrap();
    assert!(
        printed == checked_in,
        "src/db/schema.rs differs from the migrations; regenerate it with \
         `diesel migration run --database-url /tmp/onceform-schema.db`:\n{printed}"
    );
}
