-- Requests to cancel a session's running invocations (session.Canceller):
-- the process that runs an invocation polls for rows newer than the id it
-- started watching from. Rows are deleted once older than a minute.
CREATE TABLE session_cancels (
	id         BIGSERIAL PRIMARY KEY,
	app_name   TEXT   NOT NULL,
	user_id    TEXT   NOT NULL,
	session_id TEXT   NOT NULL,
	requested  BIGINT NOT NULL
);
