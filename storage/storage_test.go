package storage_test

import (
	"context"
	"errors"
	"path/filepath"
	"testing"

	"google.golang.org/genai"

	"github.com/loomkit/loom/artifact"
	"github.com/loomkit/loom/event"
	"github.com/loomkit/loom/internal/sqldb/sqldbtest"
	"github.com/loomkit/loom/session"
	"github.com/loomkit/loom/storage"
)

func TestOpenSessions(t *testing.T) {
	ctx := context.Background()
	file := "sqlite://" + filepath.Join(t.TempDir(), "s.db")
	urls := []string{"memory://", file, "sqlite::memory:"}
	for _, u := range urls {
		t.Run(u, func(t *testing.T) {
			svc, err := storage.OpenSessions(ctx, u)
			if err != nil {
				t.Fatal(err)
			}
			defer svc.Close()
			key := session.Key{AppName: "a", UserID: "u", SessionID: "s"}
			sess, err := svc.Create(ctx, key, map[string]any{"k": "v"})
			if err != nil {
				t.Fatal(err)
			}
			if err := svc.AppendEvent(ctx, sess, event.NewUserText("inv", "hello")); err != nil {
				t.Fatal(err)
			}
			got, err := svc.Get(ctx, key, nil)
			if err != nil {
				t.Fatal(err)
			}
			if v, _ := got.Get("k"); v != "v" || got.Len() != 1 {
				t.Errorf("read back k=%v with %d events, want v and 1", v, got.Len())
			}
		})
	}
	// A file store keeps its data across opens.
	svc, err := storage.OpenSessions(ctx, file)
	if err != nil {
		t.Fatal(err)
	}
	defer svc.Close()
	if got, err := svc.Get(ctx, session.Key{AppName: "a", UserID: "u", SessionID: "s"}, nil); err != nil || got.Len() != 1 {
		t.Errorf("reopened file store: err %v", err)
	}
}

func TestOpenPostgres(t *testing.T) {
	u := sqldbtest.PostgresURL(t)
	ctx := context.Background()
	s, err := storage.OpenSessions(ctx, u)
	if err != nil {
		t.Fatal(err)
	}
	s.Close()
	m, err := storage.OpenMemory(ctx, u)
	if err != nil {
		t.Fatal(err)
	}
	m.Close()
}

func TestOpenMemory(t *testing.T) {
	ctx := context.Background()
	for _, u := range []string{"memory://", "sqlite://" + filepath.Join(t.TempDir(), "m.db")} {
		svc, err := storage.OpenMemory(ctx, u)
		if err != nil {
			t.Fatalf("%s: %v", u, err)
		}
		res, err := svc.Search(ctx, "a", "u", "anything", nil)
		if err != nil || len(res) != 0 {
			t.Errorf("%s: search on an empty store = %v, %v", u, res, err)
		}
		svc.Close()
	}
}

func TestOpenUnsupported(t *testing.T) {
	ctx := context.Background()
	for _, u := range []string{"mysql://x", "", "file:///tmp/x"} {
		if _, err := storage.OpenSessions(ctx, u); !errors.Is(err, storage.ErrUnsupported) {
			t.Errorf("OpenSessions(%q) = %v, want ErrUnsupported", u, err)
		}
		if _, err := storage.OpenMemory(ctx, u); !errors.Is(err, storage.ErrUnsupported) {
			t.Errorf("OpenMemory(%q) = %v, want ErrUnsupported", u, err)
		}
	}
}

// TestOpenArtifacts checks the artifact URL schemes.
func TestOpenArtifacts(t *testing.T) {
	ctx := context.Background()
	for _, url := range []string{"memory://", "file://" + t.TempDir(), "mem://"} {
		svc, err := storage.OpenArtifacts(ctx, url)
		if err != nil {
			t.Fatalf("%s: %v", url, err)
		}
		ref := artifact.Ref{AppName: "a", UserID: "u", SessionID: "s", Name: "f.txt"}
		if v, err := svc.Save(ctx, ref, genai.NewPartFromText("hi")); err != nil || v != 0 {
			t.Fatalf("%s: save v%d %v", url, v, err)
		}
		svc.Close()
	}
	if _, err := storage.OpenArtifacts(ctx, "ftp:nope"); !errors.Is(err, storage.ErrUnsupported) {
		t.Fatalf("bad scheme: %v", err)
	}
}
