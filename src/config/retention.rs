//! Retention settings: per form `[forms.F.retention]` windows, and `[purge]` for the pass.

use std::fmt;

use chrono::Duration;
use serde::{Deserialize, Deserializer};

use super::Config;

/// A duration written like `90d`, `12h`, `15m` or `30s`, parsed once.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct Window(Duration);

impl Window {
    pub fn parse(text: &str) -> Result<Window, String> {
        let t = text.trim();
        let bad = || format!("`{text}` is not a duration like 90d, 12h, 15m or 30s");
        let (n, unit) = t.split_at(t.len().saturating_sub(1));
        let n: i64 = n.parse().map_err(|_| bad())?;
        let seconds = match unit {
            "d" => 86_400,
            "h" => 3_600,
            "m" => 60,
            "s" => 1,
            _ => return Err(bad()),
        };
        match n {
            1..=36_500 if unit == "d" || n * seconds <= 36_500 * 86_400 => {
                Ok(Window(Duration::seconds(n * seconds)))
            }
            _ => Err(format!("`{text}` must be between 1s and 36500d")),
        }
    }

    pub fn duration(self) -> Duration {
        self.0
    }
}

impl fmt::Display for Window {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let s = self.0.num_seconds();
        match s {
            _ if s % 86_400 == 0 => write!(f, "{}d", s / 86_400),
            _ if s % 3_600 == 0 => write!(f, "{}h", s / 3_600),
            _ if s % 60 == 0 => write!(f, "{}m", s / 60),
            _ => write!(f, "{s}s"),
        }
    }
}

impl<'de> Deserialize<'de> for Window {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let text = String::deserialize(d)?;
        Window::parse(&text).map_err(serde::de::Error::custom)
    }
}

/// `[forms.F.retention]`: unset windows keep data for good.
#[derive(Debug, Clone, Copy, Default, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct RetentionConfig {
    /// After this, a submission's content goes (a tombstone stays).
    pub content: Option<Window>,
    /// After this, the tombstone goes too, and a late retry of an issued ID is 410.
    pub keys: Option<Window>,
    /// The latest retry the operator considers possible (e.g. an offline queue's limit):
    /// `check-config` warns when a window is shorter.
    pub max_retry_age: Option<Window>,
}

impl RetentionConfig {
    /// True when a window is set (the purge pass has work).
    pub fn any(&self) -> bool {
        self.content.is_some() || self.keys.is_some()
    }
}

/// `[purge]`: the retention pass inside `serve`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct PurgeConfig {
    /// Run the pass inside `serve` on a schedule.
    pub enabled: bool,
    pub interval_seconds: u64,
    /// Rows per transaction: the accept path never waits for more than one batch.
    pub batch: i64,
    /// Days the change feed (`/api/v1/changes`) keeps a change; a cursor from before that is
    /// expired.
    pub changes_days: u32,
}

impl Default for PurgeConfig {
    fn default() -> Self {
        Self { enabled: true, interval_seconds: 3600, batch: 500, changes_days: 30 }
    }
}

/// What one set of retention windows applies to.
pub struct Scope<'a> {
    /// The name its purged rows are counted under: the form's, a webhook source's
    /// `RecordKind::source_scope`.
    pub form: String,
    /// Where it is configured, for messages: `forms.NAME` or `hooks.NAME`.
    pub at: String,
    pub retention: &'a RetentionConfig,
    /// A webhook source's name: its quarantine goes after `content` too.
    pub hook_source: Option<&'a str>,
}

/// Every form's windows, then every webhook source's.
pub fn scopes(config: &Config) -> Vec<Scope<'_>> {
    let forms = config.forms.iter().map(|(name, form)| Scope {
        form: name.clone(),
        at: format!("forms.{name}"),
        retention: &form.retention,
        hook_source: None,
    });
    let hooks = config.hooks.iter().map(|(name, hook)| Scope {
        form: crate::domain::RecordKind::source_scope(name),
        at: format!("hooks.{name}"),
        retention: &hook.retention,
        hook_source: Some(name.as_str()),
    });
    forms.chain(hooks).collect()
}

/// Refusals: `keys` shorter than `content`, a batch or interval out of range.
pub fn problems(config: &Config) -> Vec<String> {
    let mut out = Vec::new();
    if !(1..=100_000).contains(&config.purge.batch) {
        out.push("purge.batch: must be between 1 and 100000".into());
    }
    if !(1..=36_500).contains(&config.purge.changes_days) {
        out.push("purge.changes_days: must be between 1 and 36500".into());
    }
    if !(1..=604_800).contains(&config.purge.interval_seconds) {
        out.push("purge.interval_seconds: must be between 1 and 604800".into());
    }
    for Scope { at, retention: r, .. } in scopes(config) {
        if let (Some(content), Some(keys)) = (r.content, r.keys) {
            if keys < content {
                out.push(format!(
                    "{at}.retention.keys: {keys} is shorter than content ({content}); the key must outlive the content"
                ));
            }
        }
    }
    out
}

/// Warnings: a window shorter than the latest retry the operator declares possible.
pub fn warnings(config: &Config) -> Vec<String> {
    let mut out = Vec::new();
    for Scope { at, retention: r, .. } in scopes(config) {
        let Some(max) = r.max_retry_age else { continue };
        for (what, window) in [("content", r.content), ("keys", r.keys)] {
            if let Some(w) = window.filter(|w| *w < max) {
                out.push(format!(
                    "{at}.retention.{what}: {w} is shorter than max_retry_age ({max}): \
                     a retry that late {}",
                    if what == "keys" {
                        "of a client-chosen key is taken as new"
                    } else {
                        "finds only a tombstone (it still replays)"
                    }
                ));
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_durations() {
        assert_eq!(Window::parse("90d").unwrap().duration(), Duration::days(90));
        assert_eq!(Window::parse("12h").unwrap().duration(), Duration::hours(12));
        assert_eq!(Window::parse("30s").unwrap().duration(), Duration::seconds(30));
        assert_eq!(Window::parse("90d").unwrap().to_string(), "90d");
        for bad in ["", "d", "12", "1w", "-3d", "0s", "9999999d"] {
            assert!(Window::parse(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn keys_shorter_than_content_is_refused_and_short_windows_warned() {
        let mut c = Config::builtin().unwrap();
        let r = &mut c.forms.get_mut("contact").unwrap().retention;
        r.content = Some(Window::parse("90d").unwrap());
        r.keys = Some(Window::parse("30d").unwrap());
        r.max_retry_age = Some(Window::parse("60d").unwrap());
        let p = problems(&c);
        assert!(p[0].contains("forms.contact.retention.keys: 30d is shorter than content (90d)"), "{p:?}");
        let w = warnings(&c);
        assert_eq!(w.len(), 1, "{w:?}");
        assert!(w[0].contains("retention.keys: 30d is shorter than max_retry_age (60d)"));
    }

    #[test]
    fn a_webhook_source_s_windows_are_checked_like_a_form_s() {
        let mut c = Config::builtin().unwrap();
        let hook = "verify = \"none\"\n[retention]\ncontent = \"30d\"\nkeys = \"7d\"";
        c.hooks.insert("helpdesk".into(), toml::from_str(hook).unwrap());
        let p = problems(&c);
        assert_eq!(p.len(), 1, "{p:?}");
        assert!(p[0].contains("hooks.helpdesk.retention.keys: 7d is shorter than content (30d)"), "{p:?}");
        let s = scopes(&c);
        let hook_scope = s.iter().find(|s| s.hook_source == Some("helpdesk")).unwrap();
        assert_eq!(hook_scope.form, "hook:helpdesk");
    }
}
