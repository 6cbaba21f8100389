package runner

import (
	"context"
	"fmt"

	"github.com/loomkit/loom/event"
	"github.com/loomkit/loom/session"
)

// UpdateState changes a session's state by delta outside any invocation,
// as ADK's session update does: it appends one event, authored by the user
// under a new invocation id "p-<uuid>", whose only action is the delta. It
// returns the session as stored afterwards (temp: keys of the delta are
// not stored). An empty delta appends nothing.
//
// UpdateState holds the session's invocation lock and lease, as an
// invocation does, so it waits for a running invocation to end instead of
// making that invocation's next commit stale, and the runner's live copy of
// the session sees the change. A missing session fails with
// [session.ErrNotFound] and is not created; plugins do not see the event,
// which belongs to no invocation.
func (r *Runner) UpdateState(ctx context.Context, userID, sessionID string, delta map[string]any) (*session.Session, error) {
	key := session.Key{AppName: r.cfg.AppName, UserID: userID, SessionID: sessionID}
	if len(delta) == 0 {
		return r.cfg.Sessions.Get(ctx, key, nil)
	}
	var out *session.Session
	err := r.withSession(ctx, userID, sessionID, false, func(sess *session.Session) error {
		ev := event.New("p-"+event.NewID(), event.AuthorUser)
		ev.Actions.StateDelta = event.CloneMap(delta)
		if err := r.cfg.Sessions.AppendEvent(ctx, sess, ev); err != nil {
			return fmt.Errorf("runner: update state: %w", err)
		}
		// Read back: the stored session, not the runner's live copy.
		var err error
		out, err = r.cfg.Sessions.Get(ctx, key, nil)
		return err
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}
