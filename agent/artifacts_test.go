package agent_test

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"

	"google.golang.org/genai"

	"github.com/loomkit/loom/agent"
	"github.com/loomkit/loom/artifact"
	"github.com/loomkit/loom/artifact/memartifact"
	"github.com/loomkit/loom/session"
)

// TestPendingArtifactsDiscard: Discard deletes exactly the saved versions
// no committed event covers, for saves made concurrently (CONFORMANCE R11).
func TestPendingArtifactsDiscard(t *testing.T) {
	ctx := context.Background()
	svc := memartifact.NewService()
	key := session.Key{AppName: "app", UserID: "u", SessionID: "s"}
	ref := func(name string) artifact.Ref {
		return artifact.Ref{AppName: key.AppName, UserID: key.UserID, SessionID: key.SessionID, Name: name}
	}
	var p agent.PendingArtifacts
	save := func(name string) int64 {
		v, err := svc.Save(ctx, ref(name), genai.NewPartFromText(name))
		if err != nil {
			t.Error(err)
		}
		p.Saved(ref(name), v)
		return v
	}
	// Before the invocation: a committed version that must stay.
	if _, err := svc.Save(ctx, ref("a"), genai.NewPartFromText("old")); err != nil {
		t.Fatal(err)
	}

	var wg sync.WaitGroup
	for i := range 8 {
		wg.Go(func() { save(fmt.Sprint("c", i%2)) }) // c0, c1: 4 versions each, none committed
	}
	wg.Wait()
	save("a")                // 1: covered by the commit of 2
	v2 := save("a")          // 2: committed
	save("a")                // 3: saved after, not committed
	u := save("user:shared") // user-scoped: the session id does not matter
	p.Committed(key, map[string]int64{"a": v2})
	other := key
	other.SessionID = "other"
	p.Committed(other, map[string]int64{"user:shared": u})
	p.Committed(key, nil)

	if err := p.Discard(ctx, svc); err != nil {
		t.Fatal(err)
	}
	check := func(name string, want []int64) {
		t.Helper()
		vs, err := svc.Versions(ctx, ref(name))
		if len(want) == 0 && err == nil || len(want) > 0 && (err != nil || !slices.Equal(vs, want)) {
			t.Errorf("versions of %s = %v, %v; want %v", name, vs, err, want)
		}
	}
	check("a", []int64{0, 1, 2})
	check("c0", nil)
	check("c1", nil)
	check("user:shared", []int64{0})

	// Discarding again, or through a nil receiver, does nothing.
	if err := p.Discard(ctx, svc); err != nil {
		t.Error(err)
	}
	var none *agent.PendingArtifacts
	none.Saved(ref("a"), 0)
	none.Committed(key, map[string]int64{"a": 0})
	if err := none.Discard(ctx, svc); err != nil {
		t.Error(err)
	}
	check("a", []int64{0, 1, 2})
}
