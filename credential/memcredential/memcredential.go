// Package memcredential is a credential.Store in memory, for tests and
// single-process servers whose users sign in again after a restart.
package memcredential

import (
	"context"
	"fmt"
	"sync"

	"github.com/loomkit/loom/credential"
)

// Store keeps sealed credential records in a map. It is safe for
// concurrent use.
type Store struct {
	mu sync.Mutex
	m  map[credential.Key][]byte
}

// New returns an empty store.
func New() *Store { return &Store{m: map[credential.Key][]byte{}} }

// NewService returns a credential service over a new store, encrypting
// with key (see credential.NewService).
func NewService(key []byte) (*credential.Service, error) {
	return credential.NewService(New(), key)
}

// Get returns the record under k.
func (s *Store) Get(_ context.Context, k credential.Key) ([]byte, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	rec, ok := s.m[k]
	if !ok {
		return nil, fmt.Errorf("%w: %q of user %q", credential.ErrNotFound, k.Name, k.UserID)
	}
	return append([]byte(nil), rec...), nil
}

// Put stores rec under k.
func (s *Store) Put(_ context.Context, k credential.Key, rec []byte) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.m[k] = append([]byte(nil), rec...)
	return nil
}

// Delete removes the record under k.
func (s *Store) Delete(_ context.Context, k credential.Key) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.m, k)
	return nil
}
