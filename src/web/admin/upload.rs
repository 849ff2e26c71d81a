//! A file upload to the admin (`multipart/form-data`): the admin role is checked before the
//! body is read, the body is bounded and read under the body deadline, and the session's
//! CSRF token is checked before any part is handed to the handler.

use actix_web::{web, HttpRequest};

use super::guard::{authorize, AuthError, SessionUser};
use crate::services::accounts::Role;
use crate::web::http::body::{media_type, parse_parts, read_limited, Part};
use crate::web::http::problem::ProblemKind;

/// An admin's upload whose CSRF token matched.
#[derive(Debug)]
pub struct Upload {
    parts: Vec<Part>,
}

#[derive(Debug, thiserror::Error)]
pub enum UploadError {
    #[error(transparent)]
    Auth(#[from] AuthError),
    #[error("the upload is larger than {} MiB", .0 / (1024 * 1024))]
    TooLarge(usize),
    #[error("the upload could not be read: {0}")]
    Unreadable(String),
}

impl Upload {
    /// Reads `payload` (at most `limit` bytes) for `user`, an admin.
    pub async fn read(
        req: &HttpRequest,
        user: &SessionUser,
        payload: web::Payload,
        limit: usize,
    ) -> Result<Upload, UploadError> {
        if user.role != Role::Admin {
            return Err(AuthError::Forbidden.into());
        }
        if media_type(req.headers()).as_deref() != Some("multipart/form-data") {
            return Err(UploadError::Unreadable("send the form as a web browser does".into()));
        }
        let body = read_limited(req, payload, limit).await.map_err(|p| match p.kind {
            ProblemKind::PayloadTooLarge => UploadError::TooLarge(limit),
            ProblemKind::RequestTimeout => AuthError::Timeout.into(),
            _ => UploadError::Unreadable(p.detail),
        })?;
        let parts = parse_parts(req.headers(), body).await.map_err(|p| UploadError::Unreadable(p.detail))?;
        let upload = Upload { parts };
        authorize(user, upload.field("csrf").unwrap_or(""))?;
        Ok(upload)
    }

    /// The first text part named `name`.
    pub fn field(&self, name: &str) -> Option<&str> {
        let part = self.parts.iter().find(|p| p.name == name && p.filename.is_none())?;
        std::str::from_utf8(&part.value).ok()
    }

    /// True when a text part named `name` is present (a ticked checkbox).
    pub fn ticked(&self, name: &str) -> bool {
        self.field(name).is_some()
    }

    /// The first file part named `name` that holds anything.
    pub fn file(&self, name: &str) -> Option<&[u8]> {
        let part =
            self.parts.iter().find(|p| p.name == name && p.filename.is_some() && !p.value.is_empty())?;
        Some(&part.value)
    }
}
