//! Signing in to the admin as a real browser would: the login form's CSRF cookie and field,
//! then the session cookie and the session's CSRF token from a page.

use onceform::services::accounts::{create_user, Role};

use super::TestApp;

pub struct AdminSession {
    pub cookie: String,
    pub csrf: String,
}

/// The value of the first `name="csrf"` hidden field of a page.
pub fn csrf_of(html: &str) -> String {
    let start = html.find(r#"name="csrf" value=""#).expect("a csrf field") + 19;
    html[start..].split('"').next().unwrap().to_string()
}

fn cookie_of(resp: &reqwest::Response, name: &str) -> Option<String> {
    resp.headers()
        .get_all("set-cookie")
        .iter()
        .filter_map(|v| v.to_str().ok())
        .find(|v| v.starts_with(&format!("{name}=")))
        .map(|v| v.split(';').next().unwrap().to_string())
}

impl TestApp {
    pub async fn create_user(&self, email: &str, role: Role) {
        let pool = self.pool.clone();
        let email = email.to_string();
        tokio::task::spawn_blocking(move || create_user(&pool, &email, "a long enough password", role))
            .await
            .unwrap()
            .unwrap();
    }

    /// Creates a user with `role` and signs in.
    pub async fn sign_in(&self, role: Role) -> AdminSession {
        let email = format!("{}-{}@example.com", role.as_str(), uuid::Uuid::new_v4().simple());
        self.create_user(&email, role).await;
        let form = self.client.get(self.url("/admin/login")).send().await.unwrap();
        let login_cookie = cookie_of(&form, "onceform_login_csrf").unwrap();
        let csrf = csrf_of(&form.text().await.unwrap());
        let resp = self
            .client
            .post(self.url("/admin/login"))
            .header("Cookie", login_cookie)
            .form(&[("csrf", csrf.as_str()), ("email", &email), ("password", "a long enough password")])
            .send()
            .await
            .unwrap();
        assert_eq!(resp.status(), 303, "sign-in failed");
        let cookie = cookie_of(&resp, "onceform_session").unwrap();
        let page =
            self.client.get(self.url("/admin/effects")).header("Cookie", &cookie).send().await.unwrap();
        let csrf = csrf_of(&page.text().await.unwrap());
        AdminSession { cookie, csrf }
    }

    pub async fn admin_get(&self, session: Option<&AdminSession>, path: &str) -> reqwest::Response {
        let mut req = self.client.get(self.url(path));
        if let Some(s) = session {
            req = req.header("Cookie", &s.cookie);
        }
        req.send().await.unwrap()
    }

    /// POSTs `form` (plus `csrf` unless `None`) with the session's cookie (if any).
    pub async fn admin_post(
        &self,
        session: Option<&AdminSession>,
        path: &str,
        csrf: Option<&str>,
        form: &[(&str, &str)],
    ) -> reqwest::Response {
        let mut pairs: Vec<(&str, &str)> = form.to_vec();
        if let Some(c) = csrf {
            pairs.push(("csrf", c));
        }
        let mut req = self.client.post(self.url(path)).form(&pairs);
        if let Some(s) = session {
            req = req.header("Cookie", &s.cookie);
        }
        req.send().await.unwrap()
    }

    /// POSTs `fields` (in order) and one file part as `multipart/form-data`, as a browser's
    /// file upload does, with the session's cookie (if any). `file`: (name, file name, bytes).
    pub async fn admin_upload(
        &self,
        session: Option<&AdminSession>,
        path: &str,
        fields: &[(&str, &str)],
        file: (&str, &str, &[u8]),
    ) -> reqwest::Response {
        let boundary = format!("onceform-{}", uuid::Uuid::new_v4().simple());
        let mut body = Vec::new();
        for (name, value) in fields {
            body.extend_from_slice(
                format!("--{boundary}\r\nContent-Disposition: form-data; name=\"{name}\"\r\n\r\n{value}\r\n")
                    .as_bytes(),
            );
        }
        let (name, filename, bytes) = file;
        body.extend_from_slice(
            format!(
                "--{boundary}\r\nContent-Disposition: form-data; name=\"{name}\"; filename=\"{filename}\"\r\n\
                 Content-Type: text/csv\r\n\r\n"
            )
            .as_bytes(),
        );
        body.extend_from_slice(bytes);
        body.extend_from_slice(format!("\r\n--{boundary}--\r\n").as_bytes());
        let mut req = self
            .client
            .post(self.url(path))
            .header("Content-Type", format!("multipart/form-data; boundary={boundary}"))
            .body(body);
        if let Some(s) = session {
            req = req.header("Cookie", &s.cookie);
        }
        req.send().await.unwrap()
    }

    pub async fn audit_count(&self) -> i64 {
        use diesel::prelude::*;
        use onceform::db::schema::audit_log;
        self.query(|pool| {
            onceform::with_conn!(pool, |c| audit_log::table
                .count()
                .get_result::<i64>(c)
                .map_err(onceform::db::DbError::from))
        })
        .await
    }
}

/// Asserts that an admin POST is refused without a session, for a viewer, and without or
/// with a wrong CSRF token, leaving no audit row; then that it works for an admin and
/// writes exactly one. Returns the admin's response.
pub async fn assert_guarded(
    app: &TestApp,
    admin: &AdminSession,
    viewer: &AdminSession,
    path: &str,
    form: &[(&str, &str)],
) -> reqwest::Response {
    let before = app.audit_count().await;
    let anonymous = app.admin_post(None, path, Some(&admin.csrf), form).await;
    assert_eq!(anonymous.status(), 303, "{path}: no session → sign in");
    assert_eq!(anonymous.headers()["location"], "/admin/login");
    assert_eq!(
        app.admin_post(Some(viewer), path, Some(&viewer.csrf), form).await.status(),
        403,
        "{path}: viewer"
    );
    assert_eq!(app.admin_post(Some(admin), path, None, form).await.status(), 403, "{path}: no CSRF token");
    assert_eq!(
        app.admin_post(Some(admin), path, Some(&viewer.csrf), form).await.status(),
        403,
        "{path}: wrong token"
    );
    assert_eq!(app.audit_count().await, before, "{path}: refused requests are not audited");
    let ok = app.admin_post(Some(admin), path, Some(&admin.csrf), form).await;
    assert_eq!(ok.status(), 303, "{path}: admin");
    assert_eq!(app.audit_count().await, before + 1, "{path}: one audit row");
    ok
}
