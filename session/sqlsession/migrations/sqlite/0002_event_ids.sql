-- Event ids are unique within a session: an append checks that its id is
-- new through this index, whatever the length of the session.
CREATE INDEX events_id ON events (app_name, user_id, session_id, id);
