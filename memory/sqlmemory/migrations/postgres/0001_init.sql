-- Memories: one row per remembered event, with a generated tsvector
-- ('simple' configuration: lower-cased words, no stemming, no stop words)
-- under a GIN index. Times are Unix nanoseconds; content is the entry's
-- genai.Content as JSON.
CREATE TABLE memories (
	mid        BIGSERIAL PRIMARY KEY,
	app_name   TEXT   NOT NULL,
	user_id    TEXT   NOT NULL,
	session_id TEXT   NOT NULL,
	id         TEXT   NOT NULL,
	author     TEXT   NOT NULL,
	event_time BIGINT NOT NULL,
	content    TEXT   NOT NULL,
	body       TEXT   NOT NULL,
	words      TSVECTOR GENERATED ALWAYS AS (to_tsvector('simple', body)) STORED
);
CREATE INDEX memories_session ON memories (app_name, user_id, session_id);
CREATE INDEX memories_words ON memories USING GIN (words);
