//! What one delivery attempt, or one lookup, came to.

use std::time::Duration;

use crate::domain::AttemptOutcome;

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    /// Delivered; the provider's reference.
    Sent { provider_ref: String },
    /// Certainly not done and worth retrying (connect refused, 429, 503, SMTP 4xx).
    Transient { retry_after: Option<Duration> },
    /// Certainly not done and never will be (4xx, SMTP 5xx, a rule refusing it).
    Permanent,
    /// May or may not have taken effect (timeout, connection dropped after sending, 5xx).
    Ambiguous,
}

/// One attempt as recorded in the attempts log.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Report {
    pub outcome: Outcome,
    pub http_status: Option<u16>,
    pub smtp_code: Option<u16>,
    /// A short machine-readable class (`timeout`, `http_500`, `smtp_550`, …); no PII.
    pub error_class: Option<String>,
    /// What the vendor said of a refusal: its error message or the start of its body
    /// (`http::excerpt`: bounded, one line). It may name what the visitor typed, so erasure
    /// clears it with the rest of the person's records.
    pub detail: Option<String>,
}

impl Report {
    pub fn sent(provider_ref: impl Into<String>) -> Report {
        Report {
            outcome: Outcome::Sent { provider_ref: provider_ref.into() },
            http_status: None,
            smtp_code: None,
            error_class: None,
            detail: None,
        }
    }

    pub fn failed(outcome: Outcome, error_class: impl Into<String>) -> Report {
        Report {
            outcome,
            http_status: None,
            smtp_code: None,
            error_class: Some(error_class.into()),
            detail: None,
        }
    }

    /// With the vendor's words (see `detail`).
    pub fn with_detail(mut self, detail: Option<String>) -> Report {
        self.detail = detail;
        self
    }

    pub fn with_http(mut self, status: u16) -> Report {
        self.http_status = Some(status);
        self
    }

    pub fn with_smtp(mut self, code: Option<u16>) -> Report {
        self.smtp_code = code;
        self
    }

    /// The label stored in the attempts log.
    pub fn label(&self) -> AttemptOutcome {
        match self.outcome {
            Outcome::Sent { .. } => AttemptOutcome::Sent,
            Outcome::Transient { .. } => AttemptOutcome::Transient,
            Outcome::Permanent => AttemptOutcome::Permanent,
            Outcome::Ambiguous => AttemptOutcome::Ambiguous,
        }
    }
}

/// What a lookup by external reference found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Lookup {
    Found {
        provider_ref: String,
    },
    /// Certainly not there: safe to send again.
    Absent,
    /// The lookup itself failed; try it again later.
    Failed {
        error_class: String,
    },
}

impl Lookup {
    pub fn label(&self) -> AttemptOutcome {
        match self {
            Lookup::Found { .. } => AttemptOutcome::LookupFound,
            Lookup::Absent => AttemptOutcome::LookupAbsent,
            Lookup::Failed { .. } => AttemptOutcome::LookupFailed,
        }
    }
}
