package session

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"time"
)

// expirePage is how many sessions Expired reads from the store at a time.
const expirePage = 500

// Expired yields the keys of the app's sessions, of every user, last updated
// (created or appended to) before cutoff, in (user, session) order. It reads
// the store a page at a time, so deleting the yielded sessions while
// iterating is safe and memory stays bounded whatever the number of
// sessions. A store error is yielded once, and ends the iteration.
//
// Expired only reports; [Service.DeleteIfIdle] deletes a session under its
// lease after checking its time again, and the runner's ExpireSessions
// deletes its artifacts with it.
func (s *Service) Expired(ctx context.Context, app string, cutoff time.Time) iter.Seq2[Key, error] {
	return func(yield func(Key, error) bool) {
		if err := CheckID("app name", app); err != nil {
			yield(Key{}, err)
			return
		}
		var after Key
		for {
			recs, err := s.store.ListSessions(ctx, app, "", after, expirePage)
			if err != nil {
				yield(Key{}, fmt.Errorf("session: expired: %w", err))
				return
			}
			for _, r := range recs {
				if r.UpdateTime.Before(cutoff) && !yield(r.Key, nil) {
					return
				}
			}
			if len(recs) < expirePage {
				return
			}
			after = recs[len(recs)-1].Key
		}
	}
}

// DeleteIfIdle deletes a session if it was last updated before cutoff. It
// holds the session's lease (see [Service.Lease]) from the check to the
// deletion, so that an invocation that has the session in hand keeps it,
// and runs also, when not nil, just before the deletion, under the same
// lease: the place to delete what belongs to the session elsewhere (its
// artifacts). If also fails, the session is kept, for a later attempt. It
// reports whether it deleted the session; a missing session is not an
// error.
func (s *Service) DeleteIfIdle(ctx context.Context, key Key, cutoff time.Time, also func(context.Context) error) (bool, error) {
	release, err := s.Lease(ctx, key)
	if err != nil {
		return false, err
	}
	defer release()
	rec, err := s.store.GetSession(ctx, key, Window{None: true})
	if errors.Is(err, ErrNotFound) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("session: delete idle %s: %w", key.SessionID, err)
	}
	if !rec.UpdateTime.Before(cutoff) {
		return false, nil
	}
	if also != nil {
		if err := also(ctx); err != nil {
			return false, fmt.Errorf("session: delete idle %s: %w", key.SessionID, err)
		}
	}
	if err := s.Delete(ctx, key); err != nil {
		return false, err
	}
	return true, nil
}
