//! Submissions: the filtered list (filters carry no personal data), its CSV export, a content
//! search that never puts the term in a URL, and one submission's page.

use crate::base::i18n::Arg;
use actix_web::http::StatusCode;
use actix_web::{web, HttpResponse, ResponseError};
use askama::Template;
use serde::Deserialize;

use super::filters::FilterParams;
use super::guard::{AuthError, SessionUser};
use super::{blocking, db_failure_in, Chrome, FlashQuery};
use crate::base::format::reference;
use crate::base::secret::constant_time_eq;
use crate::config::Config;
use crate::domain::EffectState;
use crate::domain::{FieldType, FileRef};
use crate::services::browse::{
    self, Columns, EffectStates, PairView, SubmissionPage, SubmissionRow, SubmissionView,
};
use crate::web::render::html;
use crate::web::state::AppState;

pub fn routes(cfg: &mut web::ServiceConfig) {
    cfg.route("/admin/submissions", web::get().to(list))
        .route("/admin/submissions.csv", web::get().to(export))
        .route("/admin/submissions/search", web::post().to(search))
        .route("/admin/submissions/search", web::get().to(back_to_list))
        .route("/admin/submissions/{id}", web::get().to(detail));
}

const PAGE_SIZE: i64 = 50;
const SEARCH_LIMIT: i64 = 200;

#[derive(Debug, Default, Deserialize)]
struct ListQuery {
    #[serde(flatten)]
    filters: FilterParams,
    page: Option<String>,
    flash: Option<String>,
    /// The export's encoding: `utf-8` (no BOM) for tools that choke on one; default
    /// `utf-8-bom`, which Excel opens as UTF-8 (without the BOM it reads the machine's code page).
    encoding: Option<String>,
}

impl ListQuery {
    fn page(&self) -> i64 {
        self.page.as_deref().and_then(|p| p.trim().parse::<i64>().ok()).unwrap_or(1).clamp(1, 1_000_000)
    }
}

/// An `<option>` of a filter.
pub struct Opt {
    pub value: String,
    pub label: String,
    pub selected: bool,
}

fn options(values: impl IntoIterator<Item = (String, String)>, current: Option<&str>) -> Vec<Opt> {
    values
        .into_iter()
        .map(|(value, label)| Opt { selected: current == Some(value.as_str()), value, label })
        .collect()
}

/// One row of the list or of the search results.
pub struct RowView {
    pub s: SubmissionRow,
    pub reference: String,
    /// A few stored values to recognise the inquiry by (name, email, the start of the message).
    pub summary: Vec<String>,
    /// (kind, state)
    pub effects: Vec<(String, EffectState)>,
}

fn short(v: &str, max: usize) -> String {
    let cut: String = v.chars().take(max).collect();
    if cut.len() < v.len() {
        format!("{cut}…")
    } else {
        cut
    }
}

fn summary(config: &Config, row: &SubmissionRow) -> Vec<String> {
    let values = row.fields();
    let Some(form) = config.form(&row.form) else { return values.into_values().take(2).collect() };
    [FieldType::Text, FieldType::Email, FieldType::Textarea]
        .iter()
        .filter_map(|kind| form.fields.iter().find(|f| f.kind == *kind))
        .filter_map(|f| values.get(&f.name).map(|v| short(v, 80)))
        .collect()
}

fn row_views(config: &Config, rows: Vec<SubmissionRow>, mut states: EffectStates) -> Vec<RowView> {
    let view = |s: SubmissionRow| RowView {
        summary: summary(config, &s),
        effects: states.remove(&s.id).unwrap_or_default(),
        reference: reference(&s.id),
        s,
    };
    rows.into_iter().map(view).collect()
}

#[derive(Template)]
#[template(path = "admin/submissions.html")]
struct ListPage {
    chrome: Chrome,
    forms: Vec<Opt>,
    states: Vec<Opt>,
    spam: Vec<Opt>,
    keyless: Vec<Opt>,
    /// The journey the list is narrowed to (`?journey=`), shown as a filter.
    journey: Option<String>,
    from: String,
    to: String,
    rows: Vec<RowView>,
    total: i64,
    page: i64,
    pages: i64,
    prev_href: Option<String>,
    next_href: Option<String>,
    csv_href: String,
    /// Set when the page shows search results (the term is only ever in a POST body).
    term: Option<String>,
}

impl ListPage {
    /// "51 submission(s), page 1 of 2." in the user's language.
    fn total_line(&self) -> String {
        let n = |v: i64| Arg::Num(v);
        match self.pages > 1 {
            true => self.chrome.locale.format(
                "admin-total-paged",
                &[("n", n(self.total)), ("page", n(self.page)), ("pages", n(self.pages))],
            ),
            false => self.chrome.locale.format("admin-total", &[("n", n(self.total))]),
        }
    }

    /// "Page 1 of 2".
    fn page_of(&self) -> String {
        self.chrome
            .locale
            .format("admin-page-of", &[("page", Arg::Num(self.page)), ("pages", Arg::Num(self.pages))])
    }

    fn new(state: &AppState, user: &SessionUser, f: &FilterParams, flash: Option<&str>) -> ListPage {
        let t = |key: &str| user.locale.text(key);
        let any = || std::iter::once((String::new(), t("admin-any")));
        let yn =
            || any().chain([("yes", "admin-yes"), ("no", "admin-no")].map(|(v, k)| (v.to_string(), t(k))));
        let qs = f.query_string();
        ListPage {
            chrome: Chrome::new(user, "submissions", flash),
            forms: options(
                any().chain(state.forms().config.forms.keys().map(|k| (k.clone(), k.clone()))),
                f.get("form").as_deref(),
            ),
            states: options(
                any().chain(
                    EffectState::ALL
                        .map(|s| (s.as_str().into(), super::words(user.locale, "effect", s.as_str()))),
                ),
                f.get("state").as_deref(),
            ),
            spam: options(yn(), f.get("spam").as_deref()),
            keyless: options(yn(), f.get("keyless").as_deref()),
            journey: f.get("journey"),
            from: f.get("from").unwrap_or_default(),
            to: f.get("to").unwrap_or_default(),
            rows: Vec::new(),
            total: 0,
            page: 1,
            pages: 1,
            prev_href: None,
            next_href: None,
            csv_href: if qs.is_empty() {
                "/admin/submissions.csv".into()
            } else {
                format!("/admin/submissions.csv?{qs}")
            },
            term: None,
        }
    }
}

async fn list(state: web::Data<AppState>, user: SessionUser, q: web::Query<ListQuery>) -> HttpResponse {
    let (filter, page) = (q.filters.filter(), q.page());
    let pool = state.pool.clone();
    let read = move || browse::list(&pool, &filter, PAGE_SIZE, (page - 1) * PAGE_SIZE);
    let (rows, states, total) = match blocking(read).await {
        Ok(v) => v,
        Err(e) => return db_failure_in(user.locale, e),
    };
    let mut p = ListPage::new(&state, &user, &q.filters, q.flash.as_deref());
    let qs = q.filters.query_string();
    let base = if qs.is_empty() { "/admin/submissions?".into() } else { format!("/admin/submissions?{qs}&") };
    let href = |n: i64| format!("{base}page={n}");
    p.pages = ((total + PAGE_SIZE - 1) / PAGE_SIZE).max(1);
    p.prev_href = (page > 1).then(|| href(page - 1));
    p.next_href = (page < p.pages).then(|| href(page + 1));
    (p.rows, p.total, p.page) = (row_views(&state.forms().config, rows, states), total, page);
    html(StatusCode::OK, &p)
}

async fn export(state: web::Data<AppState>, user: SessionUser, q: web::Query<ListQuery>) -> HttpResponse {
    let (filter, filters) = (q.filters.filter(), q.filters.query_string());
    let bom = q.encoding.as_deref() != Some("utf-8");
    let (mut fields, mut file_fields): (Vec<String>, Vec<String>) = (Vec::new(), Vec::new());
    let in_force = state.forms();
    let forms =
        in_force.config.forms.iter().filter(|(name, _)| filter.form.as_ref().is_none_or(|f| f == *name));
    for field in forms.flat_map(|(_, form)| form.fields.iter()) {
        if !fields.contains(&field.name) {
            fields.push(field.name.clone());
        }
        if field.kind == FieldType::File {
            file_fields.push(field.name.clone());
        }
    }
    let (pool, actor, columns) = (state.pool.clone(), user.actor(), Columns { fields, file_fields, bom });
    let locale = user.locale;
    let build = move || browse::export(&pool, &actor, &filter, &filters, &columns);
    match blocking(build).await {
        Ok(body) => HttpResponse::Ok()
            .content_type("text/csv; charset=utf-8")
            .insert_header(("Content-Disposition", "attachment; filename=\"submissions.csv\""))
            .insert_header(("Cache-Control", "no-store"))
            .body(body),
        Err(e) => db_failure_in(locale, e),
    }
}

#[derive(Deserialize)]
struct SearchForm {
    #[serde(default)]
    q: String,
    #[serde(default)]
    csrf: String,
}

/// Any signed-in user may search; the term comes in the body and the results in the response.
async fn search(state: web::Data<AppState>, user: SessionUser, form: web::Form<SearchForm>) -> HttpResponse {
    if !constant_time_eq(form.csrf.as_bytes(), user.csrf.as_bytes()) {
        return AuthError::Csrf.said_in(user.locale).error_response();
    }
    let term: String = form.q.trim().chars().take(200).collect();
    let mut p = ListPage::new(&state, &user, &FilterParams::default(), None);
    if !term.is_empty() {
        let (pool, t, searcher) = (state.pool.clone(), term.clone(), user.actor());
        let read = move || browse::search(&pool, &searcher, &t, SEARCH_LIMIT);
        let (rows, states) = match blocking(read).await {
            Ok(v) => v,
            Err(e) => return db_failure_in(user.locale, e),
        };
        p.total = i64::try_from(rows.len()).unwrap_or(0);
        p.rows = row_views(&state.forms().config, rows, states);
    }
    p.term = Some(term);
    html(StatusCode::OK, &p)
}

async fn back_to_list() -> HttpResponse {
    HttpResponse::SeeOther().insert_header(("Location", "/admin/submissions")).finish()
}

#[derive(Template)]
#[template(path = "admin/submission.html")]
struct DetailPage {
    chrome: Chrome,
    /// `None`: no such submission (404).
    found: Option<SubmissionPage>,
    reference: String,
    /// (label, value) in the form's order, then stored fields it no longer declares.
    fields: Vec<(String, String)>,
    /// The attached files, each with its download link.
    files: Vec<super::files::FileView>,
}

async fn detail(
    state: web::Data<AppState>,
    user: SessionUser,
    path: web::Path<String>,
    q: web::Query<FlashQuery>,
) -> HttpResponse {
    let id = path.into_inner();
    state.acceptor.deliveries().flush().await;
    let (pool, wanted) = (state.pool.clone(), id.clone());
    let read = move || browse::submission(&pool, &wanted);
    let found = match blocking(read).await {
        Ok(v) => v,
        Err(e) => return db_failure_in(user.locale, e),
    };
    let mut page = DetailPage {
        chrome: Chrome::new(&user, "submissions", q.flash.as_deref()),
        reference: reference(&id),
        fields: Vec::new(),
        files: Vec::new(),
        found: None,
    };
    let Some(found) = found else { return html(StatusCode::NOT_FOUND, &page) };
    let mut values = found.submission.fields();
    if let Some(form) = state.forms().config.form(&found.submission.form) {
        for field in &form.fields {
            if let Some(v) = values.remove(&field.name) {
                let shown = match field.kind {
                    FieldType::File => FileRef::shown_all(&v, "\n"),
                    _ => v,
                };
                page.fields.push((form.admin_label(field, user.locale).to_string(), shown));
            }
        }
    }
    page.files = super::files::views(&state.config, &found.submission, &found.scans, user.locale);
    page.fields.extend(values);
    page.found = Some(found);
    html(StatusCode::OK, &page)
}
