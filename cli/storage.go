package cli

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/loomkit/loom/artifact"
	"github.com/loomkit/loom/artifact/memartifact"
	"github.com/loomkit/loom/memory"
	"github.com/loomkit/loom/memory/memmemory"
	"github.com/loomkit/loom/session"
	"github.com/loomkit/loom/session/memsession"
	"github.com/loomkit/loom/session/sqlsession"
)

// services are the storage services shared by the applications of a run.
type services struct {
	sessions  *session.Service
	artifacts *artifact.Service
	memory    *memory.Service
}

// openServices opens the storage the options name. Local directories that
// file and SQLite URLs point into are created first.
func openServices(ctx context.Context, o *options) (_ *services, err error) {
	s := &services{}
	defer func() {
		if err != nil {
			s.close()
		}
	}()
	if err := makeParentDir(o.sessions); err != nil {
		return nil, err
	}
	if s.sessions, err = openSessions(ctx, o.sessions); err != nil {
		return nil, fmt.Errorf("sessions %s: %w", redact(o.sessions), err)
	}
	if s.artifacts, err = openArtifacts(ctx, o.artifacts); err != nil {
		return nil, fmt.Errorf("artifacts %s: %w", redact(o.artifacts), err)
	}
	if s.memory, err = openMemory(ctx, o.memory); err != nil {
		return nil, fmt.Errorf("memory %s: %w", redact(o.memory), err)
	}
	return s, nil
}

func (s *services) close() error {
	var errs []error
	if s.sessions != nil {
		errs = append(errs, s.sessions.Close())
	}
	if s.artifacts != nil {
		errs = append(errs, s.artifacts.Close())
	}
	if s.memory != nil {
		errs = append(errs, s.memory.Close())
	}
	return errors.Join(errs...)
}

// errScheme reports a storage URL of an unsupported scheme.
var errScheme = errors.New("unsupported storage url")

func isMemoryURL(u string) bool { return u == "" || u == "memory://" || u == "mem://" || u == "memory" }

func openSessions(ctx context.Context, u string) (*session.Service, error) {
	switch {
	case isMemoryURL(u):
		return memsession.NewService(), nil
	case strings.HasPrefix(u, "sqlite:"), strings.HasPrefix(u, "postgres://"), strings.HasPrefix(u, "postgresql://"):
		return sqlsession.NewService(ctx, u, nil)
	}
	return nil, errScheme
}

func openArtifacts(_ context.Context, u string) (*artifact.Service, error) {
	switch {
	case isMemoryURL(u):
		return memartifact.NewService(), nil
	case strings.HasPrefix(u, "file://"):
		// TODO: file-backed artifacts once artifact/fileartifact exists.
		return memartifact.NewService(), nil
	}
	return nil, errScheme
}

func openMemory(_ context.Context, u string) (*memory.Service, error) {
	if isMemoryURL(u) {
		return memmemory.NewService(), nil
	}
	return nil, errScheme
}

// makeParentDir creates the directory holding a local SQLite file.
func makeParentDir(u string) error {
	rest, ok := strings.CutPrefix(u, "sqlite:")
	if !ok {
		return nil
	}
	rest = strings.TrimPrefix(rest, "//")
	file, _, _ := strings.Cut(rest, "?")
	if file == "" || file == ":memory:" {
		return nil
	}
	if err := os.MkdirAll(filepath.Dir(file), 0o755); err != nil {
		return fmt.Errorf("create the directory of %s: %w", file, err)
	}
	return nil
}
