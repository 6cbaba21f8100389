package runner_test

import (
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/loomkit/loom/artifact"
	"github.com/loomkit/loom/artifact/memartifact"
	"github.com/loomkit/loom/internal/sqldb/sqldbtest"
	"github.com/loomkit/loom/runner"
	"github.com/loomkit/loom/session"
	"github.com/loomkit/loom/session/memsession"
)

// TestS14ExpireSessions runs the app's retention on every session
// backend: a session unused for longer than Config.SessionTTL goes with
// its events, session state and artifacts; a recent one, the user's
// "user:" artifacts and state, and other apps' sessions stay; no TTL
// deletes nothing.
func TestS14ExpireSessions(t *testing.T) {
	backends := map[string]func(t *testing.T) *session.Service{
		"memory": func(*testing.T) *session.Service { return memsession.NewService() },
		"sqlite": func(t *testing.T) *session.Service { return openSQL(t, sqldbtest.SQLiteURL(t)) },
		"postgres": func(t *testing.T) *session.Service {
			return openSQL(t, sqldbtest.PostgresURL(t))
		},
	}
	for name, open := range backends {
		t.Run(name, func(t *testing.T) {
			ctx := t.Context()
			sessions, artifacts := open(t), memartifact.NewService()
			newRunner := func(appName string, ttl time.Duration) *runner.Runner {
				r, err := runner.New(runner.Config{AppName: appName, Agent: llm(t, "bot", saverModel(), saveTool(t)),
					Sessions: sessions, Artifacts: artifacts, AutoCreateSession: true, SessionTTL: ttl})
				if err != nil {
					t.Fatal(err)
				}
				return r
			}
			r := newRunner(app, time.Hour)
			other := newRunner("other", time.Hour)
			for _, id := range []string{"s1", "s2"} {
				if _, err := r.RunSync(ctx, user, id, userText("note "+id), nil); err != nil {
					t.Fatal(err)
				}
			}
			if _, err := other.RunSync(ctx, user, "s1", userText("elsewhere"), nil); err != nil {
				t.Fatal(err)
			}
			start := time.Now()

			// Nothing is an hour old yet; without a TTL nothing ever is.
			if n, err := r.ExpireSessions(ctx, start.Add(time.Minute)); n != 0 || err != nil {
				t.Fatalf("ExpireSessions now = %d, %v; want 0", n, err)
			}
			if n, err := newRunner(app, 0).ExpireSessions(ctx, start.Add(100*time.Hour)); n != 0 || err != nil {
				t.Fatalf("ExpireSessions without a TTL = %d, %v; want 0", n, err)
			}
			// s2 is used again 45 minutes later: only s1 is idle for
			// more than an hour at start+90m.
			later := start.Add(45 * time.Minute)
			s2, err := sessions.Get(ctx, session.Key{AppName: app, UserID: user, SessionID: "s2"}, nil)
			if err != nil {
				t.Fatal(err)
			}
			touch := userText("again").Parts[0]
			ev := s2.Events()[0].Clone()
			ev.ID, ev.Timestamp, ev.Content.Parts = "", later, append(ev.Content.Parts[:0:0], touch)
			if err := sessions.AppendEvent(ctx, s2, ev); err != nil {
				t.Fatal(err)
			}
			n, err := r.ExpireSessions(ctx, start.Add(90*time.Minute))
			if n != 1 || err != nil {
				t.Fatalf("ExpireSessions at +90m = %d, %v; want 1", n, err)
			}
			if _, err := sessions.Get(ctx, session.Key{AppName: app, UserID: user, SessionID: "s1"}, nil); !errors.Is(err, session.ErrNotFound) {
				t.Errorf("s1 after expiry: %v, want ErrNotFound", err)
			}
			names, err := artifacts.List(ctx, app, user, "s1")
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(names, []string{"user:shared.txt"}) {
				t.Errorf("s1's artifacts after expiry = %q, want only the user's", names)
			}
			if _, err := artifacts.Versions(ctx, artifact.Ref{AppName: app, UserID: user, SessionID: "s2", Name: "note.txt"}); err != nil {
				t.Errorf("s2's note.txt: %v", err)
			}
			if _, err := sessions.Get(ctx, session.Key{AppName: "other", UserID: user, SessionID: "s1"}, nil); err != nil {
				t.Errorf("the other app's session: %v", err)
			}
			// The runner's cached copy is gone too: the next turn on s1
			// starts a new session.
			events, err := r.RunSync(ctx, user, "s1", userText("fresh"), nil)
			if err != nil {
				t.Fatal(err)
			}
			got, err := sessions.Get(ctx, session.Key{AppName: app, UserID: user, SessionID: "s1"}, nil)
			if err != nil || got.Len() != len(events)+1 {
				t.Errorf("recreated s1: %v events (err %v), want %d", got.Len(), err, len(events)+1)
			}
		})
	}
}
