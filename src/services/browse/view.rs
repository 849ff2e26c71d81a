//! How the admin shows stored rows: a submission's spam badge and reason in words, its
//! stored fields, a duplicate pair seen from one of its sides. The database returns the
//! rows as stored (`db::admin::browse`).

use std::collections::BTreeMap;

use super::{RelatedPair, SubmissionRow};
use crate::domain::SpamReason;
use crate::services::duplicates::reason::Reason;

pub trait SubmissionView {
    /// Why it is spam (a spam row's; see `SpamReason::of_spam`).
    fn spam_reason(&self) -> SpamReason;
    /// The spam badge: `unverified` when the captcha could not be checked, else `spam`.
    fn spam_badge(&self) -> &'static str;
    /// Set aside because a file of it is malware: never released.
    fn is_malware(&self) -> bool;
    /// The stored fields (a JSON object of strings); once purged, only the consent answers
    /// a tombstone keeps.
    fn fields(&self) -> BTreeMap<String, String>;
}

impl SubmissionView for SubmissionRow {
    fn spam_reason(&self) -> SpamReason {
        SpamReason::of_spam(self.spam_reason)
    }

    fn spam_badge(&self) -> &'static str {
        match self.spam_reason {
            Some(SpamReason::CaptchaUnverified) => "unverified",
            _ => "spam",
        }
    }

    fn is_malware(&self) -> bool {
        self.spam_reason == Some(SpamReason::Malware)
    }

    fn fields(&self) -> BTreeMap<String, String> {
        let stored = self.fields_json.as_deref().or(self.consent_json.as_deref());
        crate::domain::stored_fields::shown(stored)
    }
}

pub trait PairView {
    /// How `submission_id` relates to the other side: ("duplicate of" | "original of", other id).
    fn seen_from(&self, submission_id: &str) -> (&'static str, &str);
    /// The detector's reasons.
    fn reason_list(&self) -> Vec<Reason>;
}

impl PairView for RelatedPair {
    fn seen_from(&self, submission_id: &str) -> (&'static str, &str) {
        if *self.duplicate_id == *submission_id {
            ("duplicate-of", &self.original_id)
        } else {
            ("original-of", &self.duplicate_id)
        }
    }

    fn reason_list(&self) -> Vec<Reason> {
        Reason::parse_list(&self.reasons)
    }
}
