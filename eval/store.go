package eval

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/loomkit/loom/event"
)

// Errors of a [Store]. ErrInvalidID is wrapped by the errors of ids a
// store cannot use: a set id [CheckSetID] refuses, an app name or result id
// that is no file name.
var (
	ErrNotFound  = errors.New("not found")
	ErrExists    = errors.New("already exists")
	ErrInvalidID = errors.New("invalid id")
)

// idError is an error wrapping ErrInvalidID with a message of its own.
type idError struct{ msg string }

func (e *idError) Error() string { return e.msg }
func (e *idError) Unwrap() error { return ErrInvalidID }

func invalidID(format string, args ...any) error {
	return &idError{fmt.Sprintf(format, args...)}
}

// ResultStore keeps the results of apps' eval runs, each under its id
// ([SetResult.EvalSetResultID]). An app name or result id the store cannot
// use fails with an error wrapping ErrInvalidID ([CheckResultKey]).
// [DirStore] keeps results as files, as ADK does; package eval/sqleval
// keeps them in tables of a SQL database. The suite of package
// eval/evaltest (evaltest.TestResultStore) checks an implementation.
type ResultStore interface {
	// ListResults returns the ids of an app's results, sorted; an app
	// without results has none (an empty list, not an error).
	ListResults(ctx context.Context, app string) ([]string, error)
	// GetResult returns a result, or an error wrapping ErrNotFound.
	GetResult(ctx context.Context, app, id string) (*SetResult, error)
	// SaveResult stores a result under its id, replacing one stored
	// under the same id.
	SaveResult(ctx context.Context, app string, r *SetResult) error
}

// Store keeps the eval sets and results of apps. An app name, set id or
// result id the store cannot use fails with an error wrapping ErrInvalidID.
// The suite of package eval/evaltest (evaltest.TestStore) checks an
// implementation.
type Store interface {
	// ListSets returns the ids of an app's eval sets, sorted.
	ListSets(ctx context.Context, app string) ([]string, error)
	// GetSet returns an eval set, or an error wrapping ErrNotFound.
	GetSet(ctx context.Context, app, id string) (*Set, error)
	// CreateSet stores a new eval set, or fails with an error wrapping
	// ErrExists. It fills in a creation time and an empty case list
	// where s has none.
	CreateSet(ctx context.Context, app string, s *Set) error
	// UpdateSet applies fn to a stored set and stores the result, as one
	// step with respect to other updates. An error of fn leaves the set
	// as it was.
	UpdateSet(ctx context.Context, app, id string, fn func(*Set) error) error
	ResultStore
}

// WithResults returns a store that keeps sets in sets and results in
// results, such as the files of a directory for sets and a database,
// beside the sessions, for results.
func WithResults(sets Store, results ResultStore) Store {
	return &splitStore{Store: sets, results: results}
}

type splitStore struct {
	Store
	results ResultStore
}

func (s *splitStore) ListResults(ctx context.Context, app string) ([]string, error) {
	return s.results.ListResults(ctx, app)
}

func (s *splitStore) GetResult(ctx context.Context, app, id string) (*SetResult, error) {
	return s.results.GetResult(ctx, app, id)
}

func (s *splitStore) SaveResult(ctx context.Context, app string, r *SetResult) error {
	return s.results.SaveResult(ctx, app, r)
}

var idPattern = regexp.MustCompile(`^[A-Za-z0-9_]+$`)

// CheckSetID checks an eval set id: letters, digits and underscores, as
// ADK requires, at most 200 bytes. Its error wraps [ErrInvalidID].
func CheckSetID(id string) error {
	if !idPattern.MatchString(id) || len(id) > 200 {
		return invalidID("invalid eval set id %q: use letters, digits and underscores", id)
	}
	return nil
}

// DirStore is a [Store] in a directory, laid out as ADK lays out an app's
// evals: DIR/APP/ID.evalset.json and
// DIR/APP/eval_history/ID.evalset_result.json.
type DirStore struct {
	// Dir is the root directory.
	Dir string

	mu sync.Mutex // serializes updates of sets
}

// NewDirStore returns a store rooted at dir.
func NewDirStore(dir string) *DirStore { return &DirStore{Dir: dir} }

// CheckResultKey checks the app name and result id a [ResultStore] keeps
// a result under: each non-empty, neither "." nor "..", without a slash or
// a backslash, so that either can name a file. Its error wraps
// [ErrInvalidID].
func CheckResultKey(app, id string) error {
	if err := checkAppName(app); err != nil {
		return err
	}
	if !isFileName(id) {
		return invalidID("invalid eval result id %q", id)
	}
	return nil
}

func checkAppName(app string) error {
	if !isFileName(app) {
		return invalidID("invalid app name %q", app)
	}
	return nil
}

func isFileName(s string) bool {
	return s != "" && s != "." && s != ".." && !strings.ContainsAny(s, `/\`)
}

func (d *DirStore) appDir(app string) (string, error) {
	if err := checkAppName(app); err != nil {
		return "", err
	}
	return filepath.Join(d.Dir, app), nil
}

func (d *DirStore) setPath(app, id string) (string, error) {
	if err := CheckSetID(id); err != nil {
		return "", err
	}
	dir, err := d.appDir(app)
	return filepath.Join(dir, id+SetFileSuffix), err
}

func (d *DirStore) resultPath(app, id string) (string, error) {
	if err := CheckResultKey(app, id); err != nil {
		return "", err
	}
	return filepath.Join(d.Dir, app, "eval_history", id+ResultFileSuffix), nil
}

func list(dir, suffix string) ([]string, error) {
	entries, err := os.ReadDir(dir)
	if errors.Is(err, os.ErrNotExist) {
		return []string{}, nil
	}
	if err != nil {
		return nil, err
	}
	ids := []string{}
	for _, e := range entries {
		if name, ok := strings.CutSuffix(e.Name(), suffix); ok && !e.IsDir() {
			ids = append(ids, name)
		}
	}
	slices.Sort(ids)
	return ids, nil
}

// ListSets implements Store.
func (d *DirStore) ListSets(_ context.Context, app string) ([]string, error) {
	dir, err := d.appDir(app)
	if err != nil {
		return nil, err
	}
	return list(dir, SetFileSuffix)
}

// GetSet implements Store.
func (d *DirStore) GetSet(_ context.Context, app, id string) (*Set, error) {
	p, err := d.setPath(app, id)
	if err != nil {
		return nil, err
	}
	s, err := ReadSetFile(p)
	if errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("eval set %q: %w", id, ErrNotFound)
	}
	return s, err
}

// CreateSet implements Store.
func (d *DirStore) CreateSet(_ context.Context, app string, s *Set) error {
	p, err := d.setPath(app, s.EvalSetID)
	if err != nil {
		return err
	}
	if err := s.Validate(); err != nil {
		return err
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if _, err := os.Stat(p); err == nil {
		return fmt.Errorf("eval set %q: %w", s.EvalSetID, ErrExists)
	}
	if s.CreationTimestamp == 0 {
		s.CreationTimestamp = event.ToSeconds(time.Now())
	}
	if s.EvalCases == nil {
		s.EvalCases = []*Case{}
	}
	return WriteSetFile(p, s)
}

// UpdateSet implements Store.
func (d *DirStore) UpdateSet(ctx context.Context, app, id string, fn func(*Set) error) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	s, err := d.GetSet(ctx, app, id)
	if err != nil {
		return err
	}
	if err := fn(s); err != nil {
		return err
	}
	if err := s.Validate(); err != nil {
		return err
	}
	p, _ := d.setPath(app, id)
	return WriteSetFile(p, s)
}

// ListResults implements Store.
func (d *DirStore) ListResults(_ context.Context, app string) ([]string, error) {
	dir, err := d.appDir(app)
	if err != nil {
		return nil, err
	}
	return list(filepath.Join(dir, "eval_history"), ResultFileSuffix)
}

// GetResult implements Store.
func (d *DirStore) GetResult(_ context.Context, app, id string) (*SetResult, error) {
	p, err := d.resultPath(app, id)
	if err != nil {
		return nil, err
	}
	r, err := ReadResultFile(p)
	if errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("eval result %q: %w", id, ErrNotFound)
	}
	return r, err
}

// SaveResult implements Store.
func (d *DirStore) SaveResult(_ context.Context, app string, r *SetResult) error {
	p, err := d.resultPath(app, r.EvalSetResultID)
	if err != nil {
		return err
	}
	return WriteResultFile(p, r)
}

// AddCase adds a case to a stored set; a case with the same id is an
// error wrapping ErrExists.
func AddCase(ctx context.Context, st Store, app, setID string, c *Case) error {
	return st.UpdateSet(ctx, app, setID, func(s *Set) error {
		if s.Case(c.EvalID) != nil {
			return fmt.Errorf("eval case %q: %w", c.EvalID, ErrExists)
		}
		s.EvalCases = append(s.EvalCases, c)
		return nil
	})
}
