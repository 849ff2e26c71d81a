//! `GET /files/{submission}/{sha256}?expires=T&signature=S`: one file of one submission,
//! for the holder of a signed link (`services::files::links`: the generic CRM gets them).
//! Served as an attachment the browser never renders; a spam submission's files never.

use actix_web::{web, HttpResponse};
use serde::Deserialize;

use super::problem::{Problem, ProblemKind};
use crate::db::files::FileRefs;
use crate::domain::{is_sha256, FileRef};
use crate::services::files::links::opens;
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
) -> HttpResponse {
    let (submission, sha256) = path.into_inner();
    let now = chrono::Utc::now().timestamp();
    if !is_sha256(&sha256) || !opens(&state.keyring, &submission, &sha256, q.expires, &q.signature, now) {
        // Not told apart from a missing file: a link either opens its file or nothing.
        return not_found();
    }
    let (pool, files, digest) = (state.pool.clone(), state.files.clone(), sha256.clone());
    let found = web::block(move || {
        let Some((spam, fields)) = pool.get()?.naming(&submission, &digest)? else { return Ok(None) };
        let name = fields
            .as_deref()
            .and_then(|f| crate::domain::stored_fields::parse(f).ok())
            .and_then(|f| f.values().flat_map(|v| FileRef::stored_in(v)).find(|r| r.sha256 == digest))
            .map(|r| r.name);
        let opened =
            files.store().size(&digest).and_then(|size| Some((size, files.store().open(&digest).ok()?)));
        Ok::<_, crate::db::DbError>((!spam).then_some((name, opened)))
    })
    .await;
    match found {
        Ok(Ok(Some((Some(name), Some((size, reader)))))) => {
            crate::web::render::download_stream(&name, size, reader)
        }
        Ok(Ok(_)) => not_found(),
        _ => Problem::unavailable().response(),
    }
}

fn not_found() -> HttpResponse {
    Problem::new(ProblemKind::NotFound, "no such file, or the link is not valid (or no longer)").response()
}
