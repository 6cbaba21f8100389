package server

import (
	"encoding/json"
	"errors"
	"net/http"
	"strconv"

	"github.com/loomkit/loom/cost"
	"github.com/loomkit/loom/event"
	"github.com/loomkit/loom/runner"
	"github.com/loomkit/loom/session"
)

// sessionKey returns the runner and session key named by the request path.
func (s *Server) sessionKey(r *http.Request) (*runner.Runner, session.Key, error) {
	a, err := s.app(r.PathValue("app"))
	if err != nil {
		return nil, session.Key{}, err
	}
	return a, session.Key{AppName: a.AppName(), UserID: r.PathValue("user"), SessionID: r.PathValue("sid")}, nil
}

// createSession serves POST /apps/{app}/users/{user}/sessions with an
// optional body {sessionId?, state?, events?}.
func (s *Server) createSession(w http.ResponseWriter, r *http.Request) error {
	a, key, err := s.sessionKey(r)
	if err != nil {
		return err
	}
	f, err := readObject(r)
	if err != nil {
		return err
	}
	if key.SessionID, err = f.id("sessionId"); err != nil {
		return err
	}
	state, err := f.object("state")
	if err != nil {
		return err
	}
	events, err := f.events("events")
	if err != nil {
		return err
	}
	return s.create(w, r, a, key, state, events)
}

// createSessionLegacy serves POST /apps/{app}/users/{user}/sessions/{sid},
// whose body is the initial state.
func (s *Server) createSessionLegacy(w http.ResponseWriter, r *http.Request) error {
	a, key, err := s.sessionKey(r)
	if err != nil {
		return err
	}
	body, err := readBody(r)
	if err != nil {
		return err
	}
	var state map[string]any
	if len(body) > 0 {
		if err := json.Unmarshal(body, &state); err != nil {
			return unprocessable("The body must be a JSON object holding the initial state")
		}
	}
	return s.create(w, r, a, key, state, nil)
}

// create creates a session; a history in the request is imported as data
// (runner.CreateSession), unless the server refuses histories.
func (s *Server) create(w http.ResponseWriter, r *http.Request, a *runner.Runner, key session.Key, state map[string]any, events []*event.Event) error {
	if len(events) > 0 && s.cfg.RefuseSessionHistory {
		return &detailError{detail: "This server does not accept sessions created with events", err: errForbidden}
	}
	if err := s.authorizeState(r, key.UserID, append(eventStates(events), state)...); err != nil {
		return err
	}
	sess, err := a.CreateSession(r.Context(), key.UserID, key.SessionID, state, events)
	if err != nil {
		return sessionError(key.SessionID, err)
	}
	return writeJSON(w, http.StatusOK, sess)
}

// listSessions serves GET /apps/{app}/users/{user}/sessions: every session
// of the user, without events.
func (s *Server) listSessions(w http.ResponseWriter, r *http.Request) error {
	a, key, err := s.sessionKey(r)
	if err != nil {
		return err
	}
	out := []*session.Session{}
	opts := &session.ListOptions{PageSize: 1000}
	for {
		res, err := a.Sessions().List(r.Context(), key.AppName, key.UserID, opts)
		if err != nil {
			return err
		}
		out = append(out, res.Sessions...)
		if res.NextPageToken == "" {
			break
		}
		opts.PageToken = res.NextPageToken
	}
	return writeJSON(w, http.StatusOK, out)
}

// getSession serves GET .../sessions/{sid}: the session with its events and
// merged state. The optional query parameters numRecentEvents and
// afterTimestamp (float seconds) window the events.
func (s *Server) getSession(w http.ResponseWriter, r *http.Request) error {
	a, key, err := s.sessionKey(r)
	if err != nil {
		return err
	}
	opts, err := getOptions(r)
	if err != nil {
		return err
	}
	sess, err := a.Sessions().Get(r.Context(), key, opts)
	if err != nil {
		return sessionError(key.SessionID, err)
	}
	return writeJSON(w, http.StatusOK, sess)
}

func getOptions(r *http.Request) (*session.GetOptions, error) {
	q := r.URL.Query()
	param := func(camelName, snake string) string {
		if v := q.Get(camelName); v != "" {
			return v
		}
		return q.Get(snake)
	}
	var opts session.GetOptions
	if v := param("numRecentEvents", "num_recent_events"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 0 {
			return nil, unprocessable("numRecentEvents must be a non-negative integer")
		}
		opts.NumRecentEvents = n
	}
	if v := param("afterTimestamp", "after_timestamp"); v != "" {
		f, err := strconv.ParseFloat(v, 64)
		if err != nil {
			return nil, unprocessable("afterTimestamp must be a number of seconds")
		}
		opts.After = event.FromSeconds(f)
	}
	return &opts, nil
}

// patchSession serves PATCH .../sessions/{sid} with {stateDelta}: it appends
// a user event carrying the delta (invocation id "p-<uuid>") and returns the
// updated session. A missing or empty delta changes nothing. The append
// goes through the runner (runner.Runner.UpdateState), so it waits for an
// invocation running in the session instead of making it stale.
func (s *Server) patchSession(w http.ResponseWriter, r *http.Request) error {
	a, key, err := s.sessionKey(r)
	if err != nil {
		return err
	}
	f, err := readObject(r)
	if err != nil {
		return err
	}
	delta, err := f.object("stateDelta")
	if err != nil {
		return err
	}
	if err := s.authorizeState(r, key.UserID, delta); err != nil {
		return err
	}
	sess, err := a.UpdateState(r.Context(), key.UserID, key.SessionID, delta)
	if err != nil {
		return sessionError(key.SessionID, err)
	}
	return writeJSON(w, http.StatusOK, sess)
}

// deleteSession serves DELETE .../sessions/{sid}: the session, its events
// and its artifacts (not the user's shared ones) go. It answers null.
func (s *Server) deleteSession(w http.ResponseWriter, r *http.Request) error {
	a, key, err := s.sessionKey(r)
	if err != nil {
		return err
	}
	if err := a.DeleteSession(r.Context(), key.UserID, key.SessionID); err != nil {
		return sessionError(key.SessionID, err)
	}
	return writeJSON(w, http.StatusOK, nil)
}

// forkSession serves POST .../sessions/{sid}/fork with an optional body
// {sessionId?, eventId?}: a new session copying the events up to and
// including eventId (all when absent) and the artifacts they refer to. It
// answers the new session. Both ids are checked as createSession checks
// the new session's (400).
func (s *Server) forkSession(w http.ResponseWriter, r *http.Request) error {
	a, key, err := s.sessionKey(r)
	if err != nil {
		return err
	}
	f, err := readObject(r)
	if err != nil {
		return err
	}
	newID, err := f.id("sessionId")
	if err != nil {
		return err
	}
	eventID, err := f.id("eventId")
	if err != nil {
		return err
	}
	sess, err := a.Fork(r.Context(), key.UserID, key.SessionID, eventID, newID)
	if err != nil {
		if errors.Is(err, session.ErrAlreadyExists) {
			return sessionError(newID, err)
		}
		return sessionError(key.SessionID, err)
	}
	return writeJSON(w, http.StatusOK, sess)
}

// sessionUsage serves GET /apps/{app}/users/{user}/sessions/{sid}/usage:
// the session's token usage and cost, in total and per turn.
func (s *Server) sessionUsage(w http.ResponseWriter, r *http.Request) error {
	a, key, err := s.sessionKey(r)
	if err != nil {
		return err
	}
	sess, err := a.Sessions().Get(r.Context(), key, nil)
	if err != nil {
		return sessionError(key.SessionID, err)
	}
	return writeJSON(w, http.StatusOK, cost.Session(sess.Events(), s.cfg.Prices))
}

// cancelSession serves POST .../sessions/{sid}/cancel: it cancels the
// invocations running in the session and answers {"cancelled": n}.
func (s *Server) cancelSession(w http.ResponseWriter, r *http.Request) error {
	a, key, err := s.sessionKey(r)
	if err != nil {
		return err
	}
	if s.cfg.Invoker != nil {
		if err := s.cfg.Invoker.Cancel(r.Context(), a, key.UserID, key.SessionID); err != nil {
			return err
		}
	}
	n := s.runs.cancel(sessionRef{key.AppName, key.UserID, key.SessionID})
	// Replicas sharing the session store get the cancel too: an invocation
	// of the session running on another one stops within the store's
	// polling delay. n counts this server's invocations only.
	if _, err := a.Sessions().Cancel(r.Context(), key); err != nil {
		return err
	}
	return writeJSON(w, http.StatusOK, map[string]int{"cancelled": n})
}
