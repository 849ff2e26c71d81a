DROP TABLE oidc_attempts;
DROP TABLE oidc_identities;
