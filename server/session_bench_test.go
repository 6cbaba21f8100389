package server_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/loomkit/loom/event"
	"github.com/loomkit/loom/server"
	"github.com/loomkit/loom/session"
)

// BenchmarkGetSession serves GET of a session of 2,000 events, as the dev
// UI asks for after every turn.
func BenchmarkGetSession(b *testing.B) {
	ctx := context.Background()
	f := newFixture(b, server.Config{})
	svc := f.runner.Sessions()
	sess, err := svc.Create(ctx, session.Key{AppName: "demo", UserID: "u1", SessionID: "s1"}, nil)
	if err != nil {
		b.Fatal(err)
	}
	for i := range 2000 {
		ev := event.NewModelText("e-1", "root", "an answer of the conversation <with> some & marks")
		if i%2 == 0 {
			ev = event.NewUserText("e-1", "a question")
		}
		if err := svc.AppendEvent(ctx, sess, ev); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportAllocs()
	for b.Loop() {
		w := httptest.NewRecorder()
		f.srv.ServeHTTP(w, httptest.NewRequest("GET", "/apps/demo/users/u1/sessions/s1", nil))
		if w.Code != http.StatusOK || w.Body.Len() < 2000*100 {
			b.Fatalf("%d, %d bytes", w.Code, w.Body.Len())
		}
	}
}
