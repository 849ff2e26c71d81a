// @generated automatically by Diesel CLI.

diesel::table! {
    admin_forms (name) {
        name -> Text,
        source -> Text,
        version -> Text,
        saved_by -> Text,
        saved_at -> Timestamp,
    }
}

diesel::table! {
    api_token_uses (id) {
        id -> Text,
        token_id -> Text,
        at -> Timestamp,
        method -> Text,
        route -> Text,
    }
}

diesel::table! {
    api_tokens (id) {
        id -> Text,
        name -> Text,
        token_hash -> Text,
        scopes -> Text,
        form -> Nullable<Text>,
        created_by -> Text,
        created_at -> Timestamp,
        expires_at -> Nullable<Timestamp>,
        revoked_at -> Nullable<Timestamp>,
        last_used_at -> Nullable<Timestamp>,
    }
}

diesel::table! {
    audit_log (id) {
        id -> Text,
        user_id -> Text,
        user_email -> Text,
        action -> Text,
        target_type -> Text,
        target_id -> Text,
        note -> Nullable<Text>,
        at -> Timestamp,
    }
}

diesel::table! {
    blob_chunks (sha256, n) {
        sha256 -> Text,
        n -> Integer,
        bytes -> Binary,
    }
}

diesel::table! {
    blobs (sha256) {
        sha256 -> Text,
        size -> BigInt,
        complete -> Bool,
        written_at -> Timestamp,
    }
}

diesel::table! {
    changes (xid, seq) {
        xid -> BigInt,
        seq -> BigInt,
        kind -> Text,
        submission_id -> Text,
        form -> Text,
        subject_id -> Nullable<Text>,
        subject_kind -> Nullable<Text>,
        state -> Nullable<Text>,
        at -> Timestamp,
    }
}

diesel::table! {
    changes_start (id) {
        id -> Text,
        xid -> BigInt,
        seq -> BigInt,
    }
}

diesel::table! {
    confirmation_caps (form, email_digest) {
        form -> Text,
        email_digest -> Text,
        last_at -> Timestamp,
    }
}

diesel::table! {
    conflicts (id) {
        id -> Text,
        submission_id -> Text,
        fingerprint -> Text,
        fields_json -> Nullable<Text>,
        status -> Text,
        attempts -> Integer,
        first_seen_at -> Timestamp,
        last_seen_at -> Timestamp,
    }
}

diesel::table! {
    deliveries (id) {
        id -> Text,
        form -> Nullable<Text>,
        operation_id -> Nullable<Text>,
        submission_id -> Nullable<Text>,
        channel -> Text,
        outcome -> Text,
        http_status -> Integer,
        received_at -> Timestamp,
    }
}

diesel::table! {
    duplicate_pairs (id) {
        id -> Text,
        form -> Text,
        original_id -> Text,
        duplicate_id -> Text,
        score -> Double,
        reasons -> Text,
        status -> Text,
        decided_by -> Nullable<Text>,
        decided_at -> Nullable<Timestamp>,
        created_at -> Timestamp,
        candidates -> Nullable<Text>,
    }
}

diesel::table! {
    effect_attempts (id) {
        id -> Text,
        effect_id -> Text,
        started_at -> Timestamp,
        duration_ms -> Integer,
        outcome -> Text,
        http_status -> Nullable<Integer>,
        smtp_code -> Nullable<Integer>,
        error_class -> Nullable<Text>,
        provider_ref -> Nullable<Text>,
        detail -> Nullable<Text>,
    }
}

diesel::table! {
    form_versions (form, version) {
        form -> Text,
        version -> Text,
        definition -> Text,
        first_seen_at -> Timestamp,
    }
}

diesel::table! {
    inbound_conflicts (id) {
        id -> Text,
        event_row_id -> Text,
        content_hash -> Text,
        body -> Nullable<Text>,
        status -> Text,
        attempts -> Integer,
        first_seen_at -> Timestamp,
        last_seen_at -> Timestamp,
    }
}

diesel::table! {
    inbound_deliveries (id) {
        id -> Text,
        source -> Text,
        event_row_id -> Nullable<Text>,
        outcome -> Text,
        http_status -> Integer,
        received_at -> Timestamp,
    }
}

diesel::table! {
    inbound_events (id) {
        id -> Text,
        source -> Text,
        event_id -> Text,
        content_hash -> Text,
        body -> Nullable<Text>,
        content_type -> Text,
        deliveries -> Integer,
        first_received_at -> Timestamp,
        last_received_at -> Timestamp,
    }
}

diesel::table! {
    inbound_quarantine (id) {
        id -> Text,
        source -> Text,
        body -> Nullable<Text>,
        content_type -> Text,
        status -> Text,
        event_row_id -> Nullable<Text>,
        decided_by -> Nullable<Text>,
        decided_at -> Nullable<Timestamp>,
        received_at -> Timestamp,
    }
}

diesel::table! {
    oidc_attempts (state_hash) {
        state_hash -> Text,
        browser_hash -> Text,
        nonce -> Text,
        code_verifier -> Text,
        created_at -> Timestamp,
    }
}

diesel::table! {
    oidc_identities (issuer, subject) {
        issuer -> Text,
        subject -> Text,
        user_id -> Text,
        created_at -> Timestamp,
        last_sign_in_at -> Timestamp,
    }
}

diesel::table! {
    purge_passes (id) {
        id -> Text,
        started_at -> Timestamp,
        duration_ms -> BigInt,
        purged_rows -> BigInt,
    }
}

diesel::table! {
    purge_totals (form, kind) {
        form -> Text,
        kind -> Text,
        purged_rows -> BigInt,
    }
}

diesel::table! {
    sessions (token_hash) {
        token_hash -> Text,
        user_id -> Text,
        csrf_token -> Text,
        created_at -> Timestamp,
        expires_at -> Timestamp,
        last_seen_at -> Nullable<Timestamp>,
    }
}

diesel::table! {
    side_effects (id) {
        id -> Text,
        submission_id -> Nullable<Text>,
        kind -> Text,
        batch -> Integer,
        effect_key -> Text,
        state -> Text,
        attempts -> Integer,
        next_attempt_at -> Timestamp,
        lease_owner -> Nullable<Text>,
        lease_expires_at -> Nullable<Timestamp>,
        provider_ref -> Nullable<Text>,
        last_error -> Nullable<Text>,
        created_at -> Timestamp,
        updated_at -> Timestamp,
        held -> Bool,
        inbound_event_id -> Nullable<Text>,
    }
}

diesel::table! {
    submission_files (submission_id, sha256) {
        submission_id -> Text,
        sha256 -> Text,
        scan -> Text,
    }
}

diesel::table! {
    submissions (id) {
        id -> Text,
        form -> Text,
        operation_id -> Text,
        fingerprint -> Text,
        fields_json -> Nullable<Text>,
        response_body -> Text,
        channel -> Text,
        keyless -> Bool,
        spam -> Bool,
        email_digest -> Nullable<Text>,
        phone_digest -> Nullable<Text>,
        received_at -> Timestamp,
        operation_expires_at -> Timestamp,
        content_purged_at -> Nullable<Timestamp>,
        duplicate_of -> Nullable<Text>,
        spam_reason -> Nullable<Text>,
        journey_id -> Nullable<Text>,
        name_digest -> Nullable<Text>,
        locale -> Nullable<Text>,
        consent_json -> Nullable<Text>,
        route -> Nullable<Text>,
        form_version -> Nullable<Text>,
        test -> Bool,
    }
}

diesel::table! {
    uploads (id) {
        id -> Text,
        form -> Text,
        sha256 -> Text,
        size -> BigInt,
        content_type -> Text,
        file_name -> Text,
        created_at -> Timestamp,
    }
}

diesel::table! {
    users (id) {
        id -> Text,
        email -> Text,
        password_hash -> Text,
        role -> Text,
        created_at -> Timestamp,
        disabled_at -> Nullable<Timestamp>,
        must_change_password -> Bool,
        locale -> Nullable<Text>,
    }
}

diesel::joinable!(api_token_uses -> api_tokens (token_id));
diesel::joinable!(conflicts -> submissions (submission_id));
diesel::joinable!(effect_attempts -> side_effects (effect_id));
diesel::joinable!(inbound_conflicts -> inbound_events (event_row_id));
diesel::joinable!(oidc_identities -> users (user_id));
diesel::joinable!(sessions -> users (user_id));
diesel::joinable!(side_effects -> inbound_events (inbound_event_id));
diesel::joinable!(side_effects -> submissions (submission_id));
diesel::joinable!(submission_files -> submissions (submission_id));

diesel::allow_tables_to_appear_in_same_query!(
    admin_forms,
    api_token_uses,
    api_tokens,
    audit_log,
    blob_chunks,
    blobs,
    changes,
    changes_start,
    confirmation_caps,
    conflicts,
    deliveries,
    duplicate_pairs,
    effect_attempts,
    form_versions,
    inbound_conflicts,
    inbound_deliveries,
    inbound_events,
    inbound_quarantine,
    oidc_attempts,
    oidc_identities,
    purge_passes,
    purge_totals,
    sessions,
    side_effects,
    submission_files,
    submissions,
    uploads,
    users,
);
