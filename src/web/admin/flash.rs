//! `?flash=`: the message a redirect after an action carries to the next page, as a known
//! code with at most a few numbers or references, never free text. A crafted link can only
//! show one of the messages below.

/// One known message: its code and how many arguments it takes; its text is the Fluent
/// message `admin-flash-CODE` (`locales/*/admin.ftl`), `$a1`, `$a2`, … the arguments in order.
const MESSAGES: &[(&str, usize)] = &[
    ("effect_retry", 0),
    ("effect_mark_sent", 0),
    ("effect_mark_not_sent", 0),
    ("effect_cancel", 0),
    ("effect_replay", 0),
    ("conflict_dismissed", 0),
    ("conflict_accepted", 1),
    ("pair_not_duplicate", 3),
    ("pair_duplicate", 3),
    ("pair_undone", 1),
    ("pairs_not_duplicate", 2),
    ("pairs_duplicate", 2),
    ("select_pairs", 0),
    ("submission_released", 1),
    ("user_password_set", 1),
    ("user_disabled", 1),
    ("password_changed", 0),
    ("inbound_discarded", 0),
    ("inbound_assigned", 0),
    ("inbound_assigned_replay", 0),
    ("inbound_assigned_conflict", 0),
    ("inbound_handler_replayed", 1),
    ("api_token_revoked", 0),
    ("language_saved", 0),
    ("test_submitted", 0),
    ("config_reloaded", 1),
    ("config_not_reloaded", 0),
    ("form_created", 0),
    ("form_saved", 0),
    ("form_unchanged", 0),
    ("form_deleted", 0),
];

use crate::base::i18n::{Arg, Locale};

/// A message to show after a redirect: a code of `MESSAGES` and its arguments.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Flash {
    code: &'static str,
    args: Vec<String>,
}

impl Flash {
    pub fn new(code: &'static str) -> Flash {
        Flash { code, args: Vec::new() }
    }

    /// Adds an argument: a count or a reference (anything else is dropped when shown).
    pub fn arg(mut self, value: impl std::fmt::Display) -> Flash {
        self.args.push(value.to_string());
        self
    }

    /// `code` or `code~arg~arg`, as carried in the URL.
    pub fn encode(&self) -> String {
        std::iter::once(self.code.to_string()).chain(self.args.iter().cloned()).collect::<Vec<_>>().join("~")
    }
}

/// The text for a `?flash=` value in `locale`, or `None` unless it is a known code with
/// arguments of the right number and shape.
pub fn message(raw: &str, locale: Locale) -> Option<String> {
    let mut parts = raw.split('~');
    let code = parts.next()?;
    let (code, count) = MESSAGES.iter().find(|(c, _)| *c == code)?;
    let args: Vec<&str> = parts.collect();
    if args.len() != *count || !args.iter().all(|a| plain_arg(a)) {
        return None;
    }
    const NAMES: [&str; 3] = ["a1", "a2", "a3"];
    let args: Vec<(&str, Arg<'_>)> = NAMES.iter().zip(&args).map(|(n, a)| (*n, Arg::Str(a))).collect();
    locale.lookup(&format!("admin-flash-{code}"), &args)
}

/// A count (`12`) or a reference (`OF-1D2E3-F4A5B`): digits, capitals A–F and dashes.
fn plain_arg(a: &str) -> bool {
    let count = !a.is_empty() && a.len() <= 9 && a.bytes().all(|b| b.is_ascii_digit());
    let reference = a.len() == 14
        && a.starts_with("OF-")
        && a[3..].bytes().enumerate().all(|(i, b)| {
            if i == 5 {
                b == b'-'
            } else {
                b.is_ascii_hexdigit() && !b.is_ascii_lowercase()
            }
        });
    count || reference
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_known_codes_with_plain_arguments_are_shown() {
        assert_eq!(message("conflict_dismissed", Locale::En).as_deref(), Some("Conflict dismissed."));
        let f = Flash::new("pair_duplicate").arg("OF-1D2E3-F4A5B").arg("OF-00000-AAAAA").arg(2);
        assert_eq!(
            message(&f.encode(), Locale::En).as_deref(),
            Some("OF-1D2E3-F4A5B marked a duplicate of OF-00000-AAAAA; 2 pending effect(s) cancelled.")
        );
        assert_eq!(
            message(&f.encode(), Locale::ZhTw).as_deref(),
            Some("OF-1D2E3-F4A5B 已標記為 OF-00000-AAAAA 的重複；已取消 2 個等待中的動作。")
        );
        for code in MESSAGES.iter().map(|(c, _)| *c) {
            for locale in Locale::ALL {
                assert!(locale.lookup(&format!("admin-flash-{code}"), &[]).is_some(), "{locale} {code}");
            }
        }
        for bad in [
            "Your account is locked: call +1 555 0100",
            "conflict_accepted~Visit evil.example",
            "conflict_accepted",
            "conflict_dismissed~3",
            "pairs_duplicate~1",
            "pairs_duplicate~1~2~3",
            "conflict_accepted~OF-1d2e3-f4a5b",
            "",
        ] {
            assert_eq!(message(bad, Locale::En), None, "{bad}");
        }
    }
}
