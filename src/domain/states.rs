//! Every state, status, role, channel and outcome stored in a TEXT column: one enum each,
//! written once with its text form. Diesel binds and reads them as `Text` on both backends;
//! text the enum does not know is a read error, never mapped to some default.

use diesel::backend::Backend;
use diesel::deserialize::{self, FromSql};
use diesel::serialize::{self, Output, ToSql};
use diesel::sql_types::Text;
use serde::{Deserialize, Serialize};

/// What code generic over these enums (the admin's status tabs) may use.
pub trait TextEnum: Copy + PartialEq + 'static {
    fn as_str(self) -> &'static str;
}

/// An enum with one text form per variant (`ALL`, `as_str`, `parse`), stored as `Text`.
macro_rules! text_enum {
    ($(#[$m:meta])* $name:ident { $($(#[$vm:meta])* $v:ident = $s:literal,)+ }) => {
        $(#[$m])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, diesel::expression::AsExpression, diesel::deserialize::FromSqlRow)]
        #[diesel(sql_type = Text)]
        pub enum $name { $($(#[$vm])* $v,)+ }
        impl $name {
            pub const ALL: [$name; [$($s),+].len()] = [$($name::$v),+];
            pub fn as_str(self) -> &'static str { match self { $($name::$v => $s,)+ } }
            pub fn parse(s: &str) -> Option<Self> { Self::ALL.into_iter().find(|v| v.as_str() == s) }
            fn from_text(s: String) -> deserialize::Result<Self> {
                Self::parse(&s).ok_or_else(|| format!("unknown {} `{s}`", stringify!($name)).into())
            }
        }
        impl TextEnum for $name {
            fn as_str(self) -> &'static str { $name::as_str(self) }
        }
        impl std::fmt::Display for $name {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result { f.write_str(self.as_str()) }
        }
        text_sql!($name);
    };
}

text_enum! {
    /// Why a submission is stored as spam (`submissions.spam_reason`); a spam row stored
    /// without one is a honeypot hit from before the column (`SpamReason::of_spam`).
    SpamReason {
        /// The hidden field bots fill in was filled in.
        Honeypot = "honeypot",
        /// Posted sooner than the form's `min_fill_seconds` after it was rendered.
        TooFast = "too-fast",
        /// A fill-time stamp that onceform did not sign.
        ForgedStamp = "forged-stamp",
        /// The form requires a captcha and none was sent.
        CaptchaMissing = "captcha-missing",
        /// The provider (or our own check) said no.
        CaptchaInvalid = "captcha-invalid",
        /// An answer that was already used for another submission.
        CaptchaReplayed = "captcha-replayed",
        /// The provider could not be asked (down, too slow, no secret): held for review.
        CaptchaUnverified = "captcha-unverified",
        /// A file of it is malware (the scan's own word): never released.
        Malware = "malware",
    }
}

impl SpamReason {
    /// The reason of a spam row as stored (`None`: a honeypot hit stored before the column).
    pub fn of_spam(stored: Option<SpamReason>) -> SpamReason {
        stored.unwrap_or(SpamReason::Honeypot)
    }
}

text_enum! {
    /// The state of a side-effect record (`side_effects.state`).
    #[derive(Serialize, Deserialize)]
    #[serde(rename_all = "SCREAMING_SNAKE_CASE")]
    EffectState {
        Pending = "PENDING",
        Sending = "SENDING",
        Sent = "SENT",
        Unknown = "UNKNOWN",
        FailedFinal = "FAILED_FINAL",
        Cancelled = "CANCELLED",
    }
}

text_enum! {
    /// What the malware scan said of a submission's file (`submission_files.scan`).
    ScanState {
        /// The form does not scan.
        NotScanned = "not_scanned",
        Clean = "clean",
        /// clamd was down and the form holds: the submission's effects wait for a scan.
        Pending = "pending",
        /// clamd was down and the form delivers anyway.
        Unscanned = "unscanned",
        Malware = "malware",
        /// clamd was reached but could not scan the file (over its stream limit, an error
        /// reply, no verdict in time) or the file was not in the store: whatever the form's
        /// `when_scanner_down`, the submission's effects are held for an admin.
        Unscannable = "unscannable",
    }
}

impl ScanState {
    /// The states that keep a submission's effects held: waiting for clamd, or a file it
    /// could not scan.
    pub const HOLDING: [ScanState; 2] = [ScanState::Pending, ScanState::Unscannable];

    /// Whether this file keeps its submission's effects held.
    pub fn holds(self) -> bool {
        ScanState::HOLDING.contains(&self)
    }

    /// How the admin's submission page names the state.
    pub fn label(self) -> &'static str {
        match self {
            ScanState::NotScanned => "not scanned (the form does not scan)",
            ScanState::Clean => "scanned: clean",
            ScanState::Pending => "waiting for the scanner",
            ScanState::Unscanned => "not scanned (the scanner was down; delivered)",
            ScanState::Malware => "malware",
            ScanState::Unscannable => "could not scan: held",
        }
    }
}

text_enum! {
    /// A conflict's review status (`conflicts.status`, `inbound_conflicts.status`).
    ConflictStatus {
        Open = "open",
        Dismissed = "dismissed",
        Accepted = "accepted",
    }
}

text_enum! {
    /// A possible duplicate's review status (`duplicate_pairs.status`).
    PairStatus {
        /// Linked on the accept path and not yet scored: not listed for review; a `hold`
        /// form's effects wait for it.
        Screening = "screening",
        Open = "open",
        NotDuplicate = "not_duplicate",
        Duplicate = "duplicate",
        /// The same sender's new request: listed apart, never held, nothing to decide.
        SameSender = "same_sender",
    }
}

text_enum! {
    /// A quarantined webhook body's status (`inbound_quarantine.status`).
    QuarantineStatus {
        Open = "open",
        Assigned = "assigned",
        Discarded = "discarded",
    }
}

text_enum! {
    /// An admin account's role (`admin_users.role`).
    Role {
        /// Reads and acts.
        Admin = "admin",
        /// Reads only.
        Viewer = "viewer",
    }
}

text_enum! {
    /// What a read API token may do (`api_tokens.scopes`, space-separated: `domain::Scopes`).
    ApiScope {
        /// `GET /api/v1/submissions` and one submission with its effects and pairs.
        ReadSubmissions = "read:submissions",
        /// `GET /api/v1/effects`.
        ReadEffects = "read:effects",
        /// `GET /api/v1/duplicates` and `POST /api/v1/duplicates/{id}/decision`.
        WriteDecisions = "write:decisions",
    }
}

text_enum! {
    /// How a submission arrived (`submissions.channel`, `deliveries.channel`).
    Channel {
        Api = "api",
        Html = "html",
        /// `onceform import`.
        Import = "import",
    }
}

text_enum! {
    /// What one delivery came to (`deliveries.outcome`). Requests refused before the accept
    /// transaction are counters, not rows (`request_log::refused`).
    DeliveryOutcome {
        Created = "created",
        Replayed = "replayed",
        Conflict = "conflict",
        InProgress = "in_progress",
        /// An issued operation ID past its `keys` window (410).
        Expired = "expired",
        /// Accepted but caught by the honeypot: stored as spam, no side effects.
        Spam = "spam",
    }
}

text_enum! {
    /// What one inbound webhook request came to (`inbound_deliveries.outcome`).
    InboundOutcome {
        /// A new event, stored with its handlers' records.
        Created = "created",
        /// The same content under a stored event ID.
        Replayed = "replayed",
        /// Different content under a stored event ID.
        Conflict = "conflict",
        /// No usable event ID: kept for an admin.
        Quarantined = "quarantined",
    }
}

text_enum! {
    /// What one attempt or lookup came to (`effect_attempts.outcome`).
    AttemptOutcome {
        Sent = "sent",
        Transient = "transient",
        Permanent = "permanent",
        Ambiguous = "ambiguous",
        LookupFound = "lookup_found",
        LookupAbsent = "lookup_absent",
        LookupFailed = "lookup_failed",
    }
}

text_enum! {
    /// What a row of the change feed records (`changes.kind`).
    ChangeKind {
        /// A submission was accepted (its effect records start PENDING, or CANCELLED by the
        /// recipient cap).
        Accepted = "accepted",
        /// A retry with different content under an accepted key (the original is untouched).
        Conflict = "conflict",
        /// A side-effect record of the submission changed state.
        EffectState = "effect_state",
        /// A duplicate pair naming the submission as the later one was decided (or reopened).
        Decision = "decision",
        /// The submission's content is gone (retention or erasure): a tombstone remains.
        Erased = "erased",
        /// The submission is gone altogether (retention of keys).
        Deleted = "deleted",
    }
}

impl ConflictStatus {
    /// Still waiting for a decision.
    pub fn is_open(self) -> bool {
        self == ConflictStatus::Open
    }
}

impl PairStatus {
    /// Listed for review and not decided yet.
    pub fn is_open(self) -> bool {
        self == PairStatus::Open
    }
}

impl Role {
    /// May act, not only read.
    pub fn is_admin(self) -> bool {
        self == Role::Admin
    }
}

impl AttemptOutcome {
    /// A reconciliation lookup's result, not a delivery attempt.
    pub fn is_lookup(self) -> bool {
        matches!(
            self,
            AttemptOutcome::LookupFound | AttemptOutcome::LookupAbsent | AttemptOutcome::LookupFailed
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn text_forms_round_trip() {
        for s in EffectState::ALL {
            assert_eq!(EffectState::parse(s.as_str()), Some(s));
            assert_eq!(serde_json::to_value(s).unwrap(), s.as_str());
        }
        for r in Role::ALL {
            assert_eq!(Role::parse(r.as_str()), Some(r));
        }
        assert_eq!(PairStatus::parse("Open"), None, "text forms are exact");
    }
}
