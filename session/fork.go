package session

import (
	"context"
	"fmt"

	"github.com/loomkit/loom/event"
)

// Fork creates the session dst as a copy of the session src up to and
// including the event upToEventID ("" copies every event), and returns it.
// An empty dst.SessionID is generated; an empty dst.AppName or dst.UserID is
// taken from src.
//
// The copies keep their ids, timestamps and actions, so compaction ranges
// and rewinds in the copied log mean the same as in src. Only the
// session-scoped state is copied: it is src's state as it was just after
// the cut event. app: and user: state is shared, not copied, and nothing is
// applied to it.
//
// The state after the cut is derived from src's current state by undoing
// the keys that events after the cut changed: such a key gets the value the
// last event up to the cut gave it, or is left out. A key that was set only
// by the initial state given to [Service.Create] and changed after the cut is
// therefore left out, since the initial state is not kept in any event.
//
// Fork fails with an error wrapping ErrNotFound if src does not exist,
// ErrInvalid if it has no event upToEventID, and ErrAlreadyExists if dst
// exists. Events are copied one append at a time; if copying fails, the
// partial dst is deleted.
func (s *Service) Fork(ctx context.Context, src Key, upToEventID string, dst Key) (*Session, error) {
	if err := checkKey(src, false); err != nil {
		return nil, err
	}
	if dst.AppName == "" {
		dst.AppName = src.AppName
	}
	if dst.UserID == "" {
		dst.UserID = src.UserID
	}
	if err := checkKey(dst, true); err != nil {
		return nil, err
	}
	if dst.SessionID == "" {
		dst.SessionID = s.newID()
	}
	rec, err := s.store.GetSession(ctx, src, Window{})
	if err != nil {
		return nil, fmt.Errorf("session: fork %s: %w", src.SessionID, err)
	}
	cut := len(rec.Events)
	if upToEventID != "" {
		cut = -1
		for i, e := range rec.Events {
			if e.ID == upToEventID {
				cut = i + 1
				break
			}
		}
		if cut < 0 {
			return nil, fmt.Errorf("%w: session %s has no event %q", ErrInvalid, src.SessionID, upToEventID)
		}
	}
	kept, later := rec.Events[:cut], rec.Events[cut:]

	state := rec.State
	if state == nil {
		state = map[string]any{}
	}
	// Undo the session keys changed after the cut, then give them the value
	// the events up to the cut left them with.
	undone := map[string]bool{}
	for _, e := range later {
		for k := range e.Actions.StateDelta {
			if sessionScoped(k) {
				undone[k] = true
				delete(state, k)
			}
		}
	}
	for _, e := range kept {
		for k, v := range e.Actions.StateDelta {
			if undone[k] {
				ApplyDelta(state, map[string]any{k: v})
			}
		}
	}

	now := s.now()
	if err := s.store.CreateSession(ctx, &Record{Key: dst, State: state, CreateTime: now, UpdateTime: now}, Delta{}); err != nil {
		return nil, fmt.Errorf("session: fork %s: create %s: %w", src.SessionID, dst.SessionID, err)
	}
	for i, e := range kept {
		// An empty delta: the copied state is already in place, and shared
		// scopes must not be changed by replaying old events.
		cp := *e
		if err := s.store.AppendEvent(ctx, dst, now, int64(i), &cp, Delta{}); err != nil {
			_ = s.store.DeleteSession(context.WithoutCancel(ctx), dst)
			return nil, fmt.Errorf("session: fork %s: copy event %s: %w", src.SessionID, e.ID, err)
		}
	}
	return s.Get(ctx, dst, nil)
}

// sessionScoped reports whether a state key lives with the session.
func sessionScoped(key string) bool {
	scope, _ := ScopeOf(key)
	return scope == ScopeSession
}

// RewindDelta returns the state delta that takes a session back to before
// the events since: every session-scoped key they changed gets the value
// the events before left it with, or nil (removed) if they never set it.
// Shared (app:, user:) and temp: keys are left alone. Rewind commits it.
func RewindDelta(before, since []*event.Event) map[string]any {
	var delta map[string]any
	for _, e := range since {
		for k := range e.Actions.StateDelta {
			if !sessionScoped(k) {
				continue
			}
			if delta == nil {
				delta = map[string]any{}
			}
			delta[k] = nil
		}
	}
	for _, e := range before {
		for k, v := range e.Actions.StateDelta {
			if _, ok := delta[k]; ok {
				delta[k] = event.CloneValue(v)
			}
		}
	}
	return delta
}
