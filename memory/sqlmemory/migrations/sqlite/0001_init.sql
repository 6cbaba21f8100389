-- Memories: one row per remembered event, indexed for full-text search by
-- an external-content FTS5 table that triggers keep in step. Times are Unix
-- nanoseconds; content is the entry's genai.Content as JSON.
CREATE TABLE memories (
	mid        INTEGER PRIMARY KEY,
	app_name   TEXT    NOT NULL,
	user_id    TEXT    NOT NULL,
	session_id TEXT    NOT NULL,
	id         TEXT    NOT NULL,
	author     TEXT    NOT NULL,
	event_time INTEGER NOT NULL,
	content    TEXT    NOT NULL,
	body       TEXT    NOT NULL
);
CREATE INDEX memories_session ON memories (app_name, user_id, session_id);

CREATE VIRTUAL TABLE memories_fts USING fts5(body, content = 'memories', content_rowid = 'mid');

CREATE TRIGGER memories_insert AFTER INSERT ON memories BEGIN
	INSERT INTO memories_fts (rowid, body) VALUES (new.mid, new.body);
END;
CREATE TRIGGER memories_delete AFTER DELETE ON memories BEGIN
	INSERT INTO memories_fts (memories_fts, rowid, body) VALUES ('delete', old.mid, old.body);
END;
