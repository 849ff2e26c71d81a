//! Why the detector paired two submissions, typed. A reason is stored (`duplicate_pairs.reasons`,
//! a JSON array) and returned by the read API as its English sentence (`Display`), which
//! `Reason::parse` reads back; the admin pages say it in the admin's language (`words`). The
//! sentences are the stored format: change a `Display` arm only with its `parse` arm (the
//! round-trip test holds them together). Reasons name fields and choices, never a sender's data.

use std::fmt;

use crate::base::i18n::{Arg, Locale};
use crate::config::FormConfig;

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Reason {
    /// Both were sent without an operation ID, with identical content.
    KeylessRepeat,
    SameEmail {
        written_differently: bool,
    },
    SamePhone {
        written_differently: bool,
    },
    SameNameAndCompany,
    SameName,
    NamesAlike,
    /// The free text alike, in percent.
    MessageAlike(u32),
    SentApart(Gap),
    DifferentCode,
    DifferentQuantity,
    SameCode,
    SameQuantity,
    /// The same option of the choice field `field` (its name).
    SameChoice {
        field: String,
    },
    /// Another option of `field`: `was` on the earlier submission, `now` on the later.
    DifferentChoice {
        field: String,
        was: String,
        now: String,
    },
    /// The same sender asking for something else.
    SameSenderNewRequest,
    /// A sentence of no known shape (an older release's, or written by hand), as it is.
    Other(String),
}

/// The time between two submissions, rounded down to the unit it is said in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Gap {
    Minutes(i64),
    Hours(i64),
    Days(i64),
}

impl Gap {
    pub fn of_minutes(minutes: i64) -> Gap {
        match minutes {
            ..=119 => Gap::Minutes(minutes),
            120..=2879 => Gap::Hours(minutes / 60),
            _ => Gap::Days(minutes / 1440),
        }
    }

    fn parse(text: &str) -> Option<Gap> {
        let (n, unit) = text.split_once(' ')?;
        let n = n.parse().ok()?;
        match unit {
            "min" => Some(Gap::Minutes(n)),
            "h" => Some(Gap::Hours(n)),
            "days" => Some(Gap::Days(n)),
            _ => None,
        }
    }

    fn words(self, locale: Locale) -> String {
        let (key, n) = match self {
            Gap::Minutes(n) => ("admin-gap-minutes", n),
            Gap::Hours(n) => ("admin-gap-hours", n),
            Gap::Days(n) => ("admin-gap-days", n),
        };
        locale.format(key, &[("n", Arg::Num(n))])
    }
}

impl fmt::Display for Gap {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Gap::Minutes(n) => write!(f, "{n} min"),
            Gap::Hours(n) => write!(f, "{n} h"),
            Gap::Days(n) => write!(f, "{n} days"),
        }
    }
}

/// The reasons of one fixed sentence each, and those sentences: what `parse` reads and
/// `Display` writes.
const FIXED: [(Reason, &str); 13] = [
    (Reason::KeylessRepeat, "identical content, sent without an operation ID"),
    (Reason::SameEmail { written_differently: false }, "same email"),
    (Reason::SameEmail { written_differently: true }, "same email, written differently"),
    (Reason::SamePhone { written_differently: false }, "same phone"),
    (Reason::SamePhone { written_differently: true }, "same phone, written differently"),
    (Reason::SameNameAndCompany, "same name and company"),
    (Reason::SameName, "same name"),
    (Reason::NamesAlike, "names alike"),
    (Reason::DifferentCode, "different product code"),
    (Reason::DifferentQuantity, "different quantity"),
    (Reason::SameCode, "same product code"),
    (Reason::SameQuantity, "same quantity"),
    (Reason::SameSenderNewRequest, "same sender, new request"),
];

impl Reason {
    /// A stored sentence read back; one of no known shape as `Other`.
    pub fn parse(text: &str) -> Reason {
        let fixed = FIXED.iter().find(|(_, sentence)| *sentence == text).map(|(r, _)| r.clone());
        fixed.or_else(|| Self::parse_shaped(text)).unwrap_or_else(|| Reason::Other(text.to_string()))
    }

    fn parse_shaped(text: &str) -> Option<Reason> {
        if let Some(p) = text.strip_prefix("message ").and_then(|r| r.strip_suffix("% alike")) {
            return p.parse().ok().map(Reason::MessageAlike);
        }
        if let Some(gap) = text.strip_prefix("sent ").and_then(|r| r.strip_suffix(" apart")) {
            return Gap::parse(gap).map(Reason::SentApart);
        }
        if let Some((field, change)) = text.strip_prefix("different ").and_then(|r| r.split_once(": ")) {
            let (was, now) = change.split_once(" → ")?;
            return Some(Reason::DifferentChoice { field: field.into(), was: was.into(), now: now.into() });
        }
        text.strip_prefix("same ").map(|field| Reason::SameChoice { field: field.into() })
    }

    /// The stored list (a JSON array of sentences; anything else as one sentence).
    pub fn parse_list(stored: &str) -> Vec<Reason> {
        match serde_json::from_str::<Vec<String>>(stored) {
            Ok(list) => list.iter().map(|r| Reason::parse(r)).collect(),
            Err(_) => vec![Reason::Other(stored.to_string())],
        }
    }

    /// `reasons` as they are stored.
    pub fn store_list(reasons: &[Reason]) -> String {
        let sentences: Vec<String> = reasons.iter().map(Reason::to_string).collect();
        serde_json::to_string(&sentences).unwrap_or_else(|_| "[]".into())
    }

    /// `list` as the read API returns it: the stored sentences.
    pub fn sentences(stored: &str) -> Vec<String> {
        Reason::parse_list(stored).iter().map(Reason::to_string).collect()
    }

    /// In `locale`'s words, a choice field by its label in `form` (the pair's form, when it is
    /// still defined) and its options as `form` shows them.
    pub fn words(&self, locale: Locale, form: Option<&FormConfig>) -> String {
        let field = |name: &str| form.and_then(|f| f.fields.iter().find(|x| x.name == name).map(|x| (f, x)));
        let label = |name: &str| {
            field(name).map_or_else(|| name.to_string(), |(f, x)| f.admin_label(x, locale).to_string())
        };
        let option = |name: &str, value: &str| {
            field(name).map_or_else(|| value.to_string(), |(f, x)| f.option_in(x, value, locale).to_string())
        };
        let text = |key: &str| locale.text(key);
        match self {
            Reason::KeylessRepeat => text("admin-reason-keyless-repeat"),
            Reason::SameEmail { written_differently: false } => text("admin-reason-same-email"),
            Reason::SameEmail { written_differently: true } => text("admin-reason-same-email-written"),
            Reason::SamePhone { written_differently: false } => text("admin-reason-same-phone"),
            Reason::SamePhone { written_differently: true } => text("admin-reason-same-phone-written"),
            Reason::SameNameAndCompany => text("admin-reason-same-name-company"),
            Reason::SameName => text("admin-reason-same-name"),
            Reason::NamesAlike => text("admin-reason-names-alike"),
            Reason::MessageAlike(p) => {
                locale.format("admin-reason-message-alike", &[("a1", Arg::Num(i64::from(*p)))])
            }
            Reason::SentApart(gap) => {
                locale.format("admin-reason-sent-apart", &[("a1", Arg::Str(&gap.words(locale)))])
            }
            Reason::DifferentCode => text("admin-reason-different-code"),
            Reason::DifferentQuantity => text("admin-reason-different-quantity"),
            Reason::SameCode => text("admin-reason-same-code"),
            Reason::SameQuantity => text("admin-reason-same-quantity"),
            Reason::SameChoice { field } => {
                locale.format("admin-reason-same-choice", &[("a1", Arg::Str(&label(field)))])
            }
            Reason::DifferentChoice { field, was, now } => {
                let change = format!("{} → {}", option(field, was), option(field, now));
                locale.format(
                    "admin-reason-different-choice",
                    &[("a1", Arg::Str(&label(field))), ("a2", Arg::Str(&change))],
                )
            }
            Reason::SameSenderNewRequest => text("admin-pair-same_sender"),
            Reason::Other(text) => text.clone(),
        }
    }
}

impl fmt::Display for Reason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if let Some((_, sentence)) = FIXED.iter().find(|(r, _)| r == self) {
            return f.write_str(sentence);
        }
        match self {
            Reason::MessageAlike(p) => write!(f, "message {p}% alike"),
            Reason::SentApart(gap) => write!(f, "sent {gap} apart"),
            Reason::SameChoice { field } => write!(f, "same {field}"),
            Reason::DifferentChoice { field, was, now } => write!(f, "different {field}: {was} → {now}"),
            Reason::Other(text) => f.write_str(text),
            // Every other reason is in `FIXED` (the round-trip test holds them).
            _ => Ok(()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::Config;

    fn every_shape() -> Vec<Reason> {
        vec![
            Reason::KeylessRepeat,
            Reason::SameEmail { written_differently: false },
            Reason::SameEmail { written_differently: true },
            Reason::SamePhone { written_differently: false },
            Reason::SamePhone { written_differently: true },
            Reason::SameNameAndCompany,
            Reason::SameName,
            Reason::NamesAlike,
            Reason::MessageAlike(87),
            Reason::SentApart(Gap::Minutes(12)),
            Reason::SentApart(Gap::Hours(5)),
            Reason::SentApart(Gap::Days(3)),
            Reason::DifferentCode,
            Reason::DifferentQuantity,
            Reason::SameCode,
            Reason::SameQuantity,
            Reason::SameChoice { field: "topic".into() },
            Reason::DifferentChoice { field: "topic".into(), was: "Sales".into(), now: "Support".into() },
            Reason::SameSenderNewRequest,
            Reason::Other("something new".into()),
        ]
    }

    #[test]
    fn every_reason_reads_back_as_it_was_stored() {
        let all = every_shape();
        assert_eq!(Reason::parse_list(&Reason::store_list(&all)), all);
    }

    #[test]
    fn every_reason_has_words_in_every_locale() {
        for locale in Locale::ALL {
            for r in every_shape().iter().filter(|r| !matches!(r, Reason::Other(_))) {
                let said = r.words(locale, None);
                assert!(!said.starts_with("admin-"), "{locale:?} lacks the words for {r:?}: {said}");
            }
        }
    }

    #[test]
    fn stored_reasons_are_said_in_the_admins_words() {
        let form = &Config::builtin().unwrap().forms["contact"];
        let zh = |r: &str| Reason::parse(r).words(Locale::ZhTw, None);
        assert_eq!(zh("same email, written differently"), "相同電子郵件（寫法不同）");
        assert_eq!(zh("message 87% alike"), "訊息相似度 87%");
        assert_eq!(zh("sent 5 h apart"), "相隔 5 小時 送出");
        assert_eq!(zh("same sender, new request"), "同一寄件人的新需求");
        assert_eq!(zh("something new"), "something new", "an unknown shape as it is");
        assert_eq!(Reason::parse("sent 3 days apart").words(Locale::Ja, None), "3 日 の間隔で送信");
        assert_eq!(Reason::parse("sent 12 min apart").words(Locale::En, None), "sent 12 min apart");
        let changed = Reason::parse("different topic: Sales → Support");
        assert_eq!(changed.words(Locale::ZhTw, None), "topic 不同：Sales → Support");
        assert_eq!(
            changed.words(Locale::En, Some(form)),
            "different Topic: Sales → Support",
            "by the form's label"
        );
        assert_ne!(
            zh("identical content, sent without an operation ID"),
            "identical content, sent without an operation ID"
        );
    }
}
