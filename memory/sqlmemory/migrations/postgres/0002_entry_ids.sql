-- Memories are also found by entry id within a session, so that adding
-- some events of a session touches only their rows. The new index's
-- prefix serves the lookups by session the old one did.
CREATE INDEX memories_entry ON memories (app_name, user_id, session_id, id);
DROP INDEX memories_session;
