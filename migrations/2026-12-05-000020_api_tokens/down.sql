DROP INDEX submissions_received_id;
DROP TABLE api_token_uses;
DROP TABLE api_tokens;
