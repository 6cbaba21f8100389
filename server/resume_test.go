package server_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/loomkit/loom/server"
)

// TestT3RunRequestInvocationID checks that a run request's invocationId
// reaches the runner: an id the session does not have is a client error
// and stores nothing.
func TestT3RunRequestInvocationID(t *testing.T) {
	f := newFixture(t, server.Config{})
	sessions := "/apps/demo/users/u1/sessions"
	if w := f.do(t, "POST", sessions, `{"sessionId":"s1"}`); w.Code != http.StatusOK {
		t.Fatalf("create session: %d %s", w.Code, w.Body)
	}
	w := f.do(t, "POST", "/run", `{"appName":"demo","userId":"u1","sessionId":"s1","invocationId":"e-unknown","newMessage":{"parts":[{"text":"hello"}]}}`)
	if w.Code != http.StatusBadRequest && w.Code != http.StatusUnprocessableEntity {
		t.Fatalf("run with an unknown invocation id: %d %s, want a client error", w.Code, w.Body)
	}
	if !strings.Contains(w.Body.String(), "e-unknown") {
		t.Errorf("error %s does not name the invocation", w.Body)
	}
	if w := f.do(t, "GET", sessions+"/s1", ""); !strings.Contains(w.Body.String(), `"events":[]`) {
		t.Errorf("session after the rejected run: %s, want no events", w.Body)
	}
}
