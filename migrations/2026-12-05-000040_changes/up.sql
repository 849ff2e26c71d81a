-- The change feed (`GET /api/v1/changes`): one row per change of a submission, written in the
-- transaction that makes the change. No field values: what changed, of which submission, when.
--
-- The feed is read in (`xid`, `seq`) order. On SQLite `xid` is 0 and `seq` counts up under the
-- write lock (commit order). On PostgreSQL `xid` is the writing transaction's ID
-- (`pg_current_xact_id()`) and `seq` orders the rows of one transaction; a reader serves only
-- rows below the oldest transaction still running (see `services::changes`).
CREATE TABLE changes (
    xid BIGINT NOT NULL,
    seq BIGINT NOT NULL,
    -- accepted | conflict | effect_state | decision | erased | deleted
    kind TEXT NOT NULL,
    submission_id TEXT NOT NULL,
    form TEXT NOT NULL,
    -- The effect record (effect_state), the duplicate pair (decision), the conflict (conflict).
    subject_id TEXT,
    -- The effect record's kind (effect_state).
    subject_kind TEXT,
    -- The effect record's new state (effect_state), the pair's new status (decision).
    state TEXT,
    at TIMESTAMP NOT NULL,
    PRIMARY KEY (xid, seq)
);

-- Where the feed starts: the last position retention purged (one row, `id` = 'feed'). A
-- cursor before it is expired; SQLite's `seq` never counts below it again.
CREATE TABLE changes_start (
    id TEXT PRIMARY KEY NOT NULL,
    xid BIGINT NOT NULL,
    seq BIGINT NOT NULL
);
