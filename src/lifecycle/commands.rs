//! The lifecycle subcommands: `purge`, `erase`, `import`.

use std::path::PathBuf;

use super::{erase, import, purge};
use crate::clock::now;
use crate::config::Config;
use crate::db::Writes;

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

/// Parses the arguments after `purge`, `erase` or `import`.
pub fn parse(command: &str, args: &mut impl Iterator<Item = String>) -> Result<LifecycleCommand, String> {
    let mut rest: Vec<String> = args.collect();
    let flag = |rest: &mut Vec<String>, name: &str| match rest.iter().position(|a| a == name) {
        Some(i) => {
            rest.remove(i);
            true
        }
        None => false,
    };
    let value = |rest: &mut Vec<String>, name: &str| -> Result<Option<String>, String> {
        match rest.iter().position(|a| a == name) {
            Some(i) if i + 1 < rest.len() => {
                let v = rest.remove(i + 1);
                rest.remove(i);
                Ok(Some(v))
            }
            Some(_) => Err(format!("{name} needs a value")),
            None => Ok(None),
        }
    };
    // `--config` may follow the command: leave it for the caller's parser.
    let config = value(&mut rest, "--config")?;
    let parsed = match command {
        "purge" => LifecycleCommand::Purge,
        "erase" => {
            let dry_run = flag(&mut rest, "--dry-run");
            let (email, phone) = (value(&mut rest, "--email")?, value(&mut rest, "--phone")?);
            if email.is_some() == phone.is_some() {
                return Err("erase needs one of --email E or --phone P".into());
            }
            LifecycleCommand::Erase { email, phone, dry_run }
        }
        _ => {
            let dry_run = flag(&mut rest, "--dry-run");
            let with_effects = flag(&mut rest, "--with-effects");
            let form = value(&mut rest, "--form")?.ok_or("import needs --form F")?;
            let source = value(&mut rest, "--source")?.unwrap_or_else(|| "import".into());
            let encoding = value(&mut rest, "--encoding")?;
            if let Some(e) = &encoding {
                super::csv::encoding_named(e)?;
            }
            let file = match rest.iter().position(|a| !a.starts_with('-')) {
                Some(i) => PathBuf::from(rest.remove(i)),
                None => return Err("import needs a CSV file".into()),
            };
            LifecycleCommand::Import { form, file, source, dry_run, with_effects, encoding }
        }
    };
    if let Some(unknown) = rest.first() {
        return Err(format!("unexpected argument `{unknown}`"));
    }
    if let Some(c) = config {
        std::env::set_var("ONCEFORM_CONFIG", c);
    }
    Ok(parsed)
}

pub fn run(command: &LifecycleCommand, config: &Config) -> anyhow::Result<()> {
    let pool = super::connect(config)?;
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
            let person = match (email, phone) {
                (Some(e), _) => erase::Person::Email(e.clone()),
                (None, Some(p)) => erase::Person::Phone(p.clone()),
                (None, None) => anyhow::bail!("erase needs --email or --phone"),
            };
            let files = erase::Files::of(config);
            let report = erase::erase(&pool, &files, &person, *dry_run, &erase::Actor::cli())?;
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
            let options =
                import::ImportOptions { form, source, dry_run: *dry_run, with_effects: *with_effects };
            for line in import::import(&pool, config, &text, &options)?.lines() {
                println!("{line}");
            }
            Ok(())
        }
    }
}
