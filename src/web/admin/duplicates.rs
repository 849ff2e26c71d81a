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
use crate::base::i18n::{Arg, TimeZone};
use crate::domain::{PairStatus, SubmissionId};
use crate::services::duplicates::evidence::evidence;
use crate::services::duplicates::queue::{queue, PairRow, Queue, SubmissionBrief};
use crate::services::duplicates::reason::Reason;
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
    let forms = state.forms();
    let view = |p: PairRow| {
        let (o, d) = (subs.get(&p.original_id).copied(), subs.get(&p.duplicate_id).copied());
        let (of, df) = (
            fields_of(o.and_then(|s| s.fields_json.as_deref())),
            fields_of(d.and_then(|s| s.fields_json.as_deref())),
        );
        let form = forms.config.form(&p.form);
        let fields = compare(form, user.locale, &of, &df);
        let evidence = form.map(|f| evidence(f, &of, &df, user.locale)).unwrap_or_default();
        PairView {
            evidence,
            score: format!("{:.2}", p.score),
            reasons: Reason::parse_list(&p.reasons).iter().map(|r| r.words(user.locale, form)).collect(),
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
    let window = |form: &str| forms.config.form(form).map_or(0, |f| f.duplicates.window_hours);
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
