package remoteagent_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/loomkit/loom/agent/remoteagent"
)

// fakeServer serves an agent card and answers every JSON-RPC request with
// reply(request id), which must be echoed.
func fakeServer(t *testing.T, streaming bool, reply func(w http.ResponseWriter, id string)) string {
	t.Helper()
	var srv *httptest.Server
	srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodGet {
			json.NewEncoder(w).Encode(map[string]any{
				"name": "fake", "description": "A fake agent.", "url": srv.URL + "/rpc", "preferredTransport": "JSONRPC",
				"protocolVersion": "0.3.0", "version": "1", "capabilities": map[string]any{"streaming": streaming},
				"defaultInputModes": []string{"text/plain"}, "defaultOutputModes": []string{"text/plain"}, "skills": []any{},
			})
			return
		}
		var req struct{ ID json.RawMessage }
		json.NewDecoder(r.Body).Decode(&req)
		reply(w, string(req.ID))
	}))
	t.Cleanup(srv.Close)
	return srv.URL
}

// (CONFORMANCE P3)
func TestJSONRPCErrorIsErrorEvent(t *testing.T) {
	base := fakeServer(t, false, func(w http.ResponseWriter, id string) {
		fmt.Fprint(w, `{"jsonrpc":"2.0","id":`+id+`,"error":{"code":-32001,"message":"Task not found"}}`)
	})
	r := newRunner(t, newRemote(t, "fake", base))
	evs, _ := turn(t, r, "s", user("hello"))
	if len(evs) != 1 || evs[0].ErrorCode != remoteagent.ErrorRequest || !strings.Contains(strings.ToLower(evs[0].ErrorMessage), "task not found") {
		t.Errorf("events %s %s, want one %s error event naming the JSON-RPC error", evs[0].ErrorCode, evs[0].ErrorMessage, remoteagent.ErrorRequest)
	}
}

// (CONFORMANCE P3)
func TestStreamEndingEarlyIsErrorEvent(t *testing.T) {
	base := fakeServer(t, true, func(w http.ResponseWriter, id string) {
		w.Header().Set("Content-Type", "text/event-stream")
		fmt.Fprint(w, `data: {"jsonrpc":"2.0","id":`+id+`,"result":{"kind":"status-update","taskId":"t1","contextId":"c1","final":false,"status":{"state":"working","message":{"kind":"message","messageId":"m","role":"agent","parts":[{"kind":"text","text":"on it"}]}}}}`+"\n\n")
	})
	r := newRunner(t, newRemote(t, "fake", base))
	evs, partial := turn(t, r, "s", user("hello"))
	if len(partial) != 1 || text(partial) != "on it\n" {
		t.Errorf("partial events %q, want the working message", text(partial))
	}
	if len(evs) != 1 || evs[0].ErrorCode != remoteagent.ErrorRequest || !strings.Contains(evs[0].ErrorMessage, "ended before the task") ||
		evs[0].CustomMetadata[remoteagent.MetaTaskID] != "t1" {
		t.Errorf("events %+v, want one %s error event for task t1", evs, remoteagent.ErrorRequest)
	}
}

func TestMalformedPartIsErrorEvent(t *testing.T) {
	base := fakeServer(t, false, func(w http.ResponseWriter, id string) {
		fmt.Fprint(w, `{"jsonrpc":"2.0","id":`+id+`,"result":{"kind":"task","id":"t1","contextId":"c1","status":{"state":"completed"},"artifacts":[{"artifactId":"a","parts":[{"kind":"data","data":{"args":{}},"metadata":{"adk_type":"function_call"}}]}]}}`)
	})
	r := newRunner(t, newRemote(t, "fake", base))
	evs, _ := turn(t, r, "s", user("hello"))
	if len(evs) != 1 || evs[0].ErrorCode != remoteagent.ErrorRequest || !strings.Contains(evs[0].ErrorMessage, "malformed") {
		t.Errorf("events %+v, want one error event for the malformed part", evs)
	}
}

func TestNewChecksConfig(t *testing.T) {
	if _, err := remoteagent.New(remoteagent.Config{URL: "http://x"}); err == nil {
		t.Error("a remote agent without a name was accepted")
	}
	if _, err := remoteagent.New(remoteagent.Config{Name: "x"}); err == nil {
		t.Error("a remote agent without a URL or card was accepted")
	}
}
