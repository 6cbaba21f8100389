-- Sessions and their event logs. Times are Unix nanoseconds. State values
-- are JSON, one row per key, so that concurrent writers of different keys
-- never contend on one row and a write costs the same whatever the size of
-- the state.
CREATE TABLE sessions (
	app_name    TEXT    NOT NULL,
	user_id     TEXT    NOT NULL,
	session_id  TEXT    NOT NULL,
	seq         INTEGER NOT NULL DEFAULT 0,
	create_time INTEGER NOT NULL,
	update_time INTEGER NOT NULL,
	PRIMARY KEY (app_name, user_id, session_id)
) WITHOUT ROWID;

CREATE TABLE session_state (
	app_name   TEXT NOT NULL,
	user_id    TEXT NOT NULL,
	session_id TEXT NOT NULL,
	name       TEXT NOT NULL,
	value      TEXT NOT NULL,
	PRIMARY KEY (app_name, user_id, session_id, name),
	FOREIGN KEY (app_name, user_id, session_id) REFERENCES sessions ON DELETE CASCADE
) WITHOUT ROWID;

-- The primary key is the index every read uses: a session's events in
-- sequence order, found without touching other sessions' events.
CREATE TABLE events (
	app_name      TEXT    NOT NULL,
	user_id       TEXT    NOT NULL,
	session_id    TEXT    NOT NULL,
	seq           INTEGER NOT NULL,
	id            TEXT    NOT NULL,
	event_time    INTEGER NOT NULL,
	invocation_id TEXT    NOT NULL,
	author        TEXT    NOT NULL,
	event         BLOB    NOT NULL,
	PRIMARY KEY (app_name, user_id, session_id, seq),
	FOREIGN KEY (app_name, user_id, session_id) REFERENCES sessions ON DELETE CASCADE
) WITHOUT ROWID;

CREATE TABLE app_state (
	app_name TEXT NOT NULL,
	name     TEXT NOT NULL,
	value    TEXT NOT NULL,
	PRIMARY KEY (app_name, name)
) WITHOUT ROWID;

CREATE TABLE user_state (
	app_name TEXT NOT NULL,
	user_id  TEXT NOT NULL,
	name     TEXT NOT NULL,
	value    TEXT NOT NULL,
	PRIMARY KEY (app_name, user_id, name)
) WITHOUT ROWID;
