package cli_test

import (
	"context"
	"errors"
	"io"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"google.golang.org/genai"

	"github.com/loomkit/loom/artifact"
	"github.com/loomkit/loom/artifact/fileartifact"
	"github.com/loomkit/loom/cli"
	"github.com/loomkit/loom/event"
	"github.com/loomkit/loom/session"
	"github.com/loomkit/loom/session/sqlsession"
)

// TestS14SessionTTLFlag: "loom api --session-ttl" deletes, as soon as it
// starts, a session (with its artifacts) unused for longer, and keeps a
// recent one.
func TestS14SessionTTLFlag(t *testing.T) {
	dir := t.TempDir()
	dbURL, artURL := "sqlite://"+filepath.Join(dir, "s.db"), "file://"+filepath.Join(dir, "art")
	ctx := context.Background()
	store, err := sqlsession.Open(ctx, dbURL, nil)
	if err != nil {
		t.Fatal(err)
	}
	past := time.Now().Add(-48 * time.Hour)
	old := session.NewService(store, &session.Options{Now: func() time.Time { return past }})
	oldKey := session.Key{AppName: "assistant", UserID: "u", SessionID: "old"}
	sess, err := old.Create(ctx, oldKey, map[string]any{"k": "v"})
	if err != nil {
		t.Fatal(err)
	}
	ev := event.NewUserText("inv", "hi")
	ev.Timestamp = past
	if err := old.AppendEvent(ctx, sess, ev); err != nil {
		t.Fatal(err)
	}
	recentKey := session.Key{AppName: "assistant", UserID: "u", SessionID: "recent"}
	if _, err := session.NewService(store, nil).Create(ctx, recentKey, nil); err != nil {
		t.Fatal(err)
	}
	store.Close()
	ast, err := fileartifact.Open(filepath.Join(dir, "art"))
	if err != nil {
		t.Fatal(err)
	}
	arts := artifact.NewService(ast)
	ref := artifact.Ref{AppName: "assistant", UserID: "u", SessionID: "old", Name: "a.txt"}
	if _, err := arts.Save(ctx, ref, genai.NewPartFromText("x")); err != nil {
		t.Fatal(err)
	}

	sctx, cancel := context.WithCancel(ctx)
	var log syncBuffer
	done := make(chan int, 1)
	go func() {
		done <- cli.Run(sctx, []string{"api", "--port", "0", "--sessions", dbURL, "--artifacts", artURL, "--session-ttl", "24h"},
			cli.Env{Stdout: io.Discard, Stderr: &log, Getenv: noEnv}, assistantApp)
	}()
	deadline := time.Now().Add(10 * time.Second)
	for !strings.Contains(log.String(), "1 expired sessions deleted") {
		if time.Now().After(deadline) {
			cancel()
			<-done
			t.Fatalf("no expiry reported:\n%s", log.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
	cancel()
	if code := <-done; code != 0 {
		t.Fatalf("loom api exited with %d:\n%s", code, log.String())
	}
	svc, err := sqlsession.NewService(ctx, dbURL, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer svc.Close()
	if _, err := svc.Get(ctx, oldKey, nil); !errors.Is(err, session.ErrNotFound) {
		t.Errorf("old session: %v, want ErrNotFound", err)
	}
	if _, err := svc.Get(ctx, recentKey, nil); err != nil {
		t.Errorf("recent session: %v", err)
	}
	if _, err := arts.Versions(ctx, ref); !errors.Is(err, artifact.ErrNotFound) {
		t.Errorf("old session's artifact: %v, want ErrNotFound", err)
	}
}
