-- Tokens of the read API (`/api/v1`): only the SHA-256 of each secret is stored (the secret
-- is shown once, when it is made), with its scopes (space-separated: read:submissions,
-- read:effects, write:decisions) and the one form it may read, if any.
CREATE TABLE api_tokens (
    id TEXT PRIMARY KEY NOT NULL,
    name TEXT NOT NULL,
    token_hash TEXT NOT NULL UNIQUE,
    scopes TEXT NOT NULL,
    form TEXT,
    -- Who made it: `cli`, or the admin's email.
    created_by TEXT NOT NULL,
    created_at TIMESTAMP NOT NULL,
    expires_at TIMESTAMP,
    revoked_at TIMESTAMP,
    -- Moved at most once a minute.
    last_used_at TIMESTAMP
);

-- One row per authenticated request (the route template, never its values or the token),
-- kept for a bounded time (`services::read_api::tokens::USES_KEPT_DAYS`).
CREATE TABLE api_token_uses (
    id TEXT PRIMARY KEY NOT NULL,
    token_id TEXT NOT NULL REFERENCES api_tokens (id),
    at TIMESTAMP NOT NULL,
    method TEXT NOT NULL,
    route TEXT NOT NULL
);
CREATE INDEX api_token_uses_at ON api_token_uses (at);
CREATE INDEX api_token_uses_token ON api_token_uses (token_id, at);

-- The read API walks every submission newest first by (received_at, id): one index scan a page.
CREATE INDEX submissions_received_id ON submissions (received_at, id);
