//! `/admin/forms/{form}/versions`: every version of a form seen in force (admin or viewer),
//! the submissions accepted under each, and a line diff of two versions' definitions
//! (`?from=V&to=V`; by default the one before the latest and the latest).

use actix_web::http::StatusCode;
use actix_web::{web, HttpResponse};
use askama::Template;
use percent_encoding::{utf8_percent_encode, AsciiSet, NON_ALPHANUMERIC};
use serde::Deserialize;

use super::guard::SessionUser;
use super::{blocking, db_failure_in, Chrome};
use crate::config::definition::line_diff;
use crate::services::form_versions::{history, FormVersion};
use crate::web::render::html;
use crate::web::state::AppState;

pub fn routes(cfg: &mut web::ServiceConfig) {
    cfg.route("/admin/forms/{form}/versions", web::get().to(versions));
}

/// A path segment's characters left as they are (RFC 3986 unreserved).
const SEGMENT: &AsciiSet = &NON_ALPHANUMERIC.remove(b'-').remove(b'.').remove(b'_').remove(b'~');

/// The versions page of `form`.
pub fn href(form: &str) -> String {
    format!("/admin/forms/{}/versions", utf8_percent_encode(form, SEGMENT))
}

#[derive(Debug, Default, Deserialize)]
struct DiffQuery {
    from: Option<String>,
    to: Option<String>,
}

/// One version as listed.
struct VersionView {
    version: String,
    first_seen_at: String,
    /// Submissions accepted under it.
    submissions: i64,
    in_force: bool,
}

#[derive(Template)]
#[template(path = "admin/form_versions.html")]
struct VersionsPage {
    chrome: Chrome,
    form: String,
    href: String,
    versions: Vec<VersionView>,
    /// Submissions accepted before versions were kept.
    unknown: i64,
    /// The two versions compared, and their diff (`' '`, `'-'`, `'+'` per line).
    compared: Option<(String, String)>,
    diff: Vec<(char, String)>,
}

async fn versions(
    state: web::Data<AppState>,
    user: SessionUser,
    path: web::Path<String>,
    q: web::Query<DiffQuery>,
) -> HttpResponse {
    let form = path.into_inner();
    let (pool, name) = (state.pool.clone(), form.clone());
    let read = move || history(&pool, &name);
    let (stored, counts) = match blocking(read).await {
        Ok(v) => v,
        Err(e) => return db_failure_in(user.locale, e),
    };
    let live = state.forms().get(&form).and_then(|f| f.version().map(String::from));
    let count = |v: Option<&str>| counts.iter().filter(|(c, _)| c.as_deref() == v).map(|(_, n)| *n).sum();
    let find = |v: &Option<String>| v.as_ref().and_then(|v| stored.iter().find(|s| s.version == *v));
    let (from, to) = match (find(&q.from), find(&q.to)) {
        (Some(from), Some(to)) => (Some(from), Some(to)),
        _ if stored.len() >= 2 => (stored.get(stored.len() - 2), stored.last()),
        _ => (None, None),
    };
    let diff = match (from, to) {
        (Some(a), Some(b)) => line_diff(&a.definition, &b.definition)
            .into_iter()
            .map(|(mark, line)| (mark, line.to_string()))
            .collect(),
        _ => Vec::new(),
    };
    let page = VersionsPage {
        chrome: Chrome::new(&user, "submissions", None),
        href: href(&form),
        versions: stored
            .iter()
            .rev()
            .map(|v: &FormVersion| VersionView {
                version: v.version.clone(),
                first_seen_at: super::when(user.zone, v.first_seen_at),
                submissions: count(Some(&v.version)),
                in_force: live.as_deref() == Some(v.version.as_str()),
            })
            .collect(),
        unknown: count(None),
        compared: from.zip(to).map(|(a, b)| (a.version.clone(), b.version.clone())),
        diff,
        form,
    };
    let status =
        if page.versions.is_empty() && page.unknown == 0 { StatusCode::NOT_FOUND } else { StatusCode::OK };
    html(status, &page)
}
