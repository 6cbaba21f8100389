-- Session leases: the holder (a random owner token) is the session's only
-- writer until it deletes its row or lets it expire (Unix nanoseconds)
-- without renewing it. A process that dies holding a lease stops renewing
-- it, so another takes it over once it has expired. Leases are kept apart
-- from the sessions table so that a session that does not exist yet can
-- be leased, and so that renewing a lease never touches session rows.
CREATE TABLE session_leases (
	app_name   TEXT    NOT NULL,
	user_id    TEXT    NOT NULL,
	session_id TEXT    NOT NULL,
	owner      TEXT    NOT NULL,
	expires    INTEGER NOT NULL,
	PRIMARY KEY (app_name, user_id, session_id)
) WITHOUT ROWID;
