-- The accept transaction as SQL, for pgbench (see pgbench.rs): the same rows onceform writes,
-- under the same form, so that the planner sees the same statistics.
\set n random(1, 9000000000000000)
BEGIN;
INSERT INTO submissions (id, form, operation_id, fingerprint, fields_json, response_body, channel, email_digest, received_at, operation_expires_at) VALUES ('s-' || :n, 'contact', 'pgbench-' || :n, md5(:n::text), '{"name":"Bench"}', '{"status":"accepted"}', 'api', md5(:n::text), now(), now() + interval '30 days') ON CONFLICT (form, operation_id) DO NOTHING;
SELECT id FROM submissions WHERE form = 'contact' AND id <> 's-' || :n AND received_at >= now() - interval '1 day' AND spam = false AND email_digest = md5(:n::text) ORDER BY received_at DESC LIMIT 20;
INSERT INTO side_effects (id, submission_id, kind, batch, effect_key, state, held, next_attempt_at, created_at, updated_at) VALUES ('e1-' || :n, 's-' || :n, 'crm_lead', 0, 's-' || :n || ':crm_lead:0', 'PENDING', false, now(), now(), now()), ('e2-' || :n, 's-' || :n, 'confirmation_email', 0, 's-' || :n || ':confirmation_email:0', 'PENDING', false, now(), now(), now()), ('e3-' || :n, 's-' || :n, 'owner_notification', 0, 's-' || :n || ':owner_notification:0', 'PENDING', false, now(), now(), now());
INSERT INTO deliveries (id, form, operation_id, submission_id, channel, outcome, http_status, received_at) VALUES ('d-' || :n, 'contact', 'pgbench-' || :n, 's-' || :n, 'api', 'created', 201, now());
END;
