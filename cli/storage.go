package cli

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"gocloud.dev/blob"

	"github.com/loomkit/loom/artifact"
	"github.com/loomkit/loom/credential"
	"github.com/loomkit/loom/memory"
	"github.com/loomkit/loom/session"
	"github.com/loomkit/loom/storage"
)

// services are the storage services shared by the applications of a run.
type services struct {
	sessions  *session.Service
	artifacts *artifact.Service
	memory    *memory.Service
	// credentials keeps users' credentials (see openCredentials);
	// closeCredentials releases its store.
	credentials      *credential.Service
	closeCredentials func() error
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
	for _, u := range []string{o.sessions, o.memory} {
		if err := makeParentDir(u); err != nil {
			return nil, err
		}
	}
	if s.sessions, err = storage.OpenSessions(ctx, o.sessions); err != nil {
		return nil, fmt.Errorf("%s: %w", redact(o.sessions), err)
	}
	if s.artifacts, err = storage.OpenArtifacts(ctx, o.artifacts); err != nil {
		return nil, fmt.Errorf("%s: %w%s", redact(o.artifacts), err, cloudHint(o.artifacts))
	}
	if s.memory, err = storage.OpenMemory(ctx, o.memory); err != nil {
		return nil, fmt.Errorf("%s: %w", redact(o.memory), err)
	}
	return s, nil
}

// cloudHint explains a cloud bucket URL whose driver this binary lacks:
// the loom command links the S3, GCS and Azure drivers only when built
// with the cloud build tag.
func cloudHint(url string) string {
	scheme, _, _ := strings.Cut(url, "://")
	switch scheme {
	case "s3", "gs", "azblob":
		if !blob.DefaultURLMux().ValidBucketScheme(scheme) {
			return " (this binary has no " + scheme + ":// driver: build loom with -tags cloud, or import the driver in your own program)"
		}
	}
	return ""
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
	if s.closeCredentials != nil {
		errs = append(errs, s.closeCredentials())
	}
	return errors.Join(errs...)
}

// makeParentDir creates the directory holding a local SQLite file.
func makeParentDir(u string) error {
	file, ok := sqliteFile(u)
	if !ok {
		return nil
	}
	if err := os.MkdirAll(filepath.Dir(file), 0o755); err != nil {
		return fmt.Errorf("create the directory of %s: %w", file, err)
	}
	return nil
}
