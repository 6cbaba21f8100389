// Package storage opens Loom's services from URLs, for configuration files
// and command-line flags.
//
//	memory://                 in process memory, lost on exit
//	sqlite:///abs/path.db     a SQLite file (WAL), absolute path
//	sqlite://rel/path.db      a SQLite file, relative path
//	sqlite::memory:           a private in-memory SQLite database
//	postgres://... postgresql://...   a PostgreSQL database
//
// Sessions and memories may share one database URL. Artifacts have URLs of
// their own; see OpenArtifacts.
//
// # Other stores
//
// The scheme of a URL (the text before its first ':') picks the opener, as
// gocloud.dev's URL openers do: a package that provides a store registers
// its scheme from an init function ([RegisterSessions], [RegisterMemory],
// [RegisterArtifacts]), and a program that imports it opens the store by URL,
// in configuration files and in the loom command's --sessions, --memory and
// --artifacts flags alike.
package storage

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"

	"github.com/loomkit/loom/artifact"
	"github.com/loomkit/loom/artifact/blobartifact"
	"github.com/loomkit/loom/artifact/fileartifact"
	"github.com/loomkit/loom/artifact/memartifact"
	"github.com/loomkit/loom/memory"
	"github.com/loomkit/loom/memory/memmemory"
	"github.com/loomkit/loom/memory/sqlmemory"
	"github.com/loomkit/loom/session"
	"github.com/loomkit/loom/session/memsession"
	"github.com/loomkit/loom/session/sqlsession"
)

// ErrUnsupported reports a URL whose scheme names no known backend.
var ErrUnsupported = errors.New("unsupported storage url")

// SessionsOpener opens a session service from the whole URL given to
// [OpenSessions].
type SessionsOpener func(ctx context.Context, url string) (*session.Service, error)

// MemoryOpener opens a memory service from the whole URL given to
// [OpenMemory].
type MemoryOpener func(ctx context.Context, url string) (*memory.Service, error)

// ArtifactsOpener opens an artifact service from the whole URL given to
// [OpenArtifacts].
type ArtifactsOpener func(ctx context.Context, url string) (*artifact.Service, error)

// registry maps URL schemes to openers. It is safe for concurrent use.
type registry[F any] struct {
	what    string
	mu      sync.RWMutex
	openers map[string]F
}

func newRegistry[F any](what string) *registry[F] {
	return &registry[F]{what: what, openers: map[string]F{}}
}

func (r *registry[F]) register(scheme string, open F, isNil bool) {
	if !validScheme(scheme) {
		panic(fmt.Sprintf("storage: register %s: bad scheme %q", r.what, scheme))
	}
	if isNil {
		panic(fmt.Sprintf("storage: register %s: nil opener for %q", r.what, scheme))
	}
	scheme = strings.ToLower(scheme)
	r.mu.Lock()
	defer r.mu.Unlock()
	if _, dup := r.openers[scheme]; dup {
		panic(fmt.Sprintf("storage: register %s: scheme %q registered twice", r.what, scheme))
	}
	r.openers[scheme] = open
}

func (r *registry[F]) lookup(url string) (F, string, bool) {
	scheme := strings.ToLower(schemeOf(url))
	r.mu.RLock()
	defer r.mu.RUnlock()
	f, ok := r.openers[scheme]
	return f, scheme, ok
}

func (r *registry[F]) schemes() []string {
	r.mu.RLock()
	defer r.mu.RUnlock()
	out := make([]string, 0, len(r.openers))
	for s := range r.openers {
		out = append(out, s+"://")
	}
	slices.Sort(out)
	return out
}

func (r *registry[F]) unsupported(url string) error {
	return fmt.Errorf("storage: %s: %w: scheme %q (registered: %s)", r.what, ErrUnsupported, schemeOf(url), strings.Join(r.schemes(), ", "))
}

// schemeOf returns the text before the first ':' of a URL.
func schemeOf(url string) string {
	scheme, _, _ := strings.Cut(url, ":")
	return scheme
}

// validScheme reports whether s is a URL scheme (RFC 3986: a letter, then
// letters, digits, '+', '-' or '.').
func validScheme(s string) bool {
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z':
		case i > 0 && ('0' <= c && c <= '9' || c == '+' || c == '-' || c == '.'):
		default:
			return false
		}
	}
	return s != ""
}

var (
	sessionOpeners  = newRegistry[SessionsOpener]("sessions")
	memoryOpeners   = newRegistry[MemoryOpener]("memory")
	artifactOpeners = newRegistry[ArtifactsOpener]("artifacts")
)

// RegisterSessions makes OpenSessions open URLs of scheme (case-insensitive,
// without "://") with open. It is meant for init functions: it panics if
// the scheme is not a valid URL scheme, open is nil, or the scheme is
// already registered (the built-in memory, sqlite, postgres and postgresql
// included).
func RegisterSessions(scheme string, open SessionsOpener) {
	sessionOpeners.register(scheme, open, open == nil)
}

// RegisterMemory is RegisterSessions for OpenMemory.
func RegisterMemory(scheme string, open MemoryOpener) {
	memoryOpeners.register(scheme, open, open == nil)
}

// RegisterArtifacts is RegisterSessions for OpenArtifacts. A registered
// scheme takes precedence over gocloud.dev's bucket URL openers.
func RegisterArtifacts(scheme string, open ArtifactsOpener) {
	artifactOpeners.register(scheme, open, open == nil)
}

// SessionSchemes lists the schemes OpenSessions opens, as "scheme://", sorted.
func SessionSchemes() []string { return sessionOpeners.schemes() }

func init() {
	RegisterSessions("memory", func(context.Context, string) (*session.Service, error) {
		return memsession.NewService(), nil
	})
	RegisterMemory("memory", func(context.Context, string) (*memory.Service, error) {
		return memmemory.NewService(), nil
	})
	RegisterArtifacts("memory", func(context.Context, string) (*artifact.Service, error) {
		return memartifact.NewService(), nil
	})
	for _, scheme := range []string{"sqlite", "postgres", "postgresql"} {
		RegisterSessions(scheme, func(ctx context.Context, url string) (*session.Service, error) {
			return sqlsession.NewService(ctx, url, nil)
		})
		RegisterMemory(scheme, func(ctx context.Context, url string) (*memory.Service, error) {
			return sqlmemory.NewService(ctx, url, nil)
		})
	}
	RegisterArtifacts("file", func(_ context.Context, url string) (*artifact.Service, error) {
		st, err := fileartifact.Open(strings.TrimPrefix(url, "file://"))
		if err != nil {
			return nil, err
		}
		return artifact.NewService(st), nil
	})
}

// OpenSessions returns a session service on the backend url names, through
// the opener registered for its scheme.
func OpenSessions(ctx context.Context, url string) (*session.Service, error) {
	open, _, ok := sessionOpeners.lookup(url)
	if !ok {
		return nil, sessionOpeners.unsupported(url)
	}
	svc, err := open(ctx, url)
	if err != nil {
		return nil, fmt.Errorf("storage: sessions: %w", err)
	}
	return svc, nil
}

// OpenMemory returns a memory service on the backend url names, through
// the opener registered for its scheme.
func OpenMemory(ctx context.Context, url string) (*memory.Service, error) {
	open, _, ok := memoryOpeners.lookup(url)
	if !ok {
		return nil, memoryOpeners.unsupported(url)
	}
	svc, err := open(ctx, url)
	if err != nil {
		return nil, fmt.Errorf("storage: memory: %w", err)
	}
	return svc, nil
}

// OpenArtifacts returns an artifact service on the store url names:
// memory:// (in process), file://DIR (a local directory; a relative DIR is
// relative to the working directory), a registered scheme, or a
// gocloud.dev bucket URL (mem://, and s3://, gs://, azblob:// in programs
// that import those blob drivers).
func OpenArtifacts(ctx context.Context, url string) (*artifact.Service, error) {
	if open, _, ok := artifactOpeners.lookup(url); ok {
		svc, err := open(ctx, url)
		if err != nil {
			return nil, fmt.Errorf("storage: artifacts: %w", err)
		}
		return svc, nil
	}
	if scheme, _, ok := strings.Cut(url, "://"); ok && scheme != "" {
		st, err := blobartifact.Open(ctx, url)
		if err != nil {
			return nil, fmt.Errorf("storage: artifacts: %w", err)
		}
		return artifact.NewService(st), nil
	}
	return nil, fmt.Errorf("storage: artifacts: %w: scheme %q (want %s, or a bucket URL)", ErrUnsupported, schemeOf(url), strings.Join(artifactOpeners.schemes(), ", "))
}
