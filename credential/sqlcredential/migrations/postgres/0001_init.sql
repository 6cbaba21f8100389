-- Credentials: one sealed record (AES-256-GCM, see package credential) per
-- app, user and name. The table never holds a secret in clear.
CREATE TABLE credentials (
	app_name TEXT NOT NULL,
	user_id  TEXT NOT NULL,
	name     TEXT NOT NULL,
	record   BYTEA NOT NULL,
	PRIMARY KEY (app_name, user_id, name)
);
