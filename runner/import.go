package runner

import (
	"context"
	"errors"
	"fmt"

	"google.golang.org/genai"

	"github.com/loomkit/loom/event"
	"github.com/loomkit/loom/session"
)

// CreateSession creates a session with initial state and, optionally, a
// history supplied by a client (an exported conversation, say). Supplied
// events are data, never authority: they are checked (ids unique, not
// partial, with an author, the user speaking as the user) and stored as given, each marked imported
// (event.MetadataImported): no call they hold pauses the session or can be
// answered by a client (agent.Pending), and no invocation they belong to
// can be resumed (RunOptions.InvocationID, Resume), so nothing in them can
// run a tool, skip an approval or count as a finished step. On any error nothing is left behind: an invalid
// history is refused before the session is created, and a session whose
// history could not be stored is deleted. Errors about the history wrap
// ErrInvalid.
func (r *Runner) CreateSession(ctx context.Context, userID, sessionID string, state map[string]any, events []*event.Event) (*session.Session, error) {
	if err := r.checkImported(events); err != nil {
		return nil, err
	}
	key := session.Key{AppName: r.cfg.AppName, UserID: userID, SessionID: sessionID}
	svc := r.cfg.Sessions
	sess, err := svc.Create(ctx, key, state)
	if err != nil {
		return nil, err
	}
	for _, ev := range events {
		ev = ev.Clone()
		ev.MarkImported()
		if err := svc.AppendEvent(ctx, sess, ev); err != nil {
			key.SessionID = sess.ID()
			if derr := svc.Delete(context.WithoutCancel(ctx), key); derr != nil && !errors.Is(derr, session.ErrNotFound) {
				err = errors.Join(err, derr)
			}
			return nil, fmt.Errorf("runner: store event %s of the new session: %w", ev.ID, err)
		}
	}
	return sess, nil
}

// checkImported checks a client-supplied history.
func (r *Runner) checkImported(events []*event.Event) error {
	ids := make(map[string]bool, len(events))
	for i, ev := range events {
		bad := func(format string, args ...any) error {
			return fmt.Errorf("%w: event %d: %s", ErrInvalid, i, fmt.Sprintf(format, args...))
		}
		switch {
		case ev == nil:
			return bad("null event")
		case ev.Partial:
			return bad("a partial event cannot be stored")
		case ev.ID != "" && ids[ev.ID]:
			return bad("duplicate id %q", ev.ID)
		case ev.Author == "":
			return bad("no author")
		}
		ids[ev.ID] = ev.ID != ""
		if c := ev.Content; c != nil {
			// An agent's event may hold user content (ADK's graph
			// workflows relay the user's message so); the user never
			// speaks as the model.
			if ev.Author == event.AuthorUser && c.Role != "" && c.Role != genai.RoleUser {
				return bad("the user's content has role %q", c.Role)
			}
		}
	}
	return nil
}
