//! `GET /files/{submission}/{sha256}?expires=T&signature=S`: one file of one submission,
//! for the holder of a signed link (`services::files::links`: the generic CRM gets them).
//! Served as an attachment the browser never renders; a spam submission's files never.

use actix_web::{web, HttpResponse};
use serde::Deserialize;

use super::problem::{Problem, ProblemKind};
use crate::domain::is_sha256;
use crate::services::files::links::{open, opens};
use crate::web::state::AppState;

pub fn routes(cfg: &mut web::ServiceConfig) {
    cfg.route("/files/{submission}/{sha256}", web::get().to(file));
}

#[derive(Deserialize)]
struct Signed {
    expires: i64,
    signature: String,
}

async fn file(
    state: web::Data<AppState>,
    path: web::Path<(String, String)>,
    q: web::Query<Signed>,
) -> Result<HttpResponse, Problem> {
    let (submission, sha256) = path.into_inner();
    let now = chrono::Utc::now().timestamp();
    if !is_sha256(&sha256) || !opens(&state.keyring, &submission, &sha256, q.expires, &q.signature, now) {
        // Not told apart from a missing file: a link either opens its file or nothing.
        return Err(not_found());
    }
    let (pool, files) = (state.pool.clone(), state.files.clone());
    let opened = web::block(move || open(&pool, &files, &submission, &sha256))
        .await?
        .map_err(|_| Problem::unavailable())?
        .ok_or_else(not_found)?;
    Ok(crate::web::render::download_stream(&opened.name, opened.size, opened.reader))
}

fn not_found() -> Problem {
    Problem::new(ProblemKind::NotFound, "no such file, or the link is not valid (or no longer)")
}
