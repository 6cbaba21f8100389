package fileartifact_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"

	"google.golang.org/genai"

	"github.com/loomkit/loom/artifact"
	"github.com/loomkit/loom/artifact/artifacttest"
	"github.com/loomkit/loom/artifact/fileartifact"
)

func open(t testing.TB, dir string) *fileartifact.Store {
	t.Helper()
	s, err := fileartifact.Open(dir)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	return s
}

func TestConformance(t *testing.T) {
	artifacttest.Run(t, func(t *testing.T) artifact.Store { return open(t, t.TempDir()) })
}

// TestLayout pins the documented on-disk layout.
func TestLayout(t *testing.T) {
	dir := t.TempDir()
	svc := artifact.NewService(open(t, dir))
	ctx := t.Context()
	for _, r := range []artifact.Ref{
		{AppName: "app", UserID: "alice", SessionID: "s1", Name: "Report.pdf"},
		{AppName: "app", UserID: "alice", SessionID: "s1", Name: "user:notes/a.txt"},
	} {
		if _, err := svc.Save(ctx, r, genai.NewPartFromText("x")); err != nil {
			t.Fatal(err)
		}
	}
	for _, p := range []string{
		"app/alice/session/s1/%52eport.pdf/0",
		"app/alice/user/user%3Anotes%2Fa.txt/0",
	} {
		if _, err := os.Stat(filepath.Join(dir, filepath.FromSlash(p))); err != nil {
			t.Errorf("expected file %s: %v", p, err)
		}
	}
}

// TestStaysInsideDir checks that hostile ids and names create nothing
// outside the store's directory.
func TestStaysInsideDir(t *testing.T) {
	parent := t.TempDir()
	dir := filepath.Join(parent, "root")
	svc := artifact.NewService(open(t, dir))
	for _, r := range []artifact.Ref{
		{AppName: "..", UserID: "..", SessionID: "..", Name: "escape"},
		{AppName: "../..", UserID: "/etc", SessionID: `..\..`, Name: "x"},
		{AppName: "a", UserID: "b", SessionID: "c", Name: "user:../x"},
	} {
		// Invalid names are refused; valid ones must land inside dir.
		if _, err := svc.Save(t.Context(), r, genai.NewPartFromText("x")); err != nil && !errors.Is(err, artifact.ErrInvalid) {
			t.Fatalf("Save(%+v): %v", r, err)
		}
	}
	entries, err := os.ReadDir(parent)
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) != 1 || entries[0].Name() != "root" {
		t.Errorf("parent directory holds %v, want only root", entries)
	}
}

// TestStoreRejectsInvalidKeys checks the store's own validation, for
// callers that use it without the service.
func TestStoreRejectsInvalidKeys(t *testing.T) {
	s := open(t, t.TempDir())
	for _, k := range []artifact.Key{
		{AppName: "a", UserID: "u", SessionID: "s", Name: "../x"},
		{AppName: "", UserID: "u", SessionID: "s", Name: "x"},
		{AppName: "a", UserID: "", SessionID: "s", Name: "x"},
	} {
		if _, err := s.Save(t.Context(), k, genai.NewPartFromText("x")); !errors.Is(err, artifact.ErrInvalid) {
			t.Errorf("Save(%+v): err = %v, want ErrInvalid", k, err)
		}
	}
}

// TestSharedDirectory runs two stores, as two processes would, over one
// directory: concurrent saves still get distinct consecutive versions.
func TestSharedDirectory(t *testing.T) {
	dir := t.TempDir()
	a, b := artifact.NewService(open(t, dir)), artifact.NewService(open(t, dir))
	r := artifact.Ref{AppName: "app", UserID: "u", SessionID: "s", Name: "shared.txt"}
	var (
		wg   sync.WaitGroup
		mu   sync.Mutex
		seen = map[int64]string{}
	)
	for i := range 8 {
		svc := a
		if i%2 == 1 {
			svc = b
		}
		wg.Go(func() {
			for j := range 3 {
				text := fmt.Sprint(i, "-", j)
				v, err := svc.Save(context.Background(), r, genai.NewPartFromText(text))
				if err != nil {
					t.Error(err)
					return
				}
				mu.Lock()
				if _, dup := seen[v]; dup {
					t.Errorf("version %d returned twice", v)
				}
				seen[v] = text
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	vs, err := b.Versions(t.Context(), r)
	if err != nil {
		t.Fatal(err)
	}
	if len(vs) != 24 || vs[0] != 0 || vs[23] != 23 {
		t.Fatalf("Versions = %v, want 0..23", vs)
	}
	for v, text := range seen {
		p, err := a.Load(t.Context(), r, v)
		if err != nil || p.Text != text {
			t.Errorf("Load(%d) = %v, %v; want %q", v, p, err, text)
		}
	}
}

// TestIgnoresLeftovers checks that temporary files a crashed save left
// behind are invisible.
func TestIgnoresLeftovers(t *testing.T) {
	dir := t.TempDir()
	svc := artifact.NewService(open(t, dir))
	r := artifact.Ref{AppName: "app", UserID: "u", SessionID: "s", Name: "a.txt"}
	if _, err := svc.Save(t.Context(), r, genai.NewPartFromText("one")); err != nil {
		t.Fatal(err)
	}
	adir := filepath.Join(dir, "app", "u", "session", "s", "a.txt")
	if err := os.WriteFile(filepath.Join(adir, ".tmp-123"), []byte("partial"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(filepath.Join(dir, "app", "u", "session", "s", ".del-1"), 0o700); err != nil {
		t.Fatal(err)
	}
	vs, err := svc.Versions(t.Context(), r)
	if err != nil || !slices.Equal(vs, []int64{0}) {
		t.Errorf("Versions = %v, %v; want [0]", vs, err)
	}
	names, err := svc.List(t.Context(), "app", "u", "s")
	if err != nil || !slices.Equal(names, []string{"a.txt"}) {
		t.Errorf("List = %q, %v; want [a.txt]", names, err)
	}
	if v, err := svc.Save(t.Context(), r, genai.NewPartFromText("two")); err != nil || v != 1 {
		t.Errorf("Save = %d, %v; want 1", v, err)
	}
}

func TestClosed(t *testing.T) {
	s := open(t, t.TempDir())
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	k := artifact.Key{AppName: "a", UserID: "u", SessionID: "s", Name: "x"}
	if _, err := s.Save(t.Context(), k, genai.NewPartFromText("x")); err == nil {
		t.Error("Save after Close succeeded")
	}
}
