// Matches migrations/*/ (see migrations/README.md). Shared types only.

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
        journey_id -> Nullable<Text>,
    }
}

diesel::table! {
    side_effects (id) {
        id -> Text,
        submission_id -> Text,
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
    users (id) {
        id -> Text,
        email -> Text,
        password_hash -> Text,
        role -> Text,
        created_at -> Timestamp,
    }
}

diesel::table! {
    sessions (token_hash) {
        token_hash -> Text,
        user_id -> Text,
        csrf_token -> Text,
        created_at -> Timestamp,
        expires_at -> Timestamp,
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

diesel::joinable!(side_effects -> submissions (submission_id));
diesel::joinable!(sessions -> users (user_id));
diesel::joinable!(conflicts -> submissions (submission_id));
diesel::joinable!(effect_attempts -> side_effects (effect_id));

diesel::allow_tables_to_appear_in_same_query!(
    submissions,
    side_effects,
    effect_attempts,
    conflicts,
    deliveries,
    users,
    sessions,
    audit_log,
    duplicate_pairs,
    purge_passes,
    purge_totals,
);
