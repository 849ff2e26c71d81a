//! The request log: every HTTP request to a submit endpoint (a *delivery*, in the admin's
//! and the metrics' words; table `deliveries`), counted apart from submissions. It is not
//! about delivering side effects (that is `worker`). The requests the accept transaction saw
//! are rows (written at once, or queued by [`queue`]); those refused before it are counters
//! ([`refused`]).

use chrono::NaiveDateTime;
use uuid::Uuid;

pub mod queue;
pub mod refused;

pub use queue::RequestLog;
pub use refused::RefusedCounts;

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
        }
    }
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
