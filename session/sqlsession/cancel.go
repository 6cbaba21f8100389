package sqlsession

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/loomkit/loom/session"
)

// Cancels across processes (session.Canceller).
//
// A request to cancel a session is a row of session_cancels. A process
// with invocations watching for cancels polls the table, every
// CancelPollInterval, for rows with an id above the highest it has seen:
// one query per process and interval, whatever the number of invocations
// it runs, and none while it runs none. A watch starts from the highest id
// at the time it begins, so a request reaches the invocations running when
// it is made, not those started after. Rows older than cancelKeep are
// deleted when a new request is recorded.

// CancelPollInterval is how often a process running invocations looks for
// cancels requested by other processes: the delay within which a cancel
// sent to one replica reaches an invocation running on another.
const CancelPollInterval = 100 * time.Millisecond

// cancelKeep is how long a cancel request is kept.
const cancelKeep = time.Minute

// cancels holds a store's cancel watches.
type cancels struct {
	mu      sync.Mutex
	watches map[session.Key]map[*cancelWatch]struct{}
	n       int           // watches in all
	last    int64         // highest id the poller has seen
	polling bool          // the poller runs
	wake    chan struct{} // closed when the poller should stop (no watches)
}

type cancelWatch struct {
	since int64
	ch    chan struct{}
	fired bool
}

// RequestCancel implements session.Canceller.
func (s *Store) RequestCancel(ctx context.Context, key session.Key) error {
	now := time.Now()
	if _, err := s.db.W.ExecContext(ctx, s.db.Rebind(`INSERT INTO session_cancels (app_name, user_id, session_id, requested) VALUES (?, ?, ?, ?)`),
		key.AppName, key.UserID, key.SessionID, nanos(now)); err != nil {
		return fmt.Errorf("sqlsession: request cancel: %w", err)
	}
	// Best effort: an old row left behind is only a row.
	s.db.W.ExecContext(ctx, s.db.Rebind(`DELETE FROM session_cancels WHERE requested < ?`), nanos(now.Add(-cancelKeep))) //nolint:errcheck // see above
	return nil
}

// WatchCancel implements session.Canceller: the channel is closed within
// about CancelPollInterval of a request.
func (s *Store) WatchCancel(ctx context.Context, key session.Key) (<-chan struct{}, func(), error) {
	var since int64
	if err := s.db.R.QueryRowContext(ctx, `SELECT COALESCE(MAX(id), 0) FROM session_cancels`).Scan(&since); err != nil {
		return nil, nil, fmt.Errorf("sqlsession: watch cancels: %w", err)
	}
	c := &s.cancels
	w := &cancelWatch{since: since, ch: make(chan struct{})}
	c.mu.Lock()
	if c.watches == nil {
		c.watches = map[session.Key]map[*cancelWatch]struct{}{}
	}
	set := c.watches[key]
	if set == nil {
		set = map[*cancelWatch]struct{}{}
		c.watches[key] = set
	}
	set[w] = struct{}{}
	c.n++
	if !c.polling {
		c.polling, c.last = true, since
		c.wake = make(chan struct{})
		s.leases.mu.Lock()
		closed := s.leases.closed
		if !closed {
			s.leases.renewals.Add(1)
		}
		s.leases.mu.Unlock()
		if closed {
			c.polling = false
		} else {
			go s.pollCancels(c.wake)
		}
	}
	c.mu.Unlock()
	var once sync.Once
	return w.ch, func() {
		once.Do(func() {
			c.mu.Lock()
			defer c.mu.Unlock()
			delete(set, w)
			if len(set) == 0 && c.watches[key] != nil && len(c.watches[key]) == 0 {
				delete(c.watches, key)
			}
			c.n--
			if c.n == 0 && c.polling {
				c.polling = false
				close(c.wake)
			}
		})
	}, nil
}

// pollCancels looks for new cancel requests until stop is closed or the
// store closes, and fires the watches they concern.
func (s *Store) pollCancels(stop chan struct{}) {
	defer s.leases.renewals.Done()
	c := &s.cancels
	t := time.NewTicker(CancelPollInterval)
	defer t.Stop()
	for {
		select {
		case <-stop:
			return
		case <-s.leases.done:
			return
		case <-t.C:
		}
		c.mu.Lock()
		last := c.last
		c.mu.Unlock()
		ctx, cancel := context.WithTimeout(context.Background(), CancelPollInterval*10)
		rows, err := s.db.R.QueryContext(ctx, s.db.Rebind(`SELECT id, app_name, user_id, session_id FROM session_cancels WHERE id > ? ORDER BY id`), last)
		if err != nil {
			cancel()
			continue // tried again at the next tick
		}
		type req struct {
			id  int64
			key session.Key
		}
		var reqs []req
		for rows.Next() {
			var r req
			if rows.Scan(&r.id, &r.key.AppName, &r.key.UserID, &r.key.SessionID) == nil {
				reqs = append(reqs, r)
			}
		}
		rows.Close()
		cancel()
		c.mu.Lock()
		for _, r := range reqs {
			c.last = max(c.last, r.id)
			for w := range c.watches[r.key] {
				if r.id > w.since && !w.fired {
					w.fired = true
					close(w.ch)
				}
			}
		}
		c.mu.Unlock()
	}
}
