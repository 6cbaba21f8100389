package server

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net/http"
	"slices"
	"strings"

	"github.com/loomkit/loom/eval"
)

// maxSetIDBytes is the longest set id eval.CheckSetID accepts.
const maxSetIDBytes = 200

// evals returns the eval store the request sees: Config.Evals itself, or,
// for a request Config.Authenticate bound to a user, that user's part of
// it (see userEvals).
func (s *Server) evals(r *http.Request) eval.Store {
	user, ok := AuthenticatedUser(r.Context())
	if !ok {
		return s.cfg.Evals
	}
	return newUserEvals(s.cfg.Evals, user)
}

// userEvals is one user's view of an eval store. The user's sets and
// results are kept in the underlying store under their ids with a prefix
// of the user's own: "u", 24 hex digits of a SHA-256 of the user id, and
// "_". The prefix is made of the characters eval.CheckSetID allows, so it
// suits any store that takes ADK's ids, and as every user's prefix has
// the same length, a prefixed id of one user is never that of another:
// an id a client sends, whatever it looks like, is prefixed again and
// stays within the caller's part. Ids without the caller's prefix (other
// users', and those stored without Config.Authenticate) are not listed
// and cannot be reached.
//
// The view hands out and takes unprefixed ids, and rewrites the id fields
// of the sets and results it passes through (a set's EvalSetID; a
// result's EvalSetResultID, EvalSetResultName and EvalSetID and those of
// its case results), so the documents in the underlying store name the
// prefixed ids and those a client sees name its own. The prefix is also
// taken out of the messages of the store's errors.
type userEvals struct {
	st     eval.Store
	prefix string
}

func newUserEvals(st eval.Store, user string) *userEvals {
	sum := sha256.Sum256([]byte("loom eval user\x00" + user))
	return &userEvals{st: st, prefix: "u" + hex.EncodeToString(sum[:12]) + "_"}
}

// viewError is an error of the underlying store with the prefix taken out
// of its message; errors.Is and errors.As see the store's error.
type viewError struct {
	msg string
	err error
}

func (e *viewError) Error() string { return e.msg }
func (e *viewError) Unwrap() error { return e.err }

func (u *userEvals) err(err error) error {
	if err == nil {
		return nil
	}
	msg := err.Error()
	if !strings.Contains(msg, u.prefix) {
		return err
	}
	return &viewError{msg: strings.ReplaceAll(msg, u.prefix, ""), err: err}
}

// setID returns the stored id of the caller's set id, checking it as
// eval.CheckSetID does within the room the prefix leaves.
func (u *userEvals) setID(id string) (string, error) {
	if err := eval.CheckSetID(id); err != nil {
		return "", err
	}
	if n := maxSetIDBytes - len(u.prefix); len(id) > n {
		return "", fmt.Errorf("eval set id %q is longer than %d bytes: %w", id, n, eval.ErrInvalidID)
	}
	return u.prefix + id, nil
}

// own returns, sorted, the ids among ids with the caller's prefix, without
// it.
func (u *userEvals) own(ids []string) []string {
	out := []string{}
	for _, id := range ids {
		if rest, ok := strings.CutPrefix(id, u.prefix); ok && rest != "" {
			out = append(out, rest)
		}
	}
	slices.Sort(out)
	return out
}

// ListSets implements eval.Store.
func (u *userEvals) ListSets(ctx context.Context, app string) ([]string, error) {
	ids, err := u.st.ListSets(ctx, app)
	if err != nil {
		return nil, u.err(err)
	}
	return u.own(ids), nil
}

// GetSet implements eval.Store.
func (u *userEvals) GetSet(ctx context.Context, app, id string) (*eval.Set, error) {
	sid, err := u.setID(id)
	if err != nil {
		return nil, err
	}
	set, err := u.st.GetSet(ctx, app, sid)
	if err != nil {
		return nil, u.err(err)
	}
	out := *set // the store's own copy stays as it is
	out.EvalSetID = strings.TrimPrefix(out.EvalSetID, u.prefix)
	return &out, nil
}

// CreateSet implements eval.Store.
func (u *userEvals) CreateSet(ctx context.Context, app string, s *eval.Set) error {
	sid, err := u.setID(s.EvalSetID)
	if err != nil {
		return err
	}
	stored := *s
	stored.EvalSetID = sid
	if err := u.st.CreateSet(ctx, app, &stored); err != nil {
		return u.err(err)
	}
	// What the store filled in (a creation time, an empty case list) shows
	// in s, under the caller's id.
	id := s.EvalSetID
	*s = stored
	s.EvalSetID = id
	return nil
}

// UpdateSet implements eval.Store. fn sees the set under the caller's id;
// the store gets it back under the stored one.
func (u *userEvals) UpdateSet(ctx context.Context, app, id string, fn func(*eval.Set) error) error {
	sid, err := u.setID(id)
	if err != nil {
		return err
	}
	return u.err(u.st.UpdateSet(ctx, app, sid, func(s *eval.Set) error {
		s.EvalSetID = strings.TrimPrefix(s.EvalSetID, u.prefix)
		defer func() { s.EvalSetID = u.prefix + s.EvalSetID }()
		return fn(s)
	}))
}

// ListResults implements eval.Store.
func (u *userEvals) ListResults(ctx context.Context, app string) ([]string, error) {
	ids, err := u.st.ListResults(ctx, app)
	if err != nil {
		return nil, u.err(err)
	}
	return u.own(ids), nil
}

// GetResult implements eval.Store.
func (u *userEvals) GetResult(ctx context.Context, app, id string) (*eval.SetResult, error) {
	r, err := u.st.GetResult(ctx, app, u.prefix+id)
	if err != nil {
		return nil, u.err(err)
	}
	return u.mapResult(r, func(s string) string { return strings.TrimPrefix(s, u.prefix) }), nil
}

// SaveResult implements eval.Store.
func (u *userEvals) SaveResult(ctx context.Context, app string, r *eval.SetResult) error {
	return u.err(u.st.SaveResult(ctx, app, u.mapResult(r, func(s string) string {
		if s == "" {
			return s
		}
		return u.prefix + s
	})))
}

// mapResult returns a copy of r with f applied to its ids and those of its
// case results; r and its case results are left as they are.
func (u *userEvals) mapResult(r *eval.SetResult, f func(string) string) *eval.SetResult {
	out := *r
	out.EvalSetResultID = f(r.EvalSetResultID)
	out.EvalSetResultName = f(r.EvalSetResultName)
	out.EvalSetID = f(r.EvalSetID)
	out.EvalCaseResults = make([]*eval.CaseResult, len(r.EvalCaseResults))
	for i, cr := range r.EvalCaseResults {
		if cr == nil {
			continue
		}
		c := *cr
		c.EvalSetID = f(cr.EvalSetID)
		c.EvalSetFile = f(cr.EvalSetFile)
		out.EvalCaseResults[i] = &c
	}
	if r.EvalCaseResults == nil {
		out.EvalCaseResults = nil
	}
	return &out
}
