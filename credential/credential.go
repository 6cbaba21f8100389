// Package credential keeps the secrets users grant to an application's
// tools, such as OAuth2 tokens, per user and encrypted at rest.
//
// [Service] is the portable type: it seals every value with AES-256-GCM
// under the application's key before a [Store] sees it, and opens it when
// it is read back. The store only keeps opaque records, keyed by app, user
// and name ([Key]); credential/memcredential keeps them in memory and
// credential/sqlcredential in SQLite or PostgreSQL (the session database
// may hold them too). A record is bound to its key: the key's app, user
// and name are the additional data of its encryption, so a record copied
// to another user's row, or read under another key, does not open.
//
// Package credential/oauth runs the OAuth2 authorization-code flow of a
// tool over a Service: it asks the client, exchanges the authorization
// response for tokens, keeps them per user and refreshes them.
package credential

import (
	"context"
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"encoding/base64"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
)

// KeySize is the size in bytes of the key a Service encrypts with
// (AES-256).
const KeySize = 32

// ErrNotFound is returned (wrapped) when no credential is stored under a
// key.
var ErrNotFound = errors.New("credential: not found")

// ErrInvalidKey reports an encryption key that is not KeySize bytes.
var ErrInvalidKey = errors.New("credential: invalid encryption key")

// ErrUnreadable is returned (wrapped) for a stored record that does not
// open under the service's key and the record's own key: it was written
// under another encryption key, for another user or name, or altered.
var ErrUnreadable = errors.New("credential: stored record does not open")

// Key names one credential of one user of one app.
type Key struct {
	AppName, UserID, Name string
}

// Store is the driver a Service keeps its sealed records in. It stores
// bytes as given and applies no rule of its own. Implementations are safe
// for concurrent use.
type Store interface {
	// Get returns the record stored under k, or an error wrapping
	// ErrNotFound.
	Get(ctx context.Context, k Key) ([]byte, error)
	// Put stores rec under k, replacing any record there.
	Put(ctx context.Context, k Key, rec []byte) error
	// Delete removes the record under k; a missing record is no error.
	Delete(ctx context.Context, k Key) error
}

// Service keeps credentials in a Store, sealed with AES-256-GCM. It is
// safe for concurrent use.
type Service struct {
	store Store
	aead  cipher.AEAD
}

// NewService returns a service over store that encrypts with key, which
// must be KeySize bytes (see ParseKey and GenerateKey).
func NewService(store Store, key []byte) (*Service, error) {
	if store == nil {
		return nil, errors.New("credential: store is required")
	}
	if len(key) != KeySize {
		return nil, fmt.Errorf("%w: it has %d bytes, not %d", ErrInvalidKey, len(key), KeySize)
	}
	block, err := aes.NewCipher(key)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrInvalidKey, err)
	}
	aead, err := cipher.NewGCM(block)
	if err != nil {
		return nil, err
	}
	return &Service{store: store, aead: aead}, nil
}

// GenerateKey returns a new random key of KeySize bytes.
func GenerateKey() []byte {
	k := make([]byte, KeySize)
	rand.Read(k)
	return k
}

// ParseKey reads a key written as text: KeySize bytes in base64 (standard
// or URL-safe, padded or not) or in hex, surrounding spaces ignored, as a
// flag or an environment variable holds it.
func ParseKey(s string) ([]byte, error) {
	s = strings.TrimSpace(s)
	if b, err := hex.DecodeString(s); err == nil && len(b) == KeySize {
		return b, nil
	}
	for _, enc := range []*base64.Encoding{base64.StdEncoding, base64.RawStdEncoding, base64.URLEncoding, base64.RawURLEncoding} {
		if b, err := enc.DecodeString(s); err == nil && len(b) == KeySize {
			return b, nil
		}
	}
	return nil, fmt.Errorf("%w: want %d bytes in base64 or hex (openssl rand -base64 %d)", ErrInvalidKey, KeySize, KeySize)
}

// recordVersion is the first byte of every sealed record: the format, so
// that a later one can be told apart.
const recordVersion = 1

// additionalData binds a record to its key: each field length-prefixed,
// so that no two keys give the same bytes.
func additionalData(k Key) []byte {
	b := []byte("loom credential")
	for _, f := range []string{k.AppName, k.UserID, k.Name} {
		b = binary.AppendUvarint(b, uint64(len(f)))
		b = append(b, f...)
	}
	return b
}

// Put stores value under k, encrypted.
func (s *Service) Put(ctx context.Context, k Key, value []byte) error {
	if err := checkKey(k); err != nil {
		return err
	}
	nonce := make([]byte, s.aead.NonceSize(), 1+s.aead.NonceSize()+len(value)+s.aead.Overhead())
	rand.Read(nonce)
	rec := append([]byte{recordVersion}, nonce...)
	rec = s.aead.Seal(rec, nonce, value, additionalData(k))
	if err := s.store.Put(ctx, k, rec); err != nil {
		return fmt.Errorf("credential: put %q: %w", k.Name, err)
	}
	return nil
}

// Get returns the value stored under k, decrypted: an error wrapping
// ErrNotFound when there is none, ErrUnreadable when the record does not
// open.
func (s *Service) Get(ctx context.Context, k Key) ([]byte, error) {
	if err := checkKey(k); err != nil {
		return nil, err
	}
	rec, err := s.store.Get(ctx, k)
	if err != nil {
		return nil, fmt.Errorf("credential: get %q: %w", k.Name, err)
	}
	n := s.aead.NonceSize()
	if len(rec) < 1+n || rec[0] != recordVersion {
		return nil, fmt.Errorf("credential: get %q: %w", k.Name, ErrUnreadable)
	}
	value, err := s.aead.Open(nil, rec[1:1+n], rec[1+n:], additionalData(k))
	if err != nil {
		return nil, fmt.Errorf("credential: get %q: %w", k.Name, ErrUnreadable)
	}
	return value, nil
}

// Delete removes the credential under k.
func (s *Service) Delete(ctx context.Context, k Key) error {
	if err := checkKey(k); err != nil {
		return err
	}
	if err := s.store.Delete(ctx, k); err != nil {
		return fmt.Errorf("credential: delete %q: %w", k.Name, err)
	}
	return nil
}

func checkKey(k Key) error {
	if k.AppName == "" || k.UserID == "" || k.Name == "" {
		return fmt.Errorf("credential: key needs an app, a user and a name, got %+v", k)
	}
	return nil
}
