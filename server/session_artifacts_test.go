package server_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/loomkit/loom/server"
)

// TestDeleteSessionDeletesArtifacts: DELETE of a session deletes its
// artifacts; a new session with the same id has none (CONFORMANCE S12).
func TestDeleteSessionDeletesArtifacts(t *testing.T) {
	f := newFixture(t, server.Config{})
	const s1 = "/apps/demo/users/u1/sessions/s1"
	mustCreate(t, f, "s1")
	if w := f.do(t, "POST", "/run", runBody("s1", "artifact", false)); w.Code != http.StatusOK {
		t.Fatalf("run: %d %s", w.Code, w.Body)
	}
	if w := f.do(t, "GET", s1+"/artifacts", ""); strings.TrimSpace(w.Body.String()) != `["report.txt"]` {
		t.Fatalf("artifacts before delete: %d %s", w.Code, w.Body)
	}
	if w := f.do(t, "DELETE", s1, ""); w.Code != http.StatusOK || strings.TrimSpace(w.Body.String()) != "null" {
		t.Fatalf("delete: %d %s", w.Code, w.Body)
	}
	if w := f.do(t, "GET", s1+"/artifacts/report.txt", ""); w.Code != http.StatusNotFound {
		t.Errorf("artifact after delete: %d %s, want 404", w.Code, w.Body)
	}
	mustCreate(t, f, "s1")
	if w := f.do(t, "GET", s1+"/artifacts", ""); strings.TrimSpace(w.Body.String()) != `[]` {
		t.Errorf("artifacts of the recreated session: %d %s, want []", w.Code, w.Body)
	}
	if w := f.do(t, "GET", s1+"/artifacts/report.txt/versions", ""); w.Code != http.StatusNotFound {
		t.Errorf("versions in the recreated session: %d %s, want 404", w.Code, w.Body)
	}
}

// TestForkRoute: POST .../fork copies the session and its artifacts (CONFORMANCE S11).
func TestForkRoute(t *testing.T) {
	f := newFixture(t, server.Config{})
	const sessions = "/apps/demo/users/u1/sessions"
	mustCreate(t, f, "s1")
	if w := f.do(t, "POST", "/run", runBody("s1", "artifact", false)); w.Code != http.StatusOK {
		t.Fatalf("run: %d %s", w.Code, w.Body)
	}
	if w := f.do(t, "POST", "/run", runBody("s1", "hello", false)); w.Code != http.StatusOK {
		t.Fatalf("run: %d %s", w.Code, w.Body)
	}
	var src struct {
		Events []struct {
			ID string `json:"id"`
		} `json:"events"`
	}
	if err := json.Unmarshal(f.do(t, "GET", sessions+"/s1", "").Body.Bytes(), &src); err != nil || len(src.Events) != 4 {
		t.Fatalf("source session: %v, %d events, want 4", err, len(src.Events))
	}

	w := f.do(t, "POST", sessions+"/s1/fork", `{"session_id":"alt","eventId":"`+src.Events[1].ID+`"}`)
	if w.Code != http.StatusOK {
		t.Fatalf("fork: %d %s", w.Code, w.Body)
	}
	var fork struct {
		ID     string `json:"id"`
		Events []any  `json:"events"`
	}
	if err := json.Unmarshal(w.Body.Bytes(), &fork); err != nil || fork.ID != "alt" || len(fork.Events) != 2 {
		t.Fatalf("fork answer: %v, id %q, %d events; want alt with 2", err, fork.ID, len(fork.Events))
	}
	w = f.do(t, "GET", sessions+"/alt/artifacts/report.txt/versions/0", "")
	if w.Code != http.StatusOK || !strings.Contains(w.Body.String(), "quarterly numbers") {
		t.Errorf("fork's artifact: %d %s", w.Code, w.Body)
	}

	for _, c := range []struct {
		path, body string
		code       int
	}{
		{sessions + "/s1/fork", `{"sessionId":"alt"}`, http.StatusConflict},
		{sessions + "/s1/fork", `{"eventId":"no-such-event"}`, http.StatusBadRequest},
		{sessions + "/missing/fork", ``, http.StatusNotFound},
		{sessions + "/s1/fork", `{"eventId":7}`, http.StatusUnprocessableEntity},
	} {
		if w := f.do(t, "POST", c.path, c.body); w.Code != c.code {
			t.Errorf("POST %s %s: %d %s, want %d", c.path, c.body, w.Code, w.Body, c.code)
		}
	}
	// A whole-session fork with a generated id.
	w = f.do(t, "POST", sessions+"/s1/fork", "")
	if err := json.Unmarshal(w.Body.Bytes(), &fork); err != nil || w.Code != http.StatusOK || fork.ID == "" || len(fork.Events) != 4 {
		t.Fatalf("whole fork: %d %s", w.Code, w.Body)
	}
	if w := f.do(t, "GET", sessions+"/"+fork.ID+"/artifacts", ""); strings.TrimSpace(w.Body.String()) != `["report.txt"]` {
		t.Errorf("whole fork's artifacts: %d %s", w.Code, w.Body)
	}
}
