-- One row per (form, recipient): when that address was last sent a confirmation.
-- The recipient is the submission's keyed email digest, never the address itself.
CREATE TABLE confirmation_caps (
    form TEXT NOT NULL,
    email_digest TEXT NOT NULL,
    last_at TIMESTAMP NOT NULL,
    PRIMARY KEY (form, email_digest)
);
