-- Sign-in with an OpenID provider (`[admin.oidc]`).

-- The admin user an identity of the provider signs in as: its issuer and subject (`iss`,
-- `sub`: stable, unlike an email). The user row holds the email shown and the role its last
-- sign-in's claim gave.
CREATE TABLE oidc_identities (
    issuer TEXT NOT NULL,
    subject TEXT NOT NULL,
    user_id TEXT NOT NULL REFERENCES users (id),
    created_at TIMESTAMP NOT NULL,
    last_sign_in_at TIMESTAMP NOT NULL,
    PRIMARY KEY (issuer, subject)
);
CREATE UNIQUE INDEX oidc_identities_user ON oidc_identities (user_id);

-- A sign-in begun and not yet come back: found by the SHA-256 of its `state`, taken (deleted)
-- when the browser returns, so a `state` is good once. `browser_hash`: the SHA-256 of the
-- cookie that ties it to the browser that began it. Rows older than ten minutes are swept.
CREATE TABLE oidc_attempts (
    state_hash TEXT PRIMARY KEY NOT NULL,
    browser_hash TEXT NOT NULL,
    nonce TEXT NOT NULL,
    code_verifier TEXT NOT NULL,
    created_at TIMESTAMP NOT NULL
);
CREATE INDEX oidc_attempts_created ON oidc_attempts (created_at);
