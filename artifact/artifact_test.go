package artifact_test

import (
	"context"
	"errors"
	"testing"

	"google.golang.org/genai"

	"github.com/loomkit/loom/artifact"
	"github.com/loomkit/loom/artifact/memartifact"
)

// recordingStore wraps a store and records the keys the service passes.
type recordingStore struct {
	artifact.Store
	keys []artifact.Key
}

func (r *recordingStore) Save(ctx context.Context, k artifact.Key, p *genai.Part) (int64, error) {
	r.keys = append(r.keys, k)
	return r.Store.Save(ctx, k, p)
}

func TestServiceScopesKeys(t *testing.T) {
	rec := &recordingStore{Store: memartifact.New()}
	svc := artifact.NewService(rec)
	ctx := t.Context()
	p := genai.NewPartFromText("x")
	if _, err := svc.Save(ctx, artifact.Ref{AppName: "a", UserID: "u", SessionID: "s", Name: "f.txt"}, p); err != nil {
		t.Fatal(err)
	}
	if _, err := svc.Save(ctx, artifact.Ref{AppName: "a", UserID: "u", SessionID: "s", Name: "user:f.txt"}, p); err != nil {
		t.Fatal(err)
	}
	// A user-scoped name needs no session.
	if _, err := svc.Save(ctx, artifact.Ref{AppName: "a", UserID: "u", Name: "user:g.txt"}, p); err != nil {
		t.Fatal(err)
	}
	want := []artifact.Key{
		{AppName: "a", UserID: "u", SessionID: "s", Name: "f.txt"},
		{AppName: "a", UserID: "u", SessionID: "", Name: "user:f.txt"},
		{AppName: "a", UserID: "u", SessionID: "", Name: "user:g.txt"},
	}
	if len(rec.keys) != len(want) {
		t.Fatalf("store saw %v, want %v", rec.keys, want)
	}
	for i := range want {
		if rec.keys[i] != want[i] {
			t.Errorf("key %d = %+v, want %+v", i, rec.keys[i], want[i])
		}
	}
	if store := svc.Store(); store != rec {
		t.Errorf("Store() = %v, want the store given to NewService", store)
	}
}

func TestServiceRejectsBadRequests(t *testing.T) {
	svc := artifact.NewService(memartifact.New())
	ctx := t.Context()
	if _, err := svc.List(ctx, "", "u", "s"); !errors.Is(err, artifact.ErrInvalid) {
		t.Errorf("List without app: %v", err)
	}
	if _, err := svc.List(ctx, "a", " ", "s"); !errors.Is(err, artifact.ErrInvalid) {
		t.Errorf("List without user: %v", err)
	}
	long := make([]byte, 513)
	for i := range long {
		long[i] = 'a'
	}
	if err := artifact.ValidateName(string(long)); !errors.Is(err, artifact.ErrInvalid) {
		t.Errorf("ValidateName(513 bytes) = %v, want ErrInvalid", err)
	}
	if err := artifact.ValidateName(string(long[:512])); err != nil {
		t.Errorf("ValidateName(512 bytes) = %v, want nil", err)
	}
}
