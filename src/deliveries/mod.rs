//! Deliveries: every HTTP request to a submit endpoint, counted apart from submissions.

use chrono::NaiveDateTime;
use uuid::Uuid;

pub mod log;

pub use log::DeliveryLog;

use crate::db::models::NewDelivery;

use crate::domain::SubmissionId;
pub use crate::domain::{Channel, DeliveryOutcome};

impl DeliveryOutcome {
    /// The status the client got for an outcome of the accept transaction.
    pub fn http_status(self, channel: Channel) -> u16 {
        match (self, channel) {
            (DeliveryOutcome::Created | DeliveryOutcome::Replayed | DeliveryOutcome::Spam, Channel::Html) => {
                303
            }
            (DeliveryOutcome::Created | DeliveryOutcome::Spam, _) => 201,
            (DeliveryOutcome::Replayed, _) => 200,
            (DeliveryOutcome::Conflict | DeliveryOutcome::InProgress, _) => 409,
            (DeliveryOutcome::Expired, _) => 410,
            (DeliveryOutcome::Invalid, _) => 422,
            (DeliveryOutcome::Rejected, _) => 400,
            (DeliveryOutcome::RateLimited, _) => 429,
        }
    }
}

/// A request refused before the accept transaction, to be recorded on its own.
#[derive(Debug, Clone)]
pub struct Refused {
    pub form: Option<String>,
    pub operation_id: Option<String>,
    pub channel: Channel,
    pub outcome: DeliveryOutcome,
    pub http_status: u16,
}

/// The delivery row of one request to a submit endpoint.
pub fn row(
    form: &str,
    operation_id: &str,
    submission_id: Option<&SubmissionId>,
    channel: Channel,
    outcome: DeliveryOutcome,
    received_at: NaiveDateTime,
) -> NewDelivery {
    NewDelivery {
        id: Uuid::now_v7().to_string(),
        form: Some(form.into()),
        operation_id: Some(operation_id.into()),
        submission_id: submission_id.cloned(),
        channel,
        outcome,
        http_status: i32::from(outcome.http_status(channel)),
        received_at,
    }
}

impl Refused {
    /// Its delivery row (the accept transaction writes the others itself).
    pub fn row(self) -> NewDelivery {
        NewDelivery {
            id: Uuid::now_v7().to_string(),
            form: self.form,
            operation_id: self.operation_id,
            submission_id: None,
            channel: self.channel,
            outcome: self.outcome,
            http_status: i32::from(self.http_status),
            received_at: crate::clock::now(),
        }
    }
}
