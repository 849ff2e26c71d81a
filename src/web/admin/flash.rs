//! `?flash=`: the message a redirect after an action carries to the next page, as a known
//! code with at most a few numbers or references, never free text. A crafted link can only
//! show one of the messages below.

/// One known message: its code and its text, `{}` standing for each argument in order.
const MESSAGES: &[(&str, &str)] = &[
    ("effect_retry", "Retry: done."),
    ("effect_mark_sent", "Mark sent: done."),
    ("effect_mark_not_sent", "Mark not sent: done."),
    ("effect_cancel", "Cancel: done."),
    ("effect_replay", "Replay: done."),
    ("conflict_dismissed", "Conflict dismissed."),
    ("conflict_accepted", "Accepted as a new inquiry: {}."),
    ("pair_not_duplicate", "{} is not a duplicate of {}; {} held effect(s) released."),
    ("pair_duplicate", "{} marked a duplicate of {}; {} pending effect(s) cancelled."),
    ("pair_undone", "Decision undone; the pair is open again ({} effect(s) held)."),
    ("pairs_not_duplicate", "{} pair(s) marked not a duplicate; {} skipped (not open)."),
    ("pairs_duplicate", "{} pair(s) marked a duplicate; {} skipped (not open)."),
    ("select_pairs", "Select at least one pair."),
    ("submission_released", "Released as not spam: {} side effect(s) created."),
    ("user_password_set", "Password set; {} session(s) ended."),
    ("user_disabled", "User disabled; {} session(s) ended."),
    ("password_changed", "Password changed; your other sessions have ended."),
    ("inbound_discarded", "Delivery discarded."),
    ("inbound_assigned", "Event stored; its handlers will run."),
    ("inbound_assigned_replay", "That event ID was stored already with the same content."),
    ("inbound_assigned_conflict", "That event ID was stored with other content: kept as a conflict."),
    ("inbound_handler_replayed", "Handler replayed as batch {}."),
    ("api_token_revoked", "Token revoked: it opens nothing from now on."),
    (
        "test_submitted",
        "Test submission stored, marked test: it takes no side effect and is not screened for duplicates.",
    ),
    ("config_reloaded", "Configuration reloaded: {} form(s) in force."),
    (
        "config_not_reloaded",
        "The configuration was not reloaded: the forms in force are unchanged (the error is below).",
    ),
];

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

/// The text for a `?flash=` value, or `None` unless it is a known code with arguments of
/// the right number and shape.
pub fn message(raw: &str) -> Option<String> {
    let mut parts = raw.split('~');
    let code = parts.next()?;
    let (_, text) = MESSAGES.iter().find(|(c, _)| *c == code)?;
    let args: Vec<&str> = parts.collect();
    if args.len() != text.matches("{}").count() || !args.iter().all(|a| plain_arg(a)) {
        return None;
    }
    let mut out = String::new();
    let mut rest = *text;
    for a in args {
        let (before, after) = rest.split_once("{}")?;
        out.push_str(before);
        out.push_str(a);
        rest = after;
    }
    out.push_str(rest);
    Some(out)
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
        assert_eq!(message("conflict_dismissed").as_deref(), Some("Conflict dismissed."));
        let f = Flash::new("pair_duplicate").arg("OF-1D2E3-F4A5B").arg("OF-00000-AAAAA").arg(2);
        assert_eq!(
            message(&f.encode()).as_deref(),
            Some("OF-1D2E3-F4A5B marked a duplicate of OF-00000-AAAAA; 2 pending effect(s) cancelled.")
        );
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
            assert_eq!(message(bad), None, "{bad}");
        }
    }
}
