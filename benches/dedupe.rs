//! Duplicate detection quality, measured through the product's own path: a labelled corpus
//! (`dedupe/corpus.rs`: Traditional Chinese and English, Taiwanese and US numbers, hard
//! negatives) is imported with `onceform import`'s code (`lifecycle::import`, which screens
//! every pair as `serve` would), and the review queue is compared with the truth.
//!
//! `cargo bench --bench dedupe [-- --seeds 1,2,3] [--people 500] [--backend sqlite|postgres]
//!  [--write DIR]` prints, per seed: rows refused, recall / precision / F1 at the review queue
//! and at `hold_score`, the false items by kind, the same sender's new requests listed apart,
//! and the screener's throughput (`duplicates rescreen` over the stored rows).
//! `--corpus FILE.csv --labels LABELS.csv` measures a corpus from elsewhere instead (see
//! `corpus::external` for the columns; the form is made from the file's header).
//! `--write DIR` also writes each seed's corpus and labels (`corpus-SEED.csv`,
//! `labels-SEED.csv`) for `scripts/splink_dedupe.py`, the comparison in BENCHMARKS.md.
#![allow(clippy::unwrap_used, clippy::expect_used)]

#[path = "common/mod.rs"]
mod common;
#[path = "dedupe/corpus.rs"]
mod corpus;

use std::collections::HashMap;
use std::time::Instant;

use chrono::NaiveDateTime;
use diesel::prelude::*;
use onceform::base::secret::Secret;
use onceform::db::schema::{duplicate_pairs, submissions};
use onceform::db::Pool;
use onceform::domain::keyring::Keyring;
use onceform::services::lifecycle::import::{import, ImportOptions};

const FORM: &str = r#"
[forms.inquiry]
title = "Inquiry"
effects = []
default_region = "TW"

[forms.inquiry.duplicates]
window_hours = 72
hold_score = 0.8
other_regions = ["US"]

[[forms.inquiry.fields]]
name = "name"
type = "text"
required = true

[[forms.inquiry.fields]]
name = "email"
type = "email"
required = true

[[forms.inquiry.fields]]
name = "phone"
type = "phone"

[[forms.inquiry.fields]]
name = "company"
type = "text"

[[forms.inquiry.fields]]
name = "topic"
type = "select"
options = ["Sales", "Support", "Partnership", "Other"]

[[forms.inquiry.fields]]
name = "message"
type = "textarea"
required = true
"#;

#[derive(Default, Clone, Copy)]
struct Counts {
    items: usize,
    true_items: usize,
    repeats: usize,
    found: usize,
    same_sender_other_request: usize,
    other_people: usize,
}

impl Counts {
    fn precision(&self) -> f64 {
        self.true_items as f64 / self.items.max(1) as f64
    }
    fn recall(&self) -> f64 {
        self.found as f64 / self.repeats.max(1) as f64
    }
    fn f1(&self) -> f64 {
        let (p, r) = (self.precision(), self.recall());
        if p + r == 0.0 {
            0.0
        } else {
            2.0 * p * r / (p + r)
        }
    }
}

struct Run {
    rows: usize,
    refused: usize,
    queue: Counts,
    hold: Counts,
    listed_apart: usize,
    apart_that_repeat: usize,
    import_s: f64,
    rescreen_s: f64,
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let value = |name: &str| args.iter().position(|a| a == name).and_then(|i| args.get(i + 1)).cloned();
    let seeds: Vec<u64> = value("--seeds")
        .map_or_else(|| vec![1, 2, 3], |s| s.split(',').filter_map(|n| n.trim().parse().ok()).collect());
    let people = value("--people").and_then(|n| n.parse().ok()).unwrap_or(500usize);
    let backend = value("--backend").unwrap_or_else(|| "sqlite".into());
    let write = value("--write").map(std::path::PathBuf::from);
    let external = value("--corpus").map(|c| {
        let labels = value("--labels").expect("--corpus needs --labels");
        corpus::external(&std::fs::read_to_string(c).unwrap(), &std::fs::read_to_string(labels).unwrap())
    });
    println!("duplicate detection, {people} people per corpus, {backend}, seeds {seeds:?}");
    println!(
        "| seed | rows | repeats | refused | queue items | recall | precision | F1 | ≥ hold_score: recall | precision | same sender other request in queue | other people in queue | listed apart (of them repeats) | import rows/s | rescreen rows/s |"
    );
    println!("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|");
    let mut runs = Vec::new();
    let seeds = if external.is_some() { vec![0] } else { seeds };
    for seed in seeds {
        let start = NaiveDateTime::parse_from_str("2026-10-01 00:00:00", "%Y-%m-%d %H:%M:%S").unwrap();
        let (csv, rows, form) = match &external {
            Some(e) => e.clone(),
            None => {
                let rows = corpus::generate(seed, people);
                (corpus::to_csv(&rows, start), rows, FORM.to_string())
            }
        };
        if let Some(dir) = &write {
            std::fs::create_dir_all(dir).unwrap();
            std::fs::write(dir.join(format!("corpus-{seed}.csv")), &csv).unwrap();
            std::fs::write(dir.join(format!("labels-{seed}.csv")), corpus::labels_csv(&rows)).unwrap();
        }
        let run = measure(&backend, &rows, &csv, &form);
        let (q, h) = (&run.queue, &run.hold);
        println!(
            "| {seed} | {} | {} | {} | {} | {:.3} | {:.3} | {:.3} | {:.3} | {:.3} | {} ({:.1} %) | {} | {} ({}) | {:.0} | {:.0} |",
            run.rows,
            q.repeats,
            run.refused,
            q.items,
            q.recall(),
            q.precision(),
            q.f1(),
            h.recall(),
            h.precision(),
            q.same_sender_other_request,
            100.0 * q.same_sender_other_request as f64 / q.items.max(1) as f64,
            q.other_people,
            run.listed_apart,
            run.apart_that_repeat,
            run.rows as f64 / run.import_s,
            run.rows as f64 / run.rescreen_s,
        );
        runs.push(run);
    }
    let sum = |f: &dyn Fn(&Run) -> usize| runs.iter().map(f).sum::<usize>();
    let all = Counts {
        items: sum(&|r| r.queue.items),
        true_items: sum(&|r| r.queue.true_items),
        repeats: sum(&|r| r.queue.repeats),
        found: sum(&|r| r.queue.found),
        same_sender_other_request: sum(&|r| r.queue.same_sender_other_request),
        other_people: sum(&|r| r.queue.other_people),
    };
    println!(
        "all seeds: recall {:.3}, precision {:.3}, F1 {:.3}; same sender's other request {:.1} % of the queue; {} row(s) refused",
        all.recall(),
        all.precision(),
        all.f1(),
        100.0 * all.same_sender_other_request as f64 / all.items.max(1) as f64,
        sum(&|r| r.refused),
    );
}

fn measure(backend: &str, rows: &[corpus::Row], csv: &str, form: &str) -> Run {
    let db = common::Db::new(backend);
    let (_, config) = db.config(form);
    let pool = Pool::connect(&config.database).unwrap();
    let keyring = std::sync::Arc::new(Keyring::new(Secret::new("dedupe bench secret"), Vec::new()));
    let options = ImportOptions {
        form: "inquiry",
        source: "dedupe-bench",
        dry_run: false,
        with_effects: false,
        files: None,
    };
    let t = Instant::now();
    let report = import(&pool, &config, &keyring, csv, &options).unwrap();
    let import_s = t.elapsed().as_secs_f64();
    let t = Instant::now();
    onceform::services::duplicates::rescreen::rescreen(&config, &pool, &keyring, Some("inquiry"), None)
        .unwrap();
    let rescreen_s = t.elapsed().as_secs_f64();

    // Each row's submission, by the key import derives from its source_id (the row's index).
    let key_of = |i: usize| {
        let digest = keyring.digest(&format!("dedupe-bench\nid\n{i}"));
        onceform::domain::OperationId::imported(digest.split_once(':').unwrap().1).as_str().to_string()
    };
    let by_key: HashMap<String, usize> = (0..rows.len()).map(|i| (key_of(i), i)).collect();
    let stored: Vec<(String, String)> = onceform::with_conn!(&pool, |c| submissions::table
        .filter(submissions::form.eq("inquiry"))
        .select((submissions::id, submissions::operation_id))
        .load(c)
        .map_err(onceform::db::DbError::from))
    .unwrap();
    let row_of: HashMap<String, usize> =
        stored.into_iter().filter_map(|(id, key)| by_key.get(&key).map(|i| (id, *i))).collect();
    let pairs: Vec<(String, String, f64, String, String)> =
        onceform::with_conn!(&pool, |c| duplicate_pairs::table
            .select((
                duplicate_pairs::original_id,
                duplicate_pairs::duplicate_id,
                duplicate_pairs::score,
                duplicate_pairs::status,
                duplicate_pairs::reasons,
            ))
            .load(c)
            .map_err(onceform::db::DbError::from))
        .unwrap();
    let imported: Vec<usize> = row_of.values().copied().collect();
    let evaluate = |min: f64| {
        let mut c =
            Counts { repeats: imported.iter().filter(|i| rows[**i].repeat).count(), ..Counts::default() };
        let mut found = std::collections::HashSet::new();
        for (o, d, score, status, _) in &pairs {
            if status != "open" || *score < min {
                continue;
            }
            let (Some(&o), Some(&d)) = (row_of.get(o), row_of.get(d)) else { continue };
            c.items += 1;
            if rows[o].request == rows[d].request {
                c.true_items += 1;
                let later = if rows[d].at > rows[o].at { d } else { o };
                found.insert(later);
            } else if rows[o].person == rows[d].person {
                c.same_sender_other_request += 1;
            } else {
                c.other_people += 1;
            }
        }
        c.found = found.len();
        c
    };
    let apart: Vec<(usize, usize)> = pairs
        .iter()
        .filter(|p| p.3 == "same_sender")
        .filter_map(|(o, d, _, _, _)| Some((*row_of.get(o)?, *row_of.get(d)?)))
        .collect();
    if std::env::var("DEDUPE_EXPLAIN").is_ok() {
        let show = |i: usize| {
            format!(
                "{} | {} | {} | {} | {}",
                rows[i].name, rows[i].email, rows[i].phone, rows[i].topic, rows[i].message
            )
        };
        for (o, d, score, status, reasons) in &pairs {
            let (Some(&o), Some(&d)) = (row_of.get(o), row_of.get(d)) else { continue };
            let truth = rows[o].request == rows[d].request;
            if (status == "open") != truth && std::env::var("DEDUPE_EXPLAIN").as_deref() != Ok("missed") {
                println!(
                    "{} {status} {score:.2} {reasons}\n  {}\n  {}",
                    if truth { "MISSED" } else { "FALSE" },
                    show(o),
                    show(d)
                );
            }
        }
    }
    if std::env::var("DEDUPE_EXPLAIN").as_deref() == Ok("missed") {
        let paired: std::collections::HashSet<usize> = pairs
            .iter()
            .filter(|p| p.3 == "open")
            .filter_map(|(o, d, ..)| Some((*row_of.get(o)?, *row_of.get(d)?)))
            .filter(|(o, d)| rows[*o].request == rows[*d].request)
            .map(|(_, d)| d)
            .collect();
        for &i in imported.iter().filter(|i| rows[**i].repeat && !paired.contains(i)) {
            let first = rows.iter().position(|r| r.request == rows[i].request).unwrap();
            let show = |i: usize| {
                format!(
                    "{} | {} | {} | {} | {} | {}",
                    rows[i].name,
                    rows[i].email,
                    rows[i].phone,
                    rows[i].company,
                    rows[i].topic,
                    rows[i].message
                )
            };
            let any: Vec<String> = pairs
                .iter()
                .filter(|p| row_of.get(&p.1) == Some(&i))
                .map(|p| format!("{} {:.2} {}", p.3, p.2, p.4))
                .collect();
            println!("MISSED {any:?}\n  {}\n  {}", show(first), show(i));
        }
    }
    Run {
        rows: rows.len(),
        refused: report.rejected.len(),
        queue: evaluate(0.0),
        hold: evaluate(0.8),
        listed_apart: apart.len(),
        apart_that_repeat: apart.iter().filter(|(o, d)| rows[*o].request == rows[*d].request).count(),
        import_s,
        rescreen_s,
    }
}
