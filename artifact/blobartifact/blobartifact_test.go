package blobartifact_test

import (
	"context"
	"fmt"
	"net/url"
	"path/filepath"
	"sync"
	"testing"

	"gocloud.dev/blob/memblob"
	"google.golang.org/genai"

	"github.com/loomkit/loom/artifact"
	"github.com/loomkit/loom/artifact/artifacttest"
	"github.com/loomkit/loom/artifact/blobartifact"
)

func open(t *testing.T, u string) *blobartifact.Store {
	t.Helper()
	s, err := blobartifact.Open(t.Context(), u)
	if err != nil {
		t.Fatalf("Open(%s): %v", u, err)
	}
	return s
}

func fileURL(dir string) string {
	return (&url.URL{Scheme: "file", Path: filepath.ToSlash(dir)}).String()
}

func TestConformanceMem(t *testing.T) {
	artifacttest.Run(t, func(t *testing.T) artifact.Store { return open(t, "mem://") })
}

func TestConformanceFile(t *testing.T) {
	artifacttest.Run(t, func(t *testing.T) artifact.Store { return open(t, fileURL(t.TempDir())) })
}

func TestConformancePrefixed(t *testing.T) {
	artifacttest.Run(t, func(t *testing.T) artifact.Store { return open(t, "mem://?prefix=loom/artifacts/") })
}

// TestSharedBucket runs two stores, as two servers would, over one bucket:
// their in-process locks do not see each other, so distinct versions come
// from the bucket's create-only precondition.
func TestSharedBucket(t *testing.T) {
	bucket := memblob.OpenBucket(nil)
	t.Cleanup(func() { bucket.Close() })
	stores := []*artifact.Service{
		artifact.NewService(blobartifact.New(bucket)),
		artifact.NewService(blobartifact.New(bucket)),
		artifact.NewService(blobartifact.New(bucket)),
	}
	r := artifact.Ref{AppName: "app", UserID: "u", SessionID: "s", Name: "shared.txt"}
	var (
		wg   sync.WaitGroup
		mu   sync.Mutex
		seen = map[int64]string{}
	)
	for i := range 9 {
		svc := stores[i%len(stores)]
		wg.Go(func() {
			for j := range 4 {
				text := fmt.Sprint(i, "-", j)
				v, err := svc.Save(context.Background(), r, genai.NewPartFromText(text))
				if err != nil {
					t.Error(err)
					return
				}
				mu.Lock()
				if prev, dup := seen[v]; dup {
					t.Errorf("version %d returned to %q and %q", v, prev, text)
				}
				seen[v] = text
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	vs, err := stores[0].Versions(t.Context(), r)
	if err != nil {
		t.Fatal(err)
	}
	if len(vs) != 36 || vs[0] != 0 || vs[35] != 35 {
		t.Fatalf("Versions = %v, want 0..35", vs)
	}
	for v, text := range seen {
		p, err := stores[1].Load(t.Context(), r, v)
		if err != nil || p.Text != text {
			t.Errorf("Load(%d) = %v, %v; want %q", v, p, err, text)
		}
	}
	// Closing a store made with New leaves the caller's bucket open.
	if err := stores[0].Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := stores[2].Load(t.Context(), r, 0); err != nil {
		t.Errorf("Load through another store after Close: %v", err)
	}
}

func TestOpenBadURL(t *testing.T) {
	if _, err := blobartifact.Open(t.Context(), "nosuchscheme://x"); err == nil {
		t.Error("Open of an unknown scheme succeeded")
	}
}
