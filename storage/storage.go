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
package storage

import (
	"context"
	"errors"
	"fmt"
	"strings"

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

type kind int

const (
	kindUnknown kind = iota
	kindMemory
	kindSQL
)

func classify(url string) kind {
	switch {
	case url == "memory://" || url == "memory:":
		return kindMemory
	case strings.HasPrefix(url, "sqlite:"),
		strings.HasPrefix(url, "postgres://"),
		strings.HasPrefix(url, "postgresql://"):
		return kindSQL
	}
	return kindUnknown
}

func unsupported(what, url string) error {
	scheme, _, _ := strings.Cut(url, ":")
	return fmt.Errorf("storage: %s: %w: scheme %q (want memory://, sqlite:// or postgres://)", what, ErrUnsupported, scheme)
}

// OpenSessions returns a session service on the backend url names.
func OpenSessions(ctx context.Context, url string) (*session.Service, error) {
	switch classify(url) {
	case kindMemory:
		return memsession.NewService(), nil
	case kindSQL:
		svc, err := sqlsession.NewService(ctx, url, nil)
		if err != nil {
			return nil, fmt.Errorf("storage: sessions: %w", err)
		}
		return svc, nil
	}
	return nil, unsupported("sessions", url)
}

// OpenMemory returns a memory service on the backend url names.
func OpenMemory(ctx context.Context, url string) (*memory.Service, error) {
	switch classify(url) {
	case kindMemory:
		return memmemory.NewService(), nil
	case kindSQL:
		svc, err := sqlmemory.NewService(ctx, url, nil)
		if err != nil {
			return nil, fmt.Errorf("storage: memory: %w", err)
		}
		return svc, nil
	}
	return nil, unsupported("memory", url)
}

// OpenArtifacts returns an artifact service on the store url names:
// memory:// (in process), file://DIR (a local directory; a relative DIR is
// relative to the working directory), or a gocloud.dev bucket URL (mem://,
// and s3://, gs://, azblob:// in programs that import those blob drivers).
func OpenArtifacts(ctx context.Context, url string) (*artifact.Service, error) {
	switch {
	case url == "memory://" || url == "memory:":
		return memartifact.NewService(), nil
	case strings.HasPrefix(url, "file://"):
		st, err := fileartifact.Open(strings.TrimPrefix(url, "file://"))
		if err != nil {
			return nil, fmt.Errorf("storage: artifacts: %w", err)
		}
		return artifact.NewService(st), nil
	}
	if scheme, _, ok := strings.Cut(url, "://"); ok && scheme != "" {
		st, err := blobartifact.Open(ctx, url)
		if err != nil {
			return nil, fmt.Errorf("storage: artifacts: %w", err)
		}
		return artifact.NewService(st), nil
	}
	scheme, _, _ := strings.Cut(url, ":")
	return nil, fmt.Errorf("storage: artifacts: %w: scheme %q (want memory://, file://DIR or a bucket URL)", ErrUnsupported, scheme)
}
