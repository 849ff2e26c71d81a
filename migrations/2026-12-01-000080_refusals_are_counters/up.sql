-- Requests refused before the accept transaction are counters now (onceform_refused_requests_total),
-- never rows: the rows earlier releases wrote for them (no submission, and an outcome only a
-- refusal has) go, since nothing would ever purge them.
DELETE FROM deliveries WHERE submission_id IS NULL AND outcome IN ('rejected', 'invalid', 'rate_limited');
