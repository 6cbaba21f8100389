-- Sessions and their event logs. Times are Unix nanoseconds. Keys use the
-- "C" collation so that listing order is byte order, as in every backend.
-- State values are JSON, one row per key, so that concurrent writers of
-- different keys never contend on one row and a write costs the same
-- whatever the size of the state.
CREATE TABLE sessions (
	app_name    TEXT COLLATE "C" NOT NULL,
	user_id     TEXT COLLATE "C" NOT NULL,
	session_id  TEXT COLLATE "C" NOT NULL,
	seq         BIGINT NOT NULL DEFAULT 0,
	create_time BIGINT NOT NULL,
	update_time BIGINT NOT NULL,
	PRIMARY KEY (app_name, user_id, session_id)
);

CREATE TABLE session_state (
	app_name   TEXT COLLATE "C" NOT NULL,
	user_id    TEXT COLLATE "C" NOT NULL,
	session_id TEXT COLLATE "C" NOT NULL,
	name       TEXT COLLATE "C" NOT NULL,
	value      JSONB NOT NULL,
	PRIMARY KEY (app_name, user_id, session_id, name),
	FOREIGN KEY (app_name, user_id, session_id) REFERENCES sessions ON DELETE CASCADE
);

-- The primary key is the index every read uses: a session's events in
-- sequence order, found without touching other sessions' events. The event
-- is stored as json (verbatim text), not jsonb, so it reads back in the
-- canonical form the decoder's fast path expects.
CREATE TABLE events (
	app_name      TEXT COLLATE "C" NOT NULL,
	user_id       TEXT COLLATE "C" NOT NULL,
	session_id    TEXT COLLATE "C" NOT NULL,
	seq           BIGINT NOT NULL,
	id            TEXT NOT NULL,
	event_time    BIGINT NOT NULL,
	invocation_id TEXT NOT NULL,
	author        TEXT NOT NULL,
	event         JSON NOT NULL,
	PRIMARY KEY (app_name, user_id, session_id, seq),
	FOREIGN KEY (app_name, user_id, session_id) REFERENCES sessions ON DELETE CASCADE
);

CREATE TABLE app_state (
	app_name TEXT COLLATE "C" NOT NULL,
	name     TEXT COLLATE "C" NOT NULL,
	value    JSONB NOT NULL,
	PRIMARY KEY (app_name, name)
);

CREATE TABLE user_state (
	app_name TEXT COLLATE "C" NOT NULL,
	user_id  TEXT COLLATE "C" NOT NULL,
	name     TEXT COLLATE "C" NOT NULL,
	value    JSONB NOT NULL,
	PRIMARY KEY (app_name, user_id, name)
);
