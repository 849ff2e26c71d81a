//! The layers of docs/ARCHITECTURE.md hold: `scripts/layers.sh` finds no module using one
//! above it and no cycle.

use std::process::Command;

#[test]
fn every_arrow_between_modules_points_down() {
    let root = env!("CARGO_MANIFEST_DIR");
    let out = Command::new("bash").arg(format!("{root}/scripts/layers.sh")).output().unwrap();
    let report = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "scripts/layers.sh failed:\n{report}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(report.contains("http -> accept"), "the edges are listed:\n{report}");
}
