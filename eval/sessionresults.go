package eval

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"

	"github.com/loomkit/loom/session"
)

// ResultsUser is the reserved user under whose sessions [SessionResults]
// keeps results.
const ResultsUser = "___eval___results___"

// resultKey is the state key holding a stored result.
const resultKey = "eval_set_result"

// SessionResults is a [Store] that keeps eval sets in Sets and results in
// a session service: each result is a session of the app's [ResultsUser]
// whose id is the result's id and whose state holds the result. A
// deployment whose sessions live in a database (SQLite, PostgreSQL) keeps
// its eval history there.
type SessionResults struct {
	Store
	Sessions *session.Service
}

// SaveResult implements Store.
func (s *SessionResults) SaveResult(ctx context.Context, app string, r *SetResult) error {
	data, err := r.MarshalJSON()
	if err != nil {
		return err
	}
	var v map[string]any
	if err := json.Unmarshal(data, &v); err != nil {
		return err
	}
	_, err = s.Sessions.Create(ctx, session.Key{AppName: app, UserID: ResultsUser, SessionID: r.EvalSetResultID}, map[string]any{resultKey: v})
	return err
}

// ListResults implements Store.
func (s *SessionResults) ListResults(ctx context.Context, app string) ([]string, error) {
	ids := []string{}
	opts := &session.ListOptions{PageSize: 1000}
	for {
		res, err := s.Sessions.List(ctx, app, ResultsUser, opts)
		if err != nil {
			return nil, err
		}
		for _, sess := range res.Sessions {
			ids = append(ids, sess.ID())
		}
		if res.NextPageToken == "" {
			break
		}
		opts.PageToken = res.NextPageToken
	}
	slices.Sort(ids)
	return ids, nil
}

// GetResult implements Store.
func (s *SessionResults) GetResult(ctx context.Context, app, id string) (*SetResult, error) {
	sess, err := s.Sessions.Get(ctx, session.Key{AppName: app, UserID: ResultsUser, SessionID: id}, &session.GetOptions{NoEvents: true})
	if errors.Is(err, session.ErrNotFound) {
		return nil, fmt.Errorf("eval result %q: %w", id, ErrNotFound)
	}
	if err != nil {
		return nil, err
	}
	v, ok := sess.Get(resultKey)
	if !ok {
		return nil, fmt.Errorf("eval result %q: %w", id, ErrNotFound)
	}
	data, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	r, err := ParseResult(data)
	if err != nil {
		return nil, fmt.Errorf("eval result %q: %w", id, err)
	}
	return r, nil
}
