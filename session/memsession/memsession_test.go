package memsession_test

import (
	"fmt"
	"testing"

	"github.com/loomkit/loom/session"
	"github.com/loomkit/loom/session/memsession"
	"github.com/loomkit/loom/session/sessiontest"
)

func TestConformance(t *testing.T) {
	sessiontest.Run(t, func(t *testing.T) session.Store {
		st := memsession.New()
		t.Cleanup(func() { st.Close() })
		return st
	})
}

func FuzzAppendStateDelta(f *testing.F) {
	sessiontest.FuzzAppendStateDelta(f, memsession.New())
}

// BenchmarkListWalk measures a full walk, 1,000 sessions a page, of the
// 10,000 sessions of one app (spread over 10 users). A page costs a binary
// search and its own size, so the walk is linear in the number of sessions.
func BenchmarkListWalk(b *testing.B) {
	svc := memsession.NewService()
	ctx := b.Context()
	for i := range 10000 {
		k := session.Key{AppName: "bench", UserID: fmt.Sprintf("u%d", i%10), SessionID: fmt.Sprintf("s%05d", i)}
		if _, err := svc.Create(ctx, k, map[string]any{"i": i}); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportAllocs()
	for b.Loop() {
		n, token := 0, ""
		for {
			res, err := svc.List(ctx, "bench", "", &session.ListOptions{PageSize: 1000, PageToken: token})
			if err != nil {
				b.Fatal(err)
			}
			n += len(res.Sessions)
			if token = res.NextPageToken; token == "" {
				break
			}
		}
		if n != 10000 {
			b.Fatalf("walked %d sessions, want 10000", n)
		}
	}
}
