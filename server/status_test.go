package server_test

import (
	"context"
	"encoding/json"
	"iter"
	"log/slog"
	"net/http/httptest"
	"sync"
	"testing"

	"github.com/loomkit/loom/agent"
	"github.com/loomkit/loom/event"
	"github.com/loomkit/loom/runner"
	"github.com/loomkit/loom/server"
	"github.com/loomkit/loom/session/memsession"
)

// TestAppStatus serves an app whose root agent changes between requests
// (runner.Config.Refresh) with a Status function: the app list and app
// info describe the current agents and carry source and loadError; apps
// without a status carry neither.
func TestAppStatus(t *testing.T) {
	mk := func(name, desc string) agent.Agent {
		a, err := agent.New(agent.Config{Name: name, Description: desc, Run: func(context.Context, *agent.Invocation) iter.Seq2[*event.Event, error] {
			return func(func(*event.Event, error) bool) {}
		}})
		if err != nil {
			t.Fatal(err)
		}
		return a
	}
	var mu sync.Mutex
	current, loadErr := mk("v1", "first"), ""
	live, err := runner.New(runner.Config{AppName: "live", Agent: current, Sessions: memsession.NewService(),
		Refresh: func(context.Context) agent.Agent { mu.Lock(); defer mu.Unlock(); return current }})
	if err != nil {
		t.Fatal(err)
	}
	fixed, err := runner.New(runner.Config{AppName: "fixed", Agent: mk("root", "fixed"), Sessions: memsession.NewService()})
	if err != nil {
		t.Fatal(err)
	}
	srv, err := server.New(server.Config{Apps: []*runner.Runner{live, fixed}, Logger: slog.New(slog.DiscardHandler),
		Status: func(app string) server.AppStatus {
			mu.Lock()
			defer mu.Unlock()
			if app != "live" {
				return server.AppStatus{}
			}
			return server.AppStatus{Source: "/apps/live/root_agent.yaml", LoadError: loadErr}
		}})
	if err != nil {
		t.Fatal(err)
	}
	get := func(path string) map[string]any {
		t.Helper()
		rec := httptest.NewRecorder()
		srv.ServeHTTP(rec, httptest.NewRequest("GET", "http://localhost"+path, nil))
		var m map[string]any
		if err := json.Unmarshal(rec.Body.Bytes(), &m); err != nil {
			t.Fatalf("%s: %d %s", path, rec.Code, rec.Body)
		}
		return m
	}
	apps := func() map[string]map[string]any {
		out := map[string]map[string]any{}
		for _, a := range get("/list-apps?detailed=true")["apps"].([]any) {
			m := a.(map[string]any)
			out[m["name"].(string)] = m
		}
		return out
	}
	got := apps()
	if l := got["live"]; l["rootAgentName"] != "v1" || l["source"] != "/apps/live/root_agent.yaml" || l["loadError"] != nil {
		t.Errorf("live = %v", l)
	}
	if f := got["fixed"]; f["source"] != nil || f["loadError"] != nil {
		t.Errorf("fixed = %v", f)
	}

	mu.Lock()
	current, loadErr = mk("v2", "second"), "root_agent.yaml:3:1: x: is not a known key"
	mu.Unlock()
	info := get("/apps/live/app-info")
	if info["rootAgentName"] != "v2" || info["description"] != "second" || info["loadError"] != "root_agent.yaml:3:1: x: is not a known key" {
		t.Errorf("app-info = %v", info)
	}
	if root := info["rootAgent"].(map[string]any); root["name"] != "v2" {
		t.Errorf("app-info tree = %v", root)
	}
}
