//! The OpenAPI paths and schemas of each configured form: its fields become the request
//! schema of its JSON and HTML submit endpoints, so a client sees exactly what is accepted.

use serde_json::{json, Map, Value};

use crate::config::FormConfig;
use crate::domain::EffectState;
use crate::domain::{FieldConfig, FieldType};

/// Characters refused anywhere in a text field: C0 and C1 controls other than tab, LF and
/// CR, and the bidirectional controls and zero-width spaces of `domain::is_invisible`.
const NO_CONTROLS: &str = "\\u0000-\\u0008\\u000B\\u000C\\u000E-\\u001F\\u007F-\\u009F\\u061C\\u180E\\u200B\\u200E\\u200F\\u202A-\\u202E\\u2060-\\u2064\\u2066-\\u2069\\uFEFF";

/// What a phone number may hold besides its digits and leading `+` (ignored by the server).
const PHONE_SEPARATORS: &str = "[ ()./\\t\\u3000-]";

/// The whitespace an email field drops (an optional field sent blank counts as absent).
const BLANK: &str = "^[\\t\\n\\r \\u00A0\\u1680\\u2000-\\u200A\\u2028\\u2029\\u202F\\u205F\\u3000]*$";

/// The operation ID syntax (16–255 of `A–Z a–z 0–9 _ - . :`).
pub const OPERATION_ID_PATTERN: &str = "^[A-Za-z0-9_.:-]{16,255}$";

/// The `operation_id` field of a browser's post: an operation ID a client may choose (not
/// in the `keyless:` namespace), or empty for a keyless post.
pub fn form_operation_id() -> Value {
    json!({"anyOf": [{"type": "string", "pattern": OPERATION_ID_PATTERN}, {"type": "string", "maxLength": 0}],
           "description": "16 to 255 characters of A–Z a–z 0–9 _ - . : (not starting with `keyless:`); \
                           empty or absent: a keyless post",
           "example": "op_2f1c9a4e5b6d7c8e9f00112233445566"})
}

/// The JSON schema of one field's value as sent.
pub fn field_schema(field: &FieldConfig) -> Value {
    let max = field.max_length();
    let mut s = match field.kind {
        FieldType::Select | FieldType::Radio => {
            let mut options: Vec<Value> = field.options.iter().map(|o| json!(o)).collect();
            if !field.required {
                options.push(json!(""));
            }
            json!({"type": "string", "enum": options})
        }
        FieldType::Email => json!({"type": "string", "format": "email", "maxLength": max}),
        FieldType::Phone => json!({
            "type": "string",
            "maxLength": max,
            "pattern": format!("^{PHONE_SEPARATORS}*\\+?({PHONE_SEPARATORS}*[0-9]){{7,15}}{PHONE_SEPARATORS}*$"),
            "description": "7 to 15 digits, optionally after a `+`; spaces (U+3000 too), ( ) - . / are ignored"
        }),
        FieldType::File => {
            let one = json!({"type": "string", "pattern": "^upl_[0-9a-f]{32}$"});
            json!({"anyOf": [{"type": "array", "items": one, "maxItems": field.max_files()}, one],
                   "description": "upload IDs from POST /api/forms/{form}/uploads (the file's type and size are \
                                   checked on submission)"})
        }
        FieldType::Checkboxes | FieldType::Multiselect => {
            let one = json!({"type": "string", "enum": field.options});
            let min_items = usize::from(field.required);
            json!({"anyOf": [{"type": "array", "items": one, "minItems": min_items}, one],
                   "description": "any of the options, each once (the order does not matter)"})
        }
        FieldType::Checkbox | FieldType::Consent => {
            let ticked = ["on", "true", "1", "yes"];
            let values: Vec<&str> = match field.kind == FieldType::Consent || field.required {
                true => ticked.to_vec(),
                false => ticked.iter().chain(&["off", "false", "0", "no", ""]).copied().collect(),
            };
            let boolean = match field.kind == FieldType::Consent || field.required {
                true => json!({"type": "boolean", "enum": [true]}),
                false => json!({"type": "boolean"}),
            };
            let description = match &field.version {
                Some(v) => {
                    format!("ticked: `true` (or `on`, as a browser sends it); stores consent version {v}")
                }
                None => "ticked: `true` (or `on`, as a browser sends it)".to_string(),
            };
            json!({"anyOf": [boolean, {"type": "string", "enum": values}], "description": description})
        }
        FieldType::Number => {
            let mut n = json!({"type": "number"});
            let mut text =
                json!({"type": "string", "pattern": "^[+-]?[0-9]+(\\.[0-9]+)?$", "maxLength": max});
            for (key, bound) in [("minimum", &field.min), ("maximum", &field.max)] {
                if let Some(crate::domain::Bound::Number(b)) = bound {
                    n[key] = json!(b);
                }
            }
            if let Some(step) = field.step {
                n["multipleOf"] = json!(step);
            }
            text["description"] = json!("a decimal number, as a browser sends it");
            json!({"anyOf": [n, text], "description": "a number within the field's minimum, maximum and step"})
        }
        FieldType::Date => json!({
            "type": "string", "format": "date", "pattern": "^[0-9]{4}-[0-9]{2}-[0-9]{2}$",
            "description": bounds_description(field)
        }),
        FieldType::Url => {
            json!({"type": "string", "format": "uri", "pattern": "^[Hh][Tt][Tt][Pp][Ss]?://", "maxLength": max})
        }
        FieldType::Text | FieldType::Textarea | FieldType::Hidden => {
            let pattern = if field.required {
                format!("^[^{NO_CONTROLS}]*[^\\s{NO_CONTROLS}][^{NO_CONTROLS}]*$")
            } else {
                format!("^[^{NO_CONTROLS}]*$")
            };
            json!({"type": "string", "maxLength": max, "pattern": pattern})
        }
    };
    if let Some(obj) = s.as_object_mut() {
        obj.insert("title".into(), json!(field.label()));
        // An optional field sent empty (or blank) counts as absent.
        let blank = match field.kind {
            FieldType::Email => Some(BLANK.to_string()),
            FieldType::Phone => Some(format!("^{PHONE_SEPARATORS}*$")),
            _ => None,
        };
        if let Some(blank) = blank.filter(|_| !field.required) {
            let value = Value::Object(obj.clone());
            let blank = json!({"type": "string", "maxLength": max, "pattern": blank});
            s = json!({"title": field.label(), "anyOf": [value, blank],
                       "description": "empty or blank: the field counts as not sent"});
        }
    }
    s
}

/// A date field's bounds in words (JSON Schema has no bounds for dates).
fn bounds_description(field: &FieldConfig) -> String {
    let day = |b: &Option<crate::domain::Bound>| match b {
        Some(crate::domain::Bound::Day(d)) => Some(d.to_string()),
        _ => None,
    };
    match (day(&field.min), day(&field.max)) {
        (Some(a), Some(b)) => format!("a day, YYYY-MM-DD, from {a} to {b}"),
        (Some(a), None) => format!("a day, YYYY-MM-DD, on or after {a}"),
        (None, Some(b)) => format!("a day, YYYY-MM-DD, on or before {b}"),
        (None, None) => "a day, YYYY-MM-DD".to_string(),
    }
}

/// The fields of a form as a JSON object schema; `extra` adds non-field members (HTML: the
/// operation ID).
pub fn fields_schema(form: &FormConfig, nullable: bool, extra: &[(&str, Value)]) -> Value {
    let mut properties = Map::new();
    let mut required = Vec::new();
    for field in &form.fields {
        let mut schema = field_schema(field);
        if nullable && !field.required {
            schema = json!({"anyOf": [schema, {"type": "null"}]});
        }
        properties.insert(field.name.clone(), schema);
        if field.required {
            required.push(json!(field.name));
        }
    }
    for (name, schema) in extra {
        properties.insert((*name).to_string(), schema.clone());
    }
    let additional = match form.undeclared_fields {
        crate::domain::Undeclared::Reject => json!(false),
        crate::domain::Undeclared::Keep => json!({
            "type": "string",
            "maxLength": crate::domain::MAX_UNDECLARED_VALUE,
            "description": "undeclared_fields = keep: other fields are stored as text (at most 20)"
        }),
    };
    json!({"type": "object", "properties": properties, "required": required, "additionalProperties": additional})
}

/// A browser's multipart post: the fields as text, each file field its files' bytes.
fn multipart_schema(form: &FormConfig) -> Value {
    let mut schema = fields_schema(form, false, &[("operation_id", form_operation_id())]);
    for f in form.fields.iter().filter(|f| f.kind == FieldType::File) {
        schema["properties"][&f.name] = json!({"type": "array", "maxItems": f.max_files(),
            "items": {"type": "string", "format": "binary"}});
    }
    schema
}

/// `POST /api/forms/{name}/uploads` (404 for a form without a file field).
fn uploads_path(name: &str, tag: &str) -> Value {
    json!({"post": {
        "operationId": format!("upload_{name}"), "tags": [tag],
        "summary": "Upload one file ahead of its submission, which names the answered `upload_id` in its file \
            field; an upload not named within an hour is deleted",
        "parameters": [{"name": "Onceform-File-Name", "in": "header", "required": false,
            "description": "The file's name, percent-encoded (shown to the form's owner, never used as a path)",
            "schema": {"type": "string", "maxLength": 1000}}],
        "requestBody": {"required": true, "content": {"*/*": {"schema": {"type": "string", "format": "binary"}}}},
        "responses": {
            "201": {"description": "Stored: its ID, the SHA-256 of its content, its size and the type read from \
                its first bytes (never the declared Content-Type)",
                "content": {"application/json": {"schema": {"type": "object",
                    "required": ["upload_id", "sha256", "size", "content_type"],
                    "properties": {"upload_id": {"type": "string", "pattern": "^upl_[0-9a-f]{32}$"},
                                   "sha256": {"type": "string", "pattern": "^[0-9a-f]{64}$"},
                                   "size": {"type": "integer", "minimum": 1},
                                   "content_type": {"type": "string"}}}}}},
            "400": problem("The body is empty or could not be read", &["malformed-body"]),
            "404": problem("This form takes no files", &["not-found"]),
            "413": problem("Larger than the form's file fields take", &["payload-too-large"]),
            "415": problem("Of a type (read from its first bytes) that none of the form's file fields \
                accepts; nothing was stored", &["unsupported-media-type"]),
            "429": problem_retry("Rate limited", &["rate-limited"]),
            "503": problem_retry("The file could not be stored", &["service-unavailable"])
        }
    }})
}

fn example(form: &FormConfig) -> Value {
    let mut obj = Map::new();
    for f in form.fields.iter().filter(|f| f.required) {
        let v = match f.kind {
            FieldType::Email => "ada@example.com".to_string(),
            FieldType::Phone => "+41441234567".to_string(),
            FieldType::Select | FieldType::Radio => f.options.first().cloned().unwrap_or_default(),
            FieldType::Checkboxes | FieldType::Multiselect => {
                obj.insert(f.name.clone(), json!(f.options.first().into_iter().collect::<Vec<_>>()));
                continue;
            }
            FieldType::Checkbox | FieldType::Consent => {
                obj.insert(f.name.clone(), json!(true));
                continue;
            }
            FieldType::Number => match f.min {
                Some(crate::domain::Bound::Number(min)) => format!("{min}"),
                _ => "1".to_string(),
            },
            FieldType::Date => match f.min {
                Some(crate::domain::Bound::Day(min)) => min.to_string(),
                _ => "2026-01-15".to_string(),
            },
            FieldType::Url => "https://example.com/".to_string(),
            FieldType::File => {
                obj.insert(f.name.clone(), json!(["upl_0193b2c4d5e6f708192a3b4c5d6e7f80"]));
                continue;
            }
            FieldType::Text | FieldType::Textarea | FieldType::Hidden => "Ada".to_string(),
        };
        obj.insert(f.name.clone(), json!(v));
    }
    Value::Object(obj)
}

/// The result body of an accepted submission (first acceptance and every replay).
pub fn result_schema() -> Value {
    accepted_body(json!({
        "type": "object", "required": ["kind", "state"],
        "properties": {"kind": {"enum": crate::services::effects::kind_names()}, "state": {"enum": effect_states()}}
    }))
}

/// The status body: ids and each effect's current state, never content.
pub fn status_schema() -> Value {
    accepted_body(json!({
        "type": "object", "required": ["kind", "batch", "state", "attempts", "updated_at"],
        "properties": {
            "kind": {"type": "string"},
            "batch": {"type": "integer"},
            "state": {"enum": effect_states(), "description": "see the effect states in docs/API.md"},
            "attempts": {"type": "integer", "minimum": 0},
            "updated_at": {"type": "string", "format": "date-time"}
        }
    }))
}

fn effect_states() -> Vec<&'static str> {
    EffectState::ALL.iter().map(|s| s.as_str()).collect()
}

/// An accepted submission's ids and times, with one `effect` item per side-effect record.
fn accepted_body(effect: Value) -> Value {
    json!({
        "type": "object",
        "required": ["submission_id", "operation_id", "form", "status", "received_at", "operation_expires_at", "effects"],
        "properties": {
            "submission_id": {"type": "string"},
            "operation_id": {"type": "string"},
            "form": {"type": "string"},
            "status": {"const": "accepted"},
            "received_at": {"type": "string", "format": "date-time"},
            "operation_expires_at": {"type": "string", "format": "date-time"},
            "effects": {"type": "array", "items": effect},
            "route": {"type": "string", "description": "the form's route that applied (its name, or `#INDEX`); absent when none did"},
            "version": {"type": "string", "description": "the version of the form the submission was accepted under (a digest of its definition); absent for a form not read from TOML"}
        }
    })
}

fn problem(description: &str, types: &[&str]) -> Value {
    let list = types.iter().map(|t| format!("`{t}`")).collect::<Vec<_>>().join(", ");
    json!({
        "description": format!("{description} (problem types: {list})"),
        "content": {"application/problem+json": {"schema": {"$ref": "#/components/schemas/Problem"}}}
    })
}

fn problem_retry(description: &str, types: &[&str]) -> Value {
    let mut r = problem(description, types);
    r["headers"] = json!({"Retry-After": {"$ref": "#/components/headers/Retry-After"}});
    r
}

/// A 409: `Retry-After` comes with `operation-in-progress` only.
fn conflict() -> Value {
    let mut r = problem(
        "The key was used for different content (the original `submission_id` is named), or its first request is still in flight (then with `Retry-After`)",
        &["operation-conflict", "operation-in-progress"],
    );
    r["headers"] = json!({"Retry-After": {"description": "With operation-in-progress: seconds to wait",
        "required": false, "schema": {"type": "string", "pattern": "^[0-9]+$"}}});
    r
}

fn html(description: &str) -> Value {
    json!({"description": description, "content": {"text/html": {"schema": {"type": "string"}}}})
}

/// Every path of one form: operations, submit, status, and the HTML form, post and receipt.
pub fn paths(name: &str, form: &FormConfig, paths: &mut Map<String, Value>) {
    let tag = format!("form: {name}");
    let submit_id = format!("submit_{name}");
    let status_id = format!("status_{name}");
    let receipt_id = format!("receipt_{name}");
    let status_link = json!({"operationId": status_id,
        "parameters": {"operation_id": "$response.body#/operation_id"},
        "description": "The submission's status; the same URL as the `Location` header."});
    let key_header = json!({
        "name": "Idempotency-Key", "in": "header", "required": !form.allow_keyless_api,
        "description": "The operation ID: one per logical submission, reused on every retry. \
            Bare or an RFC 8941 string (`\"…\"`). It may instead be given as an `operation_id` \
            member of the body (both present and different: 400 `operation-id-mismatch`).",
        "schema": {"type": "string",
                   "pattern": "^(\"[A-Za-z0-9_.:-]{16,255}\"|[A-Za-z0-9_.:-]{16,255})$"}
    });
    let op_param = json!({"name": "operation_id", "in": "path", "required": true,
        "schema": {"type": "string", "pattern": OPERATION_ID_PATTERN}});
    let location = json!({"description": "Where the submission's status is read", "required": true,
        "schema": {"type": "string"}});

    paths.insert(
        format!("/api/forms/{name}/altcha"),
        json!({"get": {
            "operationId": format!("altcha_challenge_{name}"), "tags": [tag],
            "summary": "A signed, expiring ALTCHA proof-of-work challenge (forms whose captcha is `altcha`)",
            "responses": {
                "200": {"description": "The challenge: algorithm, challenge, salt, signature, maxnumber",
                        "content": {"application/json": {"schema": {"type": "object",
                            "required": ["algorithm", "challenge", "salt", "signature"]}}}},
                "404": {"description": "This form does not use ALTCHA",
                        "content": {"application/problem+json": {"schema": {"$ref": "#/components/schemas/Problem"}}}}
            }
        }}),
    );
    paths.insert(
        format!("/api/forms/{name}/operations"),
        json!({"post": {
            "operationId": format!("issue_operation_{name}"), "tags": [tag],
            "summary": "Issue a fresh operation ID for one logical submission",
            "responses": {"201": {
                "description": "A fresh operation ID and when it stops answering replays",
                "content": {"application/json": {"schema": {"type": "object",
                    "required": ["operation_id", "expires_at"],
                    "properties": {"operation_id": {"type": "string", "pattern": OPERATION_ID_PATTERN},
                                   "expires_at": {"type": "string", "format": "date-time"}}}}},
                "links": {
                    "Submit": {"operationId": submit_id,
                        "parameters": {"header.Idempotency-Key": "$response.body#/operation_id"},
                        "description": "Submit with this operation ID as the Idempotency-Key"},
                    "Status": {"operationId": status_id,
                        "parameters": {"operation_id": "$response.body#/operation_id"}}
                }
            }}
        }}),
    );

    let replay_headers = json!({"Location": location,
        "Idempotent-Replayed": {"required": true, "schema": {"const": "true"}}});
    paths.insert(format!("/api/forms/{name}/submissions"), json!({"post": {
        "operationId": submit_id, "tags": [tag],
        "summary": format!("Submit the `{name}` form (exactly once per operation ID)"),
        "parameters": [key_header, {"name": "Accept-Language", "in": "header", "required": false,
            "description": "The language of the 422's `errors` messages when the form's `locale` is `auto` \
                (negotiated among its `locales`; a value it cannot use, or one over 512 bytes, is ignored); \
                the `codes` never change with it",
            "schema": {"type": "string", "example": "zh-TW,zh;q=0.9,en;q=0.5"}}],
        "requestBody": {"required": true, "content": {"application/json": {
            "schema": fields_schema(form, true, &[]), "example": example(form)}}},
        "responses": {
            "201": {"description": "Accepted for the first time", "headers": {"Location": location},
                    "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Result"}}},
                    "links": {"Status": status_link}},
            "200": {"description": "A retry of the same content: the first response's body, byte for byte",
                    "headers": replay_headers,
                    "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Result"}}},
                    "links": {"Status": status_link}},
            "400": problem("The key or the body could not be used",
                &["operation-id-missing", "operation-id-invalid", "operation-id-mismatch", "malformed-body"]),
            "409": conflict(),
            "413": problem("The body is over the form's `max_body_bytes`", &["payload-too-large"]),
            "415": problem("The body is not JSON", &["unsupported-media-type"]),
            "422": {
                "description": "Some fields are invalid (problem type `validation-failed`): `errors` maps each \
                    field to its messages in the visitor's language, naming the field by its label; `codes` \
                    maps it to stable, machine-readable codes. The key is not consumed.",
                "headers": {"Content-Language": {"required": true, "description": "The language of `errors`",
                    "schema": {"enum": crate::base::i18n::Locale::ALL.map(|l| l.tag())}}},
                "content": {"application/problem+json": {"schema": {"$ref": "#/components/schemas/Problem"}}}
            },
            "429": problem_retry("Rate limited", &["rate-limited"]),
            "503": problem_retry("The database is unavailable; nothing was half-accepted", &["service-unavailable"])
        }
    }}));

    paths.insert(
        format!("/api/forms/{name}/submissions/{{operation_id}}"),
        json!({"get": {
            "operationId": status_id, "tags": [tag],
            "summary": "The status of a submission: ids and effect states, never content",
            "parameters": [op_param],
            "responses": {
                "200": {"description": "The submission and each side effect's current state",
                        "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Status"}}}},
                "400": problem("Not an operation ID", &["operation-id-invalid"]),
                "404": problem("No submission with this operation ID", &["not-found"]),
                "503": problem_retry("The database is unavailable", &["service-unavailable"])
            }
        }}),
    );

    paths.insert(
        format!("/f/{name}"),
        json!({
            "get": {"operationId": format!("form_page_{name}"), "tags": [tag],
                    "summary": "The HTML form, with a fresh operation ID and a honeypot",
                    "responses": {"200": html("The form")}},
            "post": {"operationId": format!("post_form_{name}"), "tags": [tag],
                "summary": "A browser's post of the form (a plain post without operation_id is keyless)",
                "requestBody": {"required": true, "content": {
                    "application/x-www-form-urlencoded": {"schema": fields_schema(form, false,
                        &[("operation_id", form_operation_id())])},
                    "multipart/form-data": {"schema": multipart_schema(form)}
                }},
                "responses": {
                    "303": {"description": "Accepted (or a replay of it): to the receipt",
                            "headers": {"Location": {"required": true, "schema": {"type": "string"}}}},
                    "400": html("The operation ID or the body could not be used"),
                    "409": html("The operation ID was used for different content, or is in flight"),
                    "413": html("The body is too large"),
                    "415": html("Not a form post"),
                    "422": html("The form again, with the values kept and a message by each invalid field"),
                    "429": html("Rate limited"),
                    "503": html("The database is unavailable")
                }}
        }),
    );

    paths.insert(format!("/api/forms/{name}/uploads"), uploads_path(name, &tag));

    paths.insert(
        format!("/f/{name}/receipt/{{operation_id}}"),
        json!({"get": {
            "operationId": receipt_id, "tags": [tag],
            "summary": "The thank-you page with a reference, never the content",
            "parameters": [op_param],
            "responses": {"200": html("The receipt"), "404": html("No such receipt"),
                          "503": html("The database is unavailable")}
        }}),
    );
}

#[cfg(test)]
mod tests {
    use super::NO_CONTROLS;

    /// The ranges of a `[…]` character class written with `\uXXXX` escapes.
    fn ranges(class: &str) -> Vec<(u32, u32)> {
        let points: Vec<&str> = class.split("\\u").skip(1).collect();
        let mut out = Vec::new();
        for p in points {
            let code = u32::from_str_radix(&p[..4], 16).unwrap();
            if out.last().is_some_and(|&(_, hi): &(u32, u32)| hi == u32::MAX) {
                out.last_mut().unwrap().1 = code;
            } else {
                out.push((code, if p.ends_with('-') { u32::MAX } else { code }));
            }
        }
        out
    }

    #[test]
    fn the_text_pattern_excludes_every_character_the_server_refuses() {
        let excluded = ranges(NO_CONTROLS);
        for c in (0..=0xFFFFu32).filter_map(char::from_u32) {
            let refused = crate::domain::is_invisible(c) || (c.is_control() && !"\t\n\r".contains(c));
            let in_class = excluded.iter().any(|&(lo, hi)| (lo..=hi).contains(&(c as u32)));
            assert_eq!(refused, in_class, "U+{:04X}", c as u32);
        }
    }
}
