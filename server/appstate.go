package server

import (
	"fmt"
	"net/http"
	"slices"
	"strings"

	"github.com/loomkit/loom/eval"
	"github.com/loomkit/loom/event"
	"github.com/loomkit/loom/session"
)

// authorizeState is where state a client supplies is let in: a new
// session's state and history, a PATCH's delta, a run's state delta and an
// eval case's initial state (when the case is written and when it is run)
// all pass here. Keys of the app: scope are read by every user of the app,
// so writing them is a decision for the deployment: Config.AuthorizeAppState
// makes it when set; without it they are refused when Config.Authenticate
// is set (one user would write what every other user reads) and allowed
// otherwise, as ADK allows them. user is the user the write acts for.
func (s *Server) authorizeState(r *http.Request, user string, states ...map[string]any) error {
	var keys []string
	for _, st := range states {
		for k := range st {
			if strings.HasPrefix(k, session.PrefixApp) {
				keys = append(keys, k)
			}
		}
	}
	if len(keys) == 0 {
		return nil
	}
	slices.Sort(keys)
	keys = slices.Compact(keys)
	detail := fmt.Sprintf("Writing app-scoped state (%s) is not allowed", strings.Join(keys, ", "))
	if s.cfg.AuthorizeAppState == nil {
		if s.cfg.Authenticate == nil {
			return nil
		}
		return &detailError{detail: detail, err: errForbidden}
	}
	if err := s.cfg.AuthorizeAppState(r, user, keys); err != nil {
		return &detailError{detail: detail + ": " + err.Error(), err: fmt.Errorf("%w: %w", errForbidden, err)}
	}
	return nil
}

// eventStates returns the state deltas of a client-supplied history.
func eventStates(events []*event.Event) []map[string]any {
	var out []map[string]any
	for _, ev := range events {
		if ev != nil && len(ev.Actions.StateDelta) > 0 {
			out = append(out, ev.Actions.StateDelta)
		}
	}
	return out
}

// authorizeCases checks the initial states of eval cases, each for the
// user it runs as (the authenticated one, else the one it names, else
// eval.DefaultUserID).
func (s *Server) authorizeCases(r *http.Request, cases ...*eval.Case) error {
	bound, authenticated := AuthenticatedUser(r.Context())
	for _, c := range cases {
		if c == nil || c.SessionInput == nil {
			continue
		}
		user := c.SessionInput.UserID
		switch {
		case authenticated:
			user = bound
		case user == "":
			user = eval.DefaultUserID
		}
		if err := s.authorizeState(r, user, c.SessionInput.State); err != nil {
			return err
		}
	}
	return nil
}
