//! At most one confirmation per recipient address per window and form, decided inside the
//! accept transaction by the recipient's email digest (see `db::recipient_cap`).

use chrono::{Duration, NaiveDateTime};

use super::plan::Plan;
use crate::config::FormConfig;
use crate::db::models::NewEffect;
use crate::db::recipient_cap::{RecipientCapStore, RECIPIENT_CAP};
use crate::db::DbError;
use crate::domain::transitions::Move;
use crate::domain::EffectKind;

/// Where `plan`'s confirmation is subject to the cap (a window, an address, the effect): the
/// window's start and the result body that says the confirmation was cancelled.
pub(super) fn window<'p>(form: &FormConfig, plan: &'p Plan) -> Option<(NaiveDateTime, &'p str)> {
    let applies = form.confirmation_window_minutes > 0
        && plan.submission.email_digest.is_some()
        && plan.effects.iter().any(|e| e.kind == EffectKind::CONFIRMATION_EMAIL);
    let since = plan.now() - Duration::minutes(i64::from(form.confirmation_window_minutes));
    plan.capped_body.as_deref().filter(|_| applies).map(|body| (since, body))
}

/// The result body that says the confirmation was cancelled, when the recipient's slot is
/// already taken within the window: the submission is then written capped from the start
/// (`capped`), and nothing is claimed.
pub(super) fn taken<'p, C: RecipientCapStore>(
    c: &mut C,
    form: &FormConfig,
    plan: &'p Plan,
) -> Result<Option<&'p str>, DbError> {
    let (Some((since, body)), Some(digest)) = (window(form, plan), plan.submission.email_digest.as_deref())
    else {
        return Ok(None);
    };
    Ok(c.confirmation_taken(&plan.submission.form, digest, since)?.then_some(body))
}

/// `effects` with the confirmation written as CANCELLED (`recipient_cap`), never held.
pub(super) fn capped(effects: &mut [NewEffect]) {
    for e in effects.iter_mut().filter(|e| e.kind == EffectKind::CONFIRMATION_EMAIL) {
        e.state = Move::CANCEL_PENDING.to();
        e.held = false;
        e.last_error = Some(RECIPIENT_CAP.into());
    }
}

/// Claims the recipient's slot for this submission's confirmation; when another
/// confirmation to the same address was planned within the window, this one is recorded
/// as CANCELLED (`recipient_cap`) and the result body that says so is returned.
pub(super) fn apply<C: RecipientCapStore>(
    c: &mut C,
    form: &FormConfig,
    plan: &Plan,
) -> Result<Option<String>, DbError> {
    let sub = &plan.submission;
    let confirmation = plan.effects.iter().find(|e| e.kind == EffectKind::CONFIRMATION_EMAIL);
    let (Some((since, body)), Some(digest), Some(effect)) =
        (window(form, plan), sub.email_digest.as_deref(), confirmation)
    else {
        return Ok(None);
    };
    if c.claim_confirmation(&sub.form, digest, plan.now(), since)? {
        return Ok(None);
    }
    c.cancel_capped(&effect.id, &sub.id, body, plan.now())?;
    Ok(Some(body.to_string()))
}
