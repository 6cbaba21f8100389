package remoteagent_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"
)

// pythonStyleServer serves a card the way a2a-python writes it: without
// preferredTransport (the protocol's default is JSON-RPC), at the path
// cardPath, and answers message/send with a completed task.
func pythonStyleServer(t *testing.T, cardPath string) (base string, cardFetches *int) {
	t.Helper()
	n := 0
	var srv *httptest.Server
	srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodGet {
			if r.URL.Path != cardPath {
				http.NotFound(w, r)
				return
			}
			n++
			json.NewEncoder(w).Encode(map[string]any{
				"name": "py", "description": "A Python agent.", "url": srv.URL + "/",
				"version": "1", "capabilities": map[string]any{},
				"defaultInputModes": []string{"text/plain"}, "defaultOutputModes": []string{"text/plain"}, "skills": []any{},
			})
			return
		}
		var req struct{ ID json.RawMessage }
		json.NewDecoder(r.Body).Decode(&req)
		fmt.Fprint(w, `{"jsonrpc":"2.0","id":`+string(req.ID)+`,"result":{"kind":"task","id":"t1","contextId":"c1","status":{"state":"completed"},"artifacts":[{"artifactId":"a","parts":[{"kind":"text","text":"hi from python"}]}]}}`)
	}))
	t.Cleanup(srv.Close)
	return srv.URL, &n
}

func TestCardWithoutPreferredTransportIsJSONRPC(t *testing.T) {
	base, _ := pythonStyleServer(t, "/.well-known/agent-card.json")
	r := newRunner(t, newRemote(t, "py", base))
	evs, _ := turn(t, r, "s", user("hello"))
	if len(evs) != 1 || evs[0].ErrorCode != "" || text(evs) != "hi from python\n" {
		t.Errorf("events %+v (text %q), want the remote's answer", evs, text(evs))
	}
}

func TestFullCardURL(t *testing.T) {
	for _, path := range []string{"/.well-known/agent-card.json", "/.well-known/agent.json", "/a2a/check_prime_agent/.well-known/agent.json"} {
		base, fetches := pythonStyleServer(t, path)
		r := newRunner(t, newRemote(t, "py", base+path))
		evs, _ := turn(t, r, "s", user("hello"))
		if len(evs) != 1 || evs[0].ErrorCode != "" || text(evs) != "hi from python\n" || *fetches != 1 {
			t.Errorf("card at %s: events %+v (text %q), %d card fetches; want the remote's answer after one fetch", path, evs, text(evs), *fetches)
		}
	}
}

// TestStreamOfOneFinishedTask: a stream whose only event is the finished
// task (a server may answer so) yields the task's artifacts.
func TestStreamOfOneFinishedTask(t *testing.T) {
	base := fakeServer(t, true, func(w http.ResponseWriter, id string) {
		w.Header().Set("Content-Type", "text/event-stream")
		fmt.Fprint(w, `data: {"jsonrpc":"2.0","id":`+id+`,"result":{"kind":"task","id":"t1","contextId":"c1","status":{"state":"completed"},"artifacts":[{"artifactId":"a","parts":[{"kind":"text","text":"all done"}]}]}}`+"\n\n")
	})
	r := newRunner(t, newRemote(t, "fake", base))
	evs, _ := turn(t, r, "s", user("hello"))
	if len(evs) != 1 || evs[0].ErrorCode != "" || text(evs) != "all done\n" {
		t.Errorf("events %+v (text %q), want the task's artifact", evs, text(evs))
	}
}
