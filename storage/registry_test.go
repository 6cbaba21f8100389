package storage_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/loomkit/loom/artifact"
	"github.com/loomkit/loom/artifact/memartifact"
	"github.com/loomkit/loom/memory"
	"github.com/loomkit/loom/memory/memmemory"
	"github.com/loomkit/loom/session"
	"github.com/loomkit/loom/session/memsession"
	"github.com/loomkit/loom/storage"
)

// Registrations are once per process, whatever -count says.
var (
	registerKV, registerFail sync.Once
	kvOpened                 func(url string)
	errBoom                  = errors.New("boom")
)

// TestS14RegisteredSchemeOpens: a scheme a third-party package registers
// opens through OpenSessions, OpenMemory and OpenArtifacts with the whole
// URL, case-insensitively, and is listed among the schemes.
func TestS14RegisteredSchemeOpens(t *testing.T) {
	var mu sync.Mutex
	var got []string
	registerKV.Do(func() {
		storage.RegisterSessions("kvtest", func(_ context.Context, url string) (*session.Service, error) {
			kvOpened(url)
			return memsession.NewService(), nil
		})
		storage.RegisterMemory("kvtest", func(context.Context, string) (*memory.Service, error) { return memmemory.NewService(), nil })
		storage.RegisterArtifacts("kvtest", func(context.Context, string) (*artifact.Service, error) { return memartifact.NewService(), nil })
	})
	kvOpened = func(url string) {
		mu.Lock()
		got = append(got, url)
		mu.Unlock()
	}
	ctx := context.Background()
	var wg sync.WaitGroup
	for _, u := range []string{"kvtest://host/db?x=1", "KVTEST://other"} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			svc, err := storage.OpenSessions(ctx, u)
			if err != nil {
				t.Error(err)
				return
			}
			svc.Close()
		}()
	}
	wg.Wait()
	slices.Sort(got)
	if !slices.Equal(got, []string{"KVTEST://other", "kvtest://host/db?x=1"}) {
		t.Errorf("opener got %q", got)
	}
	if m, err := storage.OpenMemory(ctx, "kvtest://m"); err != nil {
		t.Error(err)
	} else {
		m.Close()
	}
	if a, err := storage.OpenArtifacts(ctx, "kvtest://a"); err != nil {
		t.Error(err)
	} else {
		a.Close()
	}
	if !slices.Contains(storage.SessionSchemes(), "kvtest://") || !slices.Contains(storage.SessionSchemes(), "sqlite://") {
		t.Errorf("schemes = %v", storage.SessionSchemes())
	}
}

// TestS14OpenerErrorIsWrapped: an opener's error comes back wrapped, and
// an unknown scheme names the registered ones.
func TestS14OpenerErrorIsWrapped(t *testing.T) {
	registerFail.Do(func() {
		storage.RegisterSessions("failtest", func(context.Context, string) (*session.Service, error) { return nil, errBoom })
	})
	if _, err := storage.OpenSessions(context.Background(), "failtest://x"); !errors.Is(err, errBoom) {
		t.Errorf("err = %v, want boom", err)
	}
	_, err := storage.OpenSessions(context.Background(), "nosuch://x")
	if !errors.Is(err, storage.ErrUnsupported) || !strings.Contains(err.Error(), "memory://") {
		t.Errorf("err = %v", err)
	}
}

// TestS14BadRegistrationsPanic: a taken scheme, a bad scheme or a nil
// opener panics at registration.
func TestS14BadRegistrationsPanic(t *testing.T) {
	open := func(context.Context, string) (*session.Service, error) { return nil, nil }
	for name, f := range map[string]func(){
		"taken":  func() { storage.RegisterSessions("SQLite", open) },
		"bad":    func() { storage.RegisterSessions("1x", open) },
		"empty":  func() { storage.RegisterSessions("", open) },
		"nil":    func() { storage.RegisterSessions("niltest", nil) },
		"colons": func() { storage.RegisterSessions("a:b", open) },
	} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("%s: no panic", name)
				}
			}()
			f()
		}()
	}
}
