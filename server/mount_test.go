package server_test

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/loomkit/loom/runner"
	"github.com/loomkit/loom/server"
)

// TestMounts: a mounted handler serves its prefix and the paths below it,
// behind the API's host guard and authentication.
func TestMounts(t *testing.T) {
	mounted := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Write([]byte("mounted " + r.URL.Path))
	})
	f := newFixture(t, server.Config{
		Mounts: map[string]http.Handler{"/a2a/demo": mounted},
		Authenticate: func(r *http.Request) (string, error) {
			if r.Header.Get("Authorization") != "Bearer ok" {
				return "", errors.New("no token")
			}
			return "u1", nil
		},
	})
	for _, tc := range []struct {
		path, host, auth string
		want             int
		body             string
	}{
		{"/a2a/demo", "localhost", "Bearer ok", 200, "mounted /a2a/demo"},
		{"/a2a/demo/.well-known/agent-card.json", "localhost", "Bearer ok", 200, "mounted /a2a/demo/.well-known/agent-card.json"},
		{"/a2a/demo", "evil.example", "Bearer ok", 421, ""},
		{"/a2a/demo", "localhost", "", 401, ""},
		{"/a2a/other", "localhost", "Bearer ok", 404, ""},
	} {
		req := httptest.NewRequest("GET", tc.path, nil)
		req.Host = tc.host
		if tc.auth != "" {
			req.Header.Set("Authorization", tc.auth)
		}
		w := httptest.NewRecorder()
		f.srv.ServeHTTP(w, req)
		if w.Code != tc.want || !strings.Contains(w.Body.String(), tc.body) {
			t.Errorf("GET %s (Host %s): %d %q, want %d %q", tc.path, tc.host, w.Code, w.Body, tc.want, tc.body)
		}
	}
	for _, bad := range []string{"", "/", "a2a", "/health"} {
		if _, err := server.New(server.Config{Apps: []*runner.Runner{f.runner}, Mounts: map[string]http.Handler{bad: mounted}}); err == nil {
			t.Errorf("mount %q was accepted", bad)
		}
	}
}
