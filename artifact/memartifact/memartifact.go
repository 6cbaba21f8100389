// Package memartifact is an in-memory artifact store. It keeps everything in
// process memory and loses it on exit; use it for tests, examples and
// short-lived programs.
package memartifact

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"

	"google.golang.org/genai"

	"github.com/loomkit/loom/artifact"
	"github.com/loomkit/loom/event"
)

// Store is an in-memory artifact.Store. It is safe for concurrent use.
type Store struct {
	mu     sync.RWMutex
	closed bool
	// artifacts holds version i at index i, nil where a version was
	// deleted; the last element is never nil and no slice is empty. The
	// parts are stored copies, never handed out.
	artifacts map[artifact.Key][]*genai.Part
}

// New returns an empty store.
func New() *Store { return &Store{artifacts: map[artifact.Key][]*genai.Part{}} }

// NewService returns an artifact service over a new in-memory store.
func NewService() *artifact.Service { return artifact.NewService(New()) }

var errClosed = errors.New("memartifact: store is closed")

func (s *Store) check(ctx context.Context) error {
	if s.closed {
		return errClosed
	}
	return ctx.Err()
}

func clonePart(p *genai.Part) *genai.Part {
	return event.CloneContent(&genai.Content{Parts: []*genai.Part{p}}).Parts[0]
}

// Save implements artifact.Store.
func (s *Store) Save(ctx context.Context, key artifact.Key, part *genai.Part) (int64, error) {
	c := clonePart(part) // copy outside the lock
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.check(ctx); err != nil {
		return 0, err
	}
	s.artifacts[key] = append(s.artifacts[key], c)
	return int64(len(s.artifacts[key]) - 1), nil
}

// Load implements artifact.Store.
func (s *Store) Load(ctx context.Context, key artifact.Key, version int64) (*genai.Part, error) {
	s.mu.RLock()
	if err := s.check(ctx); err != nil {
		s.mu.RUnlock()
		return nil, err
	}
	vs := s.artifacts[key]
	if version == artifact.Latest {
		if len(vs) == 0 {
			s.mu.RUnlock()
			return nil, artifact.ErrNotFound
		}
		version = int64(len(vs)) - 1
	}
	var p *genai.Part
	if version >= 0 && version < int64(len(vs)) {
		p = vs[version]
	}
	s.mu.RUnlock()
	if p == nil {
		return nil, fmt.Errorf("version %d: %w", version, artifact.ErrNotFound)
	}
	// Stored parts are never modified, so copying outside the lock is safe.
	return clonePart(p), nil
}

// List implements artifact.Store.
func (s *Store) List(ctx context.Context, app, user, session string) ([]string, error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if err := s.check(ctx); err != nil {
		return nil, err
	}
	var names []string
	for k := range s.artifacts {
		if k.AppName == app && k.UserID == user && k.SessionID == session {
			names = append(names, k.Name)
		}
	}
	slices.Sort(names)
	return names, nil
}

// Versions implements artifact.Store.
func (s *Store) Versions(ctx context.Context, key artifact.Key) ([]int64, error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if err := s.check(ctx); err != nil {
		return nil, err
	}
	vs := []int64{}
	for i, p := range s.artifacts[key] {
		if p != nil {
			vs = append(vs, int64(i))
		}
	}
	return vs, nil
}

// Delete implements artifact.Store.
func (s *Store) Delete(ctx context.Context, key artifact.Key) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.check(ctx); err != nil {
		return err
	}
	delete(s.artifacts, key)
	return nil
}

// DeleteVersion implements artifact.Store.
func (s *Store) DeleteVersion(ctx context.Context, key artifact.Key, version int64) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.check(ctx); err != nil {
		return err
	}
	vs := s.artifacts[key]
	if version < 0 || version >= int64(len(vs)) {
		return nil
	}
	vs[version] = nil
	for len(vs) > 0 && vs[len(vs)-1] == nil {
		vs = vs[:len(vs)-1] // the next save reuses the numbers of deleted latest versions
	}
	if len(vs) == 0 {
		delete(s.artifacts, key)
	} else {
		s.artifacts[key] = vs
	}
	return nil
}

// DeleteSession implements artifact.Store.
func (s *Store) DeleteSession(ctx context.Context, app, user, session string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.check(ctx); err != nil {
		return err
	}
	for k := range s.artifacts {
		if k.AppName == app && k.UserID == user && k.SessionID == session {
			delete(s.artifacts, k)
		}
	}
	return nil
}

// Close implements artifact.Store. Later calls fail.
func (s *Store) Close() error {
	s.mu.Lock()
	s.closed = true
	s.artifacts = map[artifact.Key][]*genai.Part{}
	s.mu.Unlock()
	return nil
}
