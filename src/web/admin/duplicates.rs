//! Suspected duplicates: pairs the detector stored, highest score first, both records side by
//! side with the reasons; "not a duplicate", "duplicate of", undo, and batch decisions. Every
//! repeat is paired with its cluster's first submission, so the pairs naming one original are
//! shown together as one cluster ("37 submissions from this sender in 72 h").

#[path = "duplicates_actions.rs"]
mod actions;

use std::collections::HashMap;

use actix_web::http::StatusCode;
use actix_web::{web, HttpResponse};
use askama::Template;

use super::conflicts::{compare, fields_of, FieldPair};
use super::guard::SessionUser;
use super::{blocking, db_failure_in, status_counts, when, Chrome, QueueQuery};
use crate::base::format::reference;
use crate::base::i18n::{Arg, Locale, TimeZone};
use crate::domain::{PairStatus, SubmissionId};
use crate::services::duplicates::queue::{queue, PairRow, Queue, SubmissionBrief};
use crate::web::render::html;
use crate::web::state::AppState;

pub fn routes(cfg: &mut web::ServiceConfig) {
    cfg.route("/admin/duplicates", web::get().to(list))
        .route("/admin/duplicates/batch", web::post().to(actions::batch))
        .route("/admin/duplicates/{id}/{action}", web::post().to(actions::act));
}

pub const STATUSES: [PairStatus; 4] =
    [PairStatus::Open, PairStatus::SameSender, PairStatus::NotDuplicate, PairStatus::Duplicate];
const PAGE_SIZE: i64 = 100;

/// One submission of a pair.
pub struct SideView {
    pub id: SubmissionId,
    pub reference: String,
    pub received: String,
    pub duplicate_of: Option<String>,
}

impl SideView {
    fn new(id: SubmissionId, s: Option<&SubmissionBrief>, zone: TimeZone) -> SideView {
        SideView {
            reference: reference(&id),
            received: s.map(|s| when(zone, s.received_at)).unwrap_or_default(),
            duplicate_of: s.and_then(|s| s.duplicate_of.as_deref()).map(reference),
            id,
        }
    }
}

pub struct PairView {
    pub id: String,
    pub form: String,
    pub score: String,
    pub reasons: Vec<String>,
    pub status: PairStatus,
    pub decided: Option<String>,
    pub original: SideView,
    pub duplicate: SideView,
    pub fields: Vec<FieldPair>,
    /// The canonical values matched on and the codes on each side (`duplicates::evidence`).
    pub evidence: Vec<String>,
}

/// A stored reason (`score::judge` writes them in English) in `locale`'s words; a reason of
/// no known shape as it is.
pub(super) fn reason_words(locale: Locale, reason: &str) -> String {
    let fixed = |key: &str| locale.text(key);
    let one = |key: &str, x: &str| locale.format(key, &[("a1", Arg::Str(x))]);
    match reason {
        "same email" => fixed("admin-reason-same-email"),
        "same email, written differently" => fixed("admin-reason-same-email-written"),
        "same phone" => fixed("admin-reason-same-phone"),
        "same phone, written differently" => fixed("admin-reason-same-phone-written"),
        "same name and company" => fixed("admin-reason-same-name-company"),
        "same name" => fixed("admin-reason-same-name"),
        "names alike" => fixed("admin-reason-names-alike"),
        "different product code" => fixed("admin-reason-different-code"),
        "different quantity" => fixed("admin-reason-different-quantity"),
        "same product code" => fixed("admin-reason-same-code"),
        "same quantity" => fixed("admin-reason-same-quantity"),
        "same sender, new request" => fixed("admin-pair-same_sender"),
        _ => {
            if let Some(p) = reason.strip_prefix("message ").and_then(|r| r.strip_suffix("% alike")) {
                one("admin-reason-message-alike", p)
            } else if let Some(gap) = reason.strip_prefix("sent ").and_then(|r| r.strip_suffix(" apart")) {
                one("admin-reason-sent-apart", &gap_words(locale, gap))
            } else if let Some((label, change)) =
                reason.strip_prefix("different ").and_then(|r| r.split_once(": "))
            {
                locale.format(
                    "admin-reason-different-choice",
                    &[("a1", Arg::Str(label)), ("a2", Arg::Str(change))],
                )
            } else if let Some(label) = reason.strip_prefix("same ") {
                one("admin-reason-same-choice", label)
            } else {
                reason.to_string()
            }
        }
    }
}

/// `12 min`, `5 h`, `3 days` in `locale`.
fn gap_words(locale: Locale, gap: &str) -> String {
    let Some((n, unit)) = gap.split_once(' ') else { return gap.to_string() };
    let Ok(n) = n.parse::<i64>() else { return gap.to_string() };
    let key = match unit {
        "min" => "admin-gap-minutes",
        "h" => "admin-gap-hours",
        "days" => "admin-gap-days",
        _ => return gap.to_string(),
    };
    locale.format(key, &[("n", Arg::Num(n))])
}

fn reasons_of(text: &str) -> Vec<String> {
    serde_json::from_str(text).unwrap_or_else(|_| vec![text.to_string()])
}

/// The pairs of one original on this page, highest score first.
pub struct ClusterView {
    pub original: SubmissionId,
    /// Submissions in the cluster (the original and every pair in this status naming it).
    pub size: i64,
    pub window_hours: u32,
    pub pairs: Vec<PairView>,
}

/// Groups `pairs` (highest score first) by original, each cluster where its best pair was.
fn clusters(
    pairs: Vec<PairView>,
    sizes: &HashMap<SubmissionId, i64>,
    window: impl Fn(&str) -> u32,
) -> Vec<ClusterView> {
    let mut out: Vec<ClusterView> = Vec::new();
    for p in pairs {
        match out.iter_mut().find(|c| c.original == p.original.id) {
            Some(c) => c.pairs.push(p),
            None => out.push(ClusterView {
                original: p.original.id.clone(),
                size: sizes.get(&p.original.id).copied().unwrap_or(1) + 1,
                window_hours: window(&p.form),
                pairs: vec![p],
            }),
        }
    }
    out
}

#[derive(Template)]
#[template(path = "admin/duplicates.html")]
struct ListPage {
    chrome: Chrome,
    status: PairStatus,
    counts: Vec<(PairStatus, i64)>,
    clusters: Vec<ClusterView>,
    /// Pairs listed apart as the same sender's new request.
    same_sender: i64,
    pairs_shown: usize,
    more: bool,
}

async fn list(state: web::Data<AppState>, user: SessionUser, q: web::Query<QueueQuery>) -> HttpResponse {
    let status = q.status(&STATUSES, PairStatus::Open);
    let pool = state.pool.clone();
    let read = move || queue(&pool, status, PAGE_SIZE + 1);
    let Queue { counts, mut pairs, submissions: subs, cluster_sizes: sizes } = match blocking(read).await {
        Ok(v) => v,
        Err(e) => return db_failure_in(user.locale, e),
    };
    let more = pairs.len() as i64 > PAGE_SIZE;
    pairs.truncate(PAGE_SIZE as usize);
    let subs: HashMap<&SubmissionId, &SubmissionBrief> = subs.iter().map(|s| (&s.id, s)).collect();
    let view = |p: PairRow| {
        let (o, d) = (subs.get(&p.original_id).copied(), subs.get(&p.duplicate_id).copied());
        let (of, df) = (
            fields_of(o.and_then(|s| s.fields_json.as_deref())),
            fields_of(d.and_then(|s| s.fields_json.as_deref())),
        );
        let fields = compare(state.forms().config.form(&p.form), user.locale, &of, &df);
        let evidence = state
            .config
            .form(&p.form)
            .map(|f| crate::services::duplicates::evidence::evidence(f, &of, &df, user.locale))
            .unwrap_or_default();
        PairView {
            evidence,
            score: format!("{:.2}", p.score),
            reasons: reasons_of(&p.reasons).iter().map(|r| reason_words(user.locale, r)).collect(),
            decided: p.decided_at.map(|t| {
                let at = when(user.zone, t);
                let who = p.decided_by.as_deref().unwrap_or("?");
                user.locale.format("admin-dup-decided-by", &[("date", Arg::Str(&at)), ("who", Arg::Str(who))])
            }),
            original: SideView::new(p.original_id, o, user.zone),
            duplicate: SideView::new(p.duplicate_id, d, user.zone),
            fields,
            id: p.id,
            form: p.form,
            status: p.status,
        }
    };
    let counts = status_counts(&STATUSES, &counts);
    let same_sender = counts.iter().find(|(s, _)| *s == PairStatus::SameSender).map_or(0, |(_, n)| *n);
    let pairs_shown = pairs.len();
    let sizes: HashMap<SubmissionId, i64> = sizes.into_iter().collect();
    let window = |form: &str| state.forms().config.form(form).map_or(0, |f| f.duplicates.window_hours);
    let page = ListPage {
        chrome: Chrome::new(&user, "duplicates", q.flash.as_deref()),
        status,
        counts,
        clusters: clusters(pairs.into_iter().map(view).collect(), &sizes, window),
        same_sender,
        pairs_shown,
        more,
    };
    html(StatusCode::OK, &page)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stored_reasons_are_shown_in_words() {
        let zh = |r: &str| reason_words(Locale::ZhTw, r);
        assert_eq!(zh("same email, written differently"), "相同電子郵件（寫法不同）");
        assert_eq!(zh("message 87% alike"), "訊息相似度 87%");
        assert_eq!(zh("sent 5 h apart"), "相隔 5 小時 送出");
        assert_eq!(zh("different topic: Sales → Support"), "topic 不同：Sales → Support");
        assert_eq!(zh("same sender, new request"), "同一寄件人的新需求");
        assert_eq!(reason_words(Locale::Ja, "sent 3 days apart"), "3 日 の間隔で送信");
        assert_eq!(reason_words(Locale::En, "sent 12 min apart"), "sent 12 min apart");
        assert_eq!(zh("something new"), "something new", "an unknown shape as it is");
    }
}
