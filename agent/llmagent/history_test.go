package llmagent_test

import (
	"context"
	"fmt"
	"runtime"
	"testing"
	"time"

	"google.golang.org/genai"

	"github.com/loomkit/loom/agent/llmagent"
	"github.com/loomkit/loom/model"
	"github.com/loomkit/loom/model/scripted"
	"github.com/loomkit/loom/runner"
	"github.com/loomkit/loom/session/memsession"
)

// TestHistoriesLiveWithTheirSessions checks that the model histories an
// agent keeps per live session go away with the session copies: the
// runner's cache bounds them, and nothing else holds them.
func TestHistoriesLiveWithTheirSessions(t *testing.T) {
	m := scripted.New("echo", func(context.Context, *model.Request) (scripted.Turn, error) {
		return scripted.Text("ok"), nil
	})
	a, err := llmagent.New(llmagent.Config{Name: "echo", Model: m})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name  string
		cfg   runner.Config
		cache int // sessions the runner keeps
	}{
		{"no cache", runner.Config{SessionCacheSize: -1}, 0},
		{"cache of 5", runner.Config{SessionCacheSize: 5}, 5},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := tc.cfg
			cfg.AppName, cfg.Agent, cfg.Sessions, cfg.AutoCreateSession = "app", a, memsession.NewService(), true
			r, err := runner.New(cfg)
			if err != nil {
				t.Fatal(err)
			}
			for i := range 50 {
				if _, err := r.RunSync(context.Background(), "u", fmt.Sprint("s", i), genai.NewContentFromText("hi", genai.RoleUser), nil); err != nil {
					t.Fatal(err)
				}
			}
			n := 0
			for range 100 { // cleanups run after a collection, in their own goroutine
				runtime.GC()
				if n = a.Histories(); n <= tc.cache {
					break
				}
				time.Sleep(10 * time.Millisecond)
			}
			if n > tc.cache {
				t.Fatalf("the agent keeps %d histories after 50 sessions, want at most the %d sessions the runner keeps", n, tc.cache)
			}
			runtime.KeepAlive(r)
		})
	}
}
