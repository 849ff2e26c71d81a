//! Everything the accept transaction writes, computed before it starts.

use std::sync::Arc;

use chrono::{Duration, NaiveDateTime};
use serde::Serialize;
use uuid::Uuid;

use super::Intake;
use crate::base::format::rfc3339;
use crate::config::Form;
use crate::db::models::{NewConflict, NewDelivery, NewEffect, NewSubmission, Submission, SubmissionFile};
use crate::domain::keyring::Keyring;
use crate::domain::{
    ConflictStatus, EffectId, EffectKind, EffectState, NormalisedFields, OperationId, ScanState, SubmissionId,
};
use crate::services::effects;
use crate::services::request_log::{self, Channel, DeliveryOutcome};

/// The result body of an acceptance and of every replay (CONTRACT "Submitting").
#[derive(Debug, Serialize)]
pub struct ResultBody<'a> {
    pub submission_id: &'a str,
    pub operation_id: &'a str,
    pub form: &'a str,
    pub status: &'a str,
    pub received_at: String,
    pub operation_expires_at: String,
    pub effects: Vec<EffectSummary<'a>>,
    /// The route that applied (`[[forms.F.routes]]`: its name, or `#INDEX`); absent when
    /// none did.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub route: Option<&'a str>,
    /// The version of the form the submission was accepted under (`config::definition`);
    /// absent for a form not read from TOML text.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub version: Option<&'a str>,
}

#[derive(Debug, Serialize)]
pub struct EffectSummary<'a> {
    pub kind: &'a str,
    pub state: EffectState,
}

/// A submission's content as a retry compares it: its normalised fields as JSON (stored), the
/// JSON its fingerprint digests (`NormalisedFields::content_json`), and that fingerprint under
/// the current key (`domain::fingerprint`).
pub(super) struct Content {
    pub json: String,
    /// Where it differs from `json` (a phone typed with separators).
    pub compared: Option<String>,
    pub fingerprint: String,
}

impl Content {
    pub fn of(keyring: &Keyring, fields: &NormalisedFields) -> Content {
        let json = fields.to_json();
        let compared = fields.compared_json();
        Content { fingerprint: keyring.digest(compared.as_deref().unwrap_or(&json)), json, compared }
    }

    /// Equals the stored submission's content.
    pub fn same_as(&self, keyring: &Keyring, stored: &Submission) -> bool {
        same_content(keyring, &self.fingerprint, self.compared.as_deref().unwrap_or(&self.json), stored)
    }
}

/// Content (`fingerprint` of `json`) equals the stored submission's, compared with the key
/// that digested the stored one (see `domain::keyring`).
fn same_content(keyring: &Keyring, fingerprint: &str, json: &str, stored: &Submission) -> bool {
    stored.fingerprint == fingerprint || keyring.matches(&stored.fingerprint, json)
}

pub(super) struct Plan {
    /// The form the submission is for.
    pub form: Form,
    pub submission: NewSubmission,
    pub effects: Vec<NewEffect>,
    /// The blobs its file fields name (with their scan verdicts).
    pub files: Vec<SubmissionFile>,
    /// A file waits for a scan: every effect is held until it is scanned.
    pub scan_hold: bool,
    /// The result body with the confirmation CANCELLED (recipient cap), if there is one.
    pub capped_body: Option<String>,
    channel: Channel,
    now: NaiveDateTime,
    /// An issued operation ID past its form's `keys` window: never accepted again.
    expired: bool,
    /// What digested the fingerprint and the contact, and compares a stored row's.
    keyring: Arc<Keyring>,
    /// The request as it came, to judge a retry under the version its key was accepted under.
    pub received: Option<super::AsReceived>,
    /// What the fingerprint digests where it differs from the stored fields (`Content::compared`).
    compared: Option<String>,
}

impl Plan {
    pub fn new(intake: Intake, keyring: &Arc<Keyring>) -> Plan {
        let content = Content::of(keyring, &intake.fields);
        Plan::with_content(intake, content, keyring)
    }

    /// `new`, with the content already digested (`Content::of(keyring, &intake.fields)`).
    pub fn with_content(intake: Intake, content: Content, keyring: &Arc<Keyring>) -> Plan {
        let now = crate::base::clock::now();
        let id = SubmissionId::generate();
        let keyless = intake.operation_id.is_none();
        let operation_id = intake.operation_id.clone().unwrap_or_else(OperationId::keyless);
        let form = &intake.form;
        let spam_reason = intake.fields.spam_reason();
        let spam = spam_reason.is_some();
        let keys = form.retention.keys.map(|w| w.duration());
        let expires = now + keys.unwrap_or_else(|| Duration::days(i64::from(form.operation_ttl_days)));
        let expired = match (intake.operation_id.as_ref().and_then(OperationId::issued_at), keys) {
            (Some(issued), Some(keys)) => issued + keys < now,
            _ => false,
        };
        // The first route that holds replaces the form's effects (and, at delivery, its notify).
        let routed = super::route::first(form, &super::route::Facts::of(form, &intake.fields));
        let route = routed.map(|(i, r)| r.label(i));
        let listed = routed.and_then(|(_, r)| r.effects.as_ref()).unwrap_or(&form.effects);
        let kinds: Vec<&EffectKind> = listed
            .iter()
            .filter(|k| effects::applies(k, form, &|name| intake.fields.get(name).is_some()))
            // A test submission takes no effect (nor lists one in its answer).
            .filter(|_| !intake.test)
            .collect();
        let mut files: Vec<SubmissionFile> = form
            .files(|name| intake.fields.get(name))
            .into_iter()
            .map(|(_, f)| SubmissionFile {
                submission_id: id.clone(),
                scan: intake.scans.get(&f.sha256).copied().unwrap_or(ScanState::NotScanned),
                sha256: f.sha256,
            })
            .collect();
        files.sort_by(|a, b| a.sha256.cmp(&b.sha256));
        files.dedup_by(|a, b| a.sha256 == b.sha256);
        let scan_hold = files.iter().any(|f| f.scan.holds());
        // Spam is answered like any acceptance but gets no side-effect records; so is a test.
        let effects = kinds
            .iter()
            .filter(|_| !spam && !intake.test)
            .map(|kind| NewEffect {
                id: EffectId::generate(),
                submission_id: id.clone(),
                kind: (*kind).clone().into(),
                batch: 0,
                effect_key: format!("{id}:{}:0", kind.as_str()),
                state: EffectState::Pending,
                held: scan_hold,
                last_error: None,
                next_attempt_at: now,
                created_at: now,
                updated_at: now,
            })
            .collect();
        let body_with = |capped: bool| {
            let state = |k: &EffectKind| match capped && *k == EffectKind::CONFIRMATION_EMAIL {
                true => EffectState::Cancelled,
                false => EffectState::Pending,
            };
            let body = ResultBody {
                submission_id: &id,
                operation_id: operation_id.as_str(),
                form: intake.form.name(),
                status: "accepted",
                received_at: rfc3339(now),
                operation_expires_at: rfc3339(expires),
                effects: kinds.iter().map(|k| EffectSummary { kind: k.as_str(), state: state(k) }).collect(),
                route: route.as_deref(),
                version: intake.form.version(),
            };
            serde_json::to_string(&body).unwrap_or_default()
        };
        let response_body = body_with(false);
        // The body to store instead when the recipient cap cancels the confirmation.
        let capped_body =
            (!spam && kinds.contains(&&EffectKind::CONFIRMATION_EMAIL)).then(|| body_with(true));
        // Matched by their canonical forms (E.164, folded email without +tag, …), keyed.
        let contact =
            crate::services::duplicates::canonical::Contact::of(form, |name| intake.fields.get(name))
                .digests(keyring);
        let submission = NewSubmission {
            id: id.clone(),
            form: intake.form.name().to_string(),
            operation_id: operation_id.as_str().into(),
            fingerprint: content.fingerprint,
            fields_json: Some(content.json),
            response_body,
            channel: intake.channel,
            keyless,
            spam,
            spam_reason,
            email_digest: contact.email,
            phone_digest: contact.phone,
            name_digest: contact.name,
            received_at: now,
            operation_expires_at: expires,
            journey_id: intake.fields.journey_id.clone(),
            locale: intake.fields.locale.map(String::from),
            route,
            form_version: intake.form.version().map(String::from),
            test: intake.test,
        };
        let keyring = keyring.clone();
        Plan {
            form: intake.form,
            submission,
            effects,
            files,
            scan_hold,
            capped_body,
            channel: intake.channel,
            now,
            expired,
            keyring,
            received: intake.received,
            compared: content.compared,
        }
    }

    pub fn expired(&self) -> bool {
        self.expired
    }

    /// This plan's content equals the stored submission's (`Content::same_as`).
    pub fn same_content(&self, stored: &Submission) -> bool {
        let sub = &self.submission;
        let digested = self.compared.as_deref().or(sub.fields_json.as_deref()).unwrap_or_default();
        same_content(&self.keyring, &sub.fingerprint, digested, stored)
    }

    /// `content` equals the stored submission's.
    pub fn same_as(&self, content: &Content, stored: &Submission) -> bool {
        content.same_as(&self.keyring, stored)
    }

    pub fn keyring(&self) -> &Keyring {
        &self.keyring
    }

    pub fn now(&self) -> NaiveDateTime {
        self.now
    }

    /// The plan as if made at `now`.
    #[cfg(test)]
    pub(super) fn made_at(mut self, now: NaiveDateTime) -> Plan {
        (self.now, self.submission.received_at) = (now, now);
        self
    }

    pub fn conflict_with(&self, original_id: &SubmissionId) -> NewConflict {
        NewConflict {
            id: Uuid::now_v7().to_string(),
            submission_id: original_id.clone(),
            fingerprint: self.submission.fingerprint.clone(),
            fields_json: self.submission.fields_json.clone(),
            status: ConflictStatus::Open,
            attempts: 1,
            first_seen_at: self.now,
            last_seen_at: self.now,
        }
    }

    pub fn delivery(&self, outcome: DeliveryOutcome, submission_id: Option<&SubmissionId>) -> NewDelivery {
        let sub = &self.submission;
        request_log::row(&sub.form, &sub.operation_id, submission_id, self.channel, outcome, self.now)
    }
}
