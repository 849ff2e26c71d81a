//! The read API (`/api/v1`) in the OpenAPI document: its paths, the bearer scheme, and the
//! schemas of what it answers (`services::read_api::views`).

use serde_json::{json, Map, Value};

use crate::domain::{ApiScope, AttemptOutcome, Channel, EffectState, PairStatus};
use crate::services::read_api::cursor::PATTERN;
use crate::services::read_api::{DEFAULT_LIMIT, MAX_LIMIT};

/// The name of the bearer scheme in `components.securitySchemes`.
const SCHEME: &str = "apiToken";

fn texts<T: Copy>(all: &[T], text: fn(T) -> &'static str) -> Vec<&'static str> {
    all.iter().map(|v| text(*v)).collect()
}

fn problem(description: &str) -> Value {
    json!({"description": description,
           "content": {"application/problem+json": {"schema": {"$ref": "#/components/schemas/Problem"}}}})
}

fn challenged(description: &str) -> Value {
    let mut p = problem(description);
    p["headers"] = json!({"WWW-Authenticate": {"description": "The bearer challenge (RFC 6750)",
                                               "schema": {"type": "string"}}});
    p
}

/// The answers every operation may give besides its own.
fn responses(ok: Value, more: &[(&str, Value)]) -> Value {
    let mut r = Map::new();
    r.insert("200".into(), ok);
    r.insert(
        "400".into(),
        problem("invalid-parameter (or malformed-body): the query or body is not as described"),
    );
    r.insert("401".into(), challenged("unauthorized: no token, or one that is unknown, revoked or expired"));
    r.insert(
        "403".into(),
        challenged("insufficient-scope: the token lacks the scope, or is limited to another form"),
    );
    r.insert(
        "503".into(),
        json!({"description": "The database is unavailable",
               "headers": {"Retry-After": {"$ref": "#/components/headers/Retry-After"}},
               "content": {"application/problem+json": {"schema": {"$ref": "#/components/schemas/Problem"}}}}),
    );
    for (status, response) in more {
        r.insert((*status).into(), response.clone());
    }
    Value::Object(r)
}

fn query(name: &str, schema: Value, description: &str) -> Value {
    json!({"name": name, "in": "query", "required": false, "schema": schema, "description": description})
}

fn paging() -> [Value; 2] {
    [
        query(
            "cursor",
            json!({"type": "string", "pattern": PATTERN}),
            "Where the next page starts: `next_cursor` of the page before (opaque)",
        ),
        query(
            "limit",
            json!({"type": "integer", "minimum": 1, "maximum": MAX_LIMIT, "default": DEFAULT_LIMIT}),
            "Rows in a page",
        ),
    ]
}

fn form_param() -> Value {
    query(
        "form",
        json!({"type": "string", "minLength": 1, "maxLength": 255}),
        "Only this form's records (a token limited to a form reads only that one: another is 403)",
    )
}

fn page_of(schema: &str, description: &str) -> Value {
    json!({"description": description, "content": {"application/json": {"schema": {
    "type": "object", "required": ["items", "next_cursor"],
    "properties": {
        "items": {"type": "array", "items": {"$ref": format!("#/components/schemas/{schema}")}},
        "next_cursor": {"type": ["string", "null"], "pattern": PATTERN,
                        "description": "The cursor of the next page; null on the last page"}
    }}}}})
}

fn operation(id: &str, summary: &str, scope: ApiScope, parameters: Vec<Value>, responses: Value) -> Value {
    json!({"operationId": id, "tags": ["read API"], "summary": summary,
           "description": format!("Needs a token with the scope `{scope}`."),
           "security": [{SCHEME: [scope.as_str()]}],
           "parameters": parameters, "responses": responses})
}

pub fn paths(paths: &mut Map<String, Value>) {
    let mut list = vec![
        form_param(),
        query("since", json!({"type": "string", "format": "date-time"}), "Received at or after (RFC 3339)"),
        query("until", json!({"type": "string", "format": "date-time"}), "Received before (RFC 3339)"),
        query(
            "state",
            json!({"type": "string", "enum": texts(&EffectState::ALL, EffectState::as_str)}),
            "Only submissions with an effect record in this state",
        ),
    ];
    list.extend(paging());
    paths.insert(
        "/api/v1/submissions".into(),
        json!({"get": operation(
            "read_submissions",
            "Submissions, newest first, a page at a time (rows that arrive meanwhile never shift the pages)",
            ApiScope::ReadSubmissions,
            list,
            responses(page_of("ReadSubmission", "A page of submissions"), &[]),
        )}),
    );
    let id = json!({"name": "id", "in": "path", "required": true, "schema": {"type": "string"},
                    "description": "The submission's ID"});
    let detail = json!({"description": "The submission",
        "content": {"application/json": {"schema": {"$ref": "#/components/schemas/ReadSubmissionDetail"}}}});
    paths.insert(
        "/api/v1/submissions/{id}".into(),
        json!({"get": operation(
            "read_submission",
            "One submission: fields, files as signed links, effects with their attempts, duplicate pairs, conflicts, route, form version",
            ApiScope::ReadSubmissions,
            vec![id],
            responses(detail, &[("404", problem("not-found: no submission with this ID"))]),
        )}),
    );
    let mut effects = vec![
        query(
            "state",
            json!({"type": "string", "enum": texts(&EffectState::ALL, EffectState::as_str)}),
            "Only records in this state (UNKNOWN: waiting for a decision)",
        ),
        form_param(),
    ];
    effects.extend(paging());
    paths.insert(
        "/api/v1/effects".into(),
        json!({"get": operation(
            "read_effects",
            "Side-effect records of submissions, most recently changed first",
            ApiScope::ReadEffects,
            effects,
            responses(page_of("ReadEffect", "A page of effect records"), &[]),
        )}),
    );
    let statuses =
        [PairStatus::Open, PairStatus::NotDuplicate, PairStatus::Duplicate, PairStatus::SameSender];
    let mut pairs = vec![
        query(
            "status",
            json!({"type": "string", "enum": texts(&statuses, PairStatus::as_str), "default": "open"}),
            "Only pairs in this status",
        ),
        form_param(),
    ];
    pairs.extend(paging());
    paths.insert(
        "/api/v1/duplicates".into(),
        json!({"get": operation(
            "read_duplicates",
            "Suspected duplicate pairs, newest first",
            ApiScope::ReadSubmissions,
            pairs,
            responses(page_of("ReadPair", "A page of pairs"), &[]),
        )}),
    );
    let pair_id = json!({"name": "id", "in": "path", "required": true, "schema": {"type": "string"},
                         "description": "The pair's ID"});
    let mut decide = operation(
        "decide_duplicate",
        "Decide a suspected duplicate pair (or undo its decision), with the admin's rules and audit",
        ApiScope::WriteDecisions,
        vec![pair_id],
        responses(
            json!({"description": "Decided: the pair as it is now",
                   "content": {"application/json": {"schema": {"type": "object",
                       "required": ["pair", "effects_changed"],
                       "properties": {"pair": {"$ref": "#/components/schemas/ReadPair"},
                           "effects_changed": {"type": "integer", "minimum": 0,
                               "description": "The duplicate's effect records released (not-duplicate), cancelled \
                                               (duplicate) or given back, held (undo)"}}}}}}),
            &[
                ("404", problem("not-found: no pair with this ID")),
                ("409", problem("decision-refused: decided already (undo first), or nothing to undo")),
                ("413", problem("payload-too-large: the body is over 16 KiB")),
                ("415", problem("unsupported-media-type: send application/json")),
            ],
        ),
    );
    decide["requestBody"] = json!({"required": true, "content": {"application/json": {"schema": {
    "type": "object", "required": ["decision"], "additionalProperties": false,
    "properties": {
        "decision": {"type": "string", "enum": ["duplicate", "not-duplicate", "undo"],
                     "description": "duplicate: the later submission repeats the original (its pending effects \
                                     are cancelled); not-duplicate: its held effects are released; undo: the \
                                     pair is open again and what a duplicate decision cancelled comes back, held"},
        "note": {"type": ["string", "null"], "maxLength": 1000, "description": "Kept in the audit log"}
    }}}}});
    paths.insert("/api/v1/duplicates/{id}/decision".into(), json!({"post": decide}));
    let feed = vec![
        query(
            "cursor",
            json!({"type": "string", "pattern": "^[A-Za-z0-9_-]{28}$"}),
            "Where to read on: `next_cursor` of the read before (opaque; an altered one is refused); \
             without it, the feed from its start",
        ),
        query(
            "limit",
            json!({"type": "integer", "minimum": 1, "maximum": MAX_LIMIT, "default": DEFAULT_LIMIT}),
            "Changes in a read",
        ),
    ];
    let changes = json!({"description": "The changes after the cursor, in transaction order",
    "content": {"application/json": {"schema": {
    "type": "object", "required": ["items", "next_cursor"],
    "properties": {
        "items": {"type": "array", "items": {"type": "object",
            "required": ["cursor", "submission_id", "form", "at", "type"],
            "properties": {
                "cursor": {"type": "string", "description": "Resuming from it reads what follows this change"},
                "submission_id": {"type": "string"},
                "form": {"type": "string"},
                "at": {"type": "string"},
                "type": {"type": "string",
                         "enum": ["accepted", "conflict", "effect_state", "decision", "erased", "deleted"]},
                "effect_id": {"type": "string"}, "kind": {"type": "string"}, "state": {"type": "string"},
                "pair_id": {"type": "string"}, "status": {"type": "string"}}}},
        "next_cursor": {"type": "string", "description": "Store it; send it back to read on (the same when \
                        nothing changed)"}
    }}}}});
    paths.insert(
        "/api/v1/changes".into(),
        json!({"get": operation(
            "read_changes",
            "Every change (accepted, conflict, effect state, decision, erased, deleted) in transaction order; \
             resuming from a stored cursor never skips or repeats one. Effect states need read:effects too; a \
             token limited to a form reads that form's changes",
            ApiScope::ReadSubmissions,
            feed,
            responses(changes, &[("410", problem("cursor-expired: retention removed changes after the cursor"))]),
        )}),
    );
}

/// `components.securitySchemes`.
pub fn security_schemes() -> Value {
    json!({SCHEME: {"type": "http", "scheme": "bearer", "bearerFormat": "ofk_…",
        "description": "A read API token (`onceform api-token create` or /admin/api-tokens), with its scopes: \
                        read:submissions, read:effects, write:decisions"}})
}

/// The schemas the read API's answers use, for `components.schemas`.
pub fn schemas(schemas: &mut Map<String, Value>) {
    let text = json!({"type": "string"});
    let maybe = json!({"type": ["string", "null"]});
    let maybe_int = json!({"type": ["integer", "null"]});
    let time = json!({"type": "string", "format": "date-time"});
    let effect_state = json!({"type": "string", "enum": texts(&EffectState::ALL, EffectState::as_str)});
    let pair_status = json!({"type": "string", "enum": texts(&PairStatus::ALL, PairStatus::as_str)});
    let submission = json!({
        "id": text, "reference": text, "form": text, "operation_id": text, "received_at": time,
        "channel": {"type": "string", "enum": texts(&Channel::ALL, Channel::as_str)},
        "keyless": {"type": "boolean"}, "spam": {"type": "boolean"},
        "content": {"type": "string", "enum": ["stored", "purged"],
                    "description": "purged: a tombstone (retention or erasure took the content)"},
        "fields": {"type": ["object", "null"], "additionalProperties": {"type": "string"},
                   "description": "The text fields as stored; null for a tombstone"},
        "files": {"type": "array", "items": {"$ref": "#/components/schemas/ReadFile"}},
        "route": {"type": ["string", "null"],
                  "description": "The route it took (its name, or #INDEX); null when none matched"},
        "version": {"type": ["string", "null"], "pattern": "^[0-9a-f]{16}$",
                    "description": "The version of its form it was accepted under; null when accepted before versions were kept"},
        "journey_id": maybe, "duplicate_of": maybe,
    });
    let with = |extra: Value| {
        let mut properties = submission.clone();
        if let (Some(p), Some(e)) = (properties.as_object_mut(), extra.as_object()) {
            p.extend(e.clone());
        }
        let required: Vec<String> =
            properties.as_object().map(|o| o.keys().cloned().collect()).unwrap_or_default();
        json!({"type": "object", "required": required, "properties": properties})
    };
    schemas.insert(
        "ReadSubmission".into(),
        with(json!({"effects": {"type": "array", "items": {"type": "object", "required": ["kind", "state"],
                     "properties": {"kind": text, "state": effect_state}}}})),
    );
    schemas.insert(
        "ReadSubmissionDetail".into(),
        with(json!({
            "effects": {"type": "array", "items": {"$ref": "#/components/schemas/ReadEffect"}},
            "duplicates": {"type": "array", "items": {"$ref": "#/components/schemas/ReadPair"}},
            "conflicts": {"type": "array", "items": {"type": "object",
                "required": ["id", "status", "attempts", "first_seen_at", "last_seen_at"],
                "properties": {"id": text, "status": {"type": "string", "enum": ["open", "dismissed", "accepted"]},
                               "attempts": {"type": "integer"}, "first_seen_at": time, "last_seen_at": time}}}
        })),
    );
    schemas.insert("ReadFile".into(), json!({"type": "object",
        "required": ["field", "name", "content_type", "size", "sha256", "url"],
        "properties": {"field": text, "name": text, "content_type": text, "size": {"type": "integer", "minimum": 0},
            "sha256": text,
            "url": {"type": ["string", "null"],
                    "description": "A signed link (a week long) serving the file; null for spam"},
            "scan": text}}));
    schemas.insert("ReadEffect".into(), json!({"type": "object",
        "required": ["id", "submission_id", "form", "kind", "batch", "state", "held", "attempt_count",
                     "provider_ref", "last_error", "next_attempt_at", "updated_at"],
        "properties": {"id": text, "submission_id": text, "form": text, "kind": text,
            "batch": {"type": "integer"}, "state": effect_state, "held": {"type": "boolean"},
            "attempt_count": {"type": "integer"}, "provider_ref": maybe, "last_error": maybe,
            "next_attempt_at": time, "updated_at": time,
            "attempts": {"type": "array", "description": "On a submission's page: each attempt and lookup, oldest first",
                "items": {"type": "object",
                    "required": ["started_at", "duration_ms", "outcome", "http_status", "smtp_code", "error_class",
                                 "provider_ref", "detail"],
                    "properties": {"started_at": time, "duration_ms": {"type": "integer"},
                        "outcome": {"type": "string", "enum": texts(&AttemptOutcome::ALL, AttemptOutcome::as_str)},
                        "http_status": maybe_int, "smtp_code": maybe_int, "error_class": maybe,
                        "provider_ref": maybe, "detail": maybe}}}}}));
    schemas.insert(
        "ReadPair".into(),
        json!({"type": "object",
        "required": ["id", "original_id", "duplicate_id", "score", "reasons", "status"],
        "properties": {"id": text, "form": text, "original_id": text, "duplicate_id": text,
            "score": {"type": "number"}, "reasons": {"type": "array", "items": text}, "status": pair_status,
            "decided_by": text, "decided_at": time, "created_at": time}}),
    );
}
