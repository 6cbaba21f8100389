// Package credentialtest is the conformance suite of credential.Store
// drivers: every store runs it, over a credential.Service, under -race.
package credentialtest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"

	"github.com/loomkit/loom/credential"
)

// Run runs the suite against stores made by newStore, one per subtest.
func Run(t *testing.T, newStore func(t *testing.T) credential.Store) {
	t.Run("RoundTrip", func(t *testing.T) { testT20RoundTrip(t, newStore(t)) })
	t.Run("PerUser", func(t *testing.T) { testT20PerUser(t, newStore(t)) })
	t.Run("SealedAtRest", func(t *testing.T) { testT20SealedAtRest(t, newStore(t)) })
	t.Run("Concurrent", func(t *testing.T) { testT20Concurrent(t, newStore(t)) })
}

func service(t *testing.T, s credential.Store, key []byte) *credential.Service {
	t.Helper()
	svc, err := credential.NewService(s, key)
	if err != nil {
		t.Fatal(err)
	}
	return svc
}

// testT20RoundTrip: a value put is read back, replaced by the next put,
// and gone after a delete.
func testT20RoundTrip(t *testing.T, s credential.Store) {
	ctx := context.Background()
	svc := service(t, s, credential.GenerateKey())
	k := credential.Key{AppName: "app", UserID: "alice", Name: "calendar"}
	if _, err := svc.Get(ctx, k); !errors.Is(err, credential.ErrNotFound) {
		t.Fatalf("get before put: %v, want ErrNotFound", err)
	}
	for _, v := range []string{"first", "second"} {
		if err := svc.Put(ctx, k, []byte(v)); err != nil {
			t.Fatal(err)
		}
		got, err := svc.Get(ctx, k)
		if err != nil || string(got) != v {
			t.Fatalf("get = %q, %v; want %q", got, err, v)
		}
	}
	if err := svc.Delete(ctx, k); err != nil {
		t.Fatal(err)
	}
	if _, err := svc.Get(ctx, k); !errors.Is(err, credential.ErrNotFound) {
		t.Fatalf("get after delete: %v, want ErrNotFound", err)
	}
	if err := svc.Delete(ctx, k); err != nil {
		t.Fatalf("deleting a missing credential: %v", err)
	}
}

// testT20PerUser: one user's credential is not another's, nor another
// app's; a record copied to another user's key does not open.
func testT20PerUser(t *testing.T, s credential.Store) {
	ctx := context.Background()
	svc := service(t, s, credential.GenerateKey())
	alice := credential.Key{AppName: "app", UserID: "alice", Name: "calendar"}
	bob := credential.Key{AppName: "app", UserID: "bob", Name: "calendar"}
	other := credential.Key{AppName: "other", UserID: "alice", Name: "calendar"}
	if err := svc.Put(ctx, alice, []byte("alice-token")); err != nil {
		t.Fatal(err)
	}
	for _, k := range []credential.Key{bob, other} {
		if _, err := svc.Get(ctx, k); !errors.Is(err, credential.ErrNotFound) {
			t.Fatalf("get %+v: %v, want ErrNotFound", k, err)
		}
	}
	rec, err := s.Get(ctx, alice)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Put(ctx, bob, rec); err != nil {
		t.Fatal(err)
	}
	if got, err := svc.Get(ctx, bob); !errors.Is(err, credential.ErrUnreadable) {
		t.Fatalf("alice's record under bob's key opened: %q, %v", got, err)
	}
}

// testT20SealedAtRest: the store holds no plaintext, and a record does not
// open under another encryption key.
func testT20SealedAtRest(t *testing.T, s credential.Store) {
	ctx := context.Background()
	svc := service(t, s, credential.GenerateKey())
	k := credential.Key{AppName: "app", UserID: "alice", Name: "calendar"}
	secret := []byte("refresh-token-in-clear")
	if err := svc.Put(ctx, k, secret); err != nil {
		t.Fatal(err)
	}
	rec, err := s.Get(ctx, k)
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(rec, secret) {
		t.Fatalf("the store holds the secret in clear: %q", rec)
	}
	if _, err := service(t, s, credential.GenerateKey()).Get(ctx, k); !errors.Is(err, credential.ErrUnreadable) {
		t.Fatalf("a record opened under another key: %v", err)
	}
	rec[len(rec)-1] ^= 1
	if err := s.Put(ctx, k, rec); err != nil {
		t.Fatal(err)
	}
	if _, err := svc.Get(ctx, k); !errors.Is(err, credential.ErrUnreadable) {
		t.Fatalf("an altered record opened: %v", err)
	}
}

// testT20Concurrent: concurrent writers of distinct keys all land.
func testT20Concurrent(t *testing.T, s credential.Store) {
	ctx := context.Background()
	svc := service(t, s, credential.GenerateKey())
	var wg sync.WaitGroup
	errs := make(chan error, 16)
	for i := range 16 {
		wg.Go(func() {
			k := credential.Key{AppName: "app", UserID: fmt.Sprint("u", i), Name: "n"}
			if err := svc.Put(ctx, k, []byte(k.UserID)); err != nil {
				errs <- err
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	for i := range 16 {
		k := credential.Key{AppName: "app", UserID: fmt.Sprint("u", i), Name: "n"}
		if got, err := svc.Get(ctx, k); err != nil || string(got) != k.UserID {
			t.Fatalf("get %s = %q, %v", k.UserID, got, err)
		}
	}
}
