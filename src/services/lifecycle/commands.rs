//! The lifecycle subcommands: `purge`, `erase`, `import` (parsed by `cli`).

use std::path::PathBuf;
use std::sync::Arc;

use super::{erase, import, purge};
use crate::base::clock::now;
use crate::config::Config;
use crate::db::{Pool, Writes};
use crate::domain::keyring::Keyring;

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LifecycleCommand {
    Purge,
    Erase {
        email: Option<String>,
        phone: Option<String>,
        dry_run: bool,
    },
    Import {
        form: String,
        file: PathBuf,
        source: String,
        dry_run: bool,
        with_effects: bool,
        encoding: Option<String>,
    },
}

/// Runs a parsed lifecycle command on the store `cli` opened (`app::startup::open_store`),
/// digesting with its keyring.
pub fn run(
    command: &LifecycleCommand,
    config: &Config,
    pool: &Pool,
    keyring: &Arc<Keyring>,
) -> anyhow::Result<()> {
    match command {
        LifecycleCommand::Purge => {
            let report = purge::run_pass(&Writes::pooled(pool.clone()), config, now())?;
            for (form, kind, n) in &report.purged {
                let what = match *kind {
                    "content" => "content purged",
                    "quarantine" => "quarantined deliveries deleted",
                    _ => "tombstones deleted",
                };
                println!("{form}: {n} {what}");
            }
            for (form, n) in &report.caps {
                println!("{form}: {n} confirmation caps deleted (window passed)");
            }
            println!("purged {} row(s) in {} ms", report.total(), report.duration_ms);
            Ok(())
        }
        LifecycleCommand::Erase { email, phone, dry_run } => {
            // `--email` wins when both are given.
            let phone = phone.as_deref().filter(|_| email.is_none());
            let person =
                erase::Person::named(email.as_deref(), phone).map_err(|e| anyhow::anyhow!("erase: {e}"))?;
            let files = erase::Files::of(config);
            let consent = config.consent_fields();
            let report =
                erase::erase(pool, keyring, &files, &consent, &person, *dry_run, &erase::Actor::cli())?;
            for line in report.lines() {
                println!("{line}");
            }
            Ok(())
        }
        LifecycleCommand::Import { form, file, source, dry_run, with_effects, encoding } => {
            let bytes =
                std::fs::read(file).map_err(|e| anyhow::anyhow!("cannot read {}: {e}", file.display()))?;
            let declared = encoding
                .as_deref()
                .map(super::csv::encoding_named)
                .transpose()
                .map_err(anyhow::Error::msg)?;
            let text = super::csv::decode(&bytes, declared)
                .map_err(|e| anyhow::anyhow!("{}: {e}", file.display()))?;
            // A file field's cells name files in the CSV's own folder.
            let dir = file.parent().unwrap_or(std::path::Path::new("."));
            let files = crate::services::files::Files::stored(&config.server, &config.database);
            let options = import::ImportOptions {
                form,
                source,
                dry_run: *dry_run,
                with_effects: *with_effects,
                files: Some((dir, &files)),
            };
            for line in import::import(pool, config, keyring, &text, &options)?.lines() {
                println!("{line}");
            }
            Ok(())
        }
    }
}
