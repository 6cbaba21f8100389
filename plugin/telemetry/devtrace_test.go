package telemetry_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"google.golang.org/genai"

	"github.com/loomkit/loom/plugin/telemetry"
	"github.com/loomkit/loom/runner"
	"github.com/loomkit/loom/server"
)

// TestTraceRoutesWithoutUserInDevelopment: ADK's web UI names no user on
// the trace routes. A server in the development setting (no
// Config.Authenticate, no Config.AllowedHosts but loopback names, the
// request from a loopback address) answers it with the traces of the session or event whatever its
// user; any other setting still answers nothing without a user.
func TestTraceRoutesWithoutUserInDevelopment(t *testing.T) {
	f := newFixture(t, telemetry.Config{}, s1Agent(t, s1Model(1, 2)))
	evs, err := f.runner.RunSync(context.Background(), "user", "s1", genai.NewContentFromText("1+2", genai.RoleUser), nil)
	if err != nil || len(evs) != 3 {
		t.Fatalf("run: %d events, %v", len(evs), err)
	}
	for _, tc := range []struct {
		name   string
		cfg    server.Config
		remote string
		host   string
		shown  bool
	}{
		{"development", server.Config{}, "127.0.0.1:5555", "localhost:8000", true},
		{"development over IPv6", server.Config{}, "[::1]:5555", "[::1]:8000", true},
		{"remote client", server.Config{}, "192.0.2.1:5555", "localhost:8000", false},
		{"loopback hosts", server.Config{AllowedHosts: []string{"127.0.0.1", "localhost:8000", "[::1]"}}, "127.0.0.1:5555", "127.0.0.1:8000", true},
		{"allowed hosts", server.Config{AllowedHosts: []string{"127.0.0.1", "dev.example"}}, "127.0.0.1:5555", "localhost:8000", false},
		{"every host", server.Config{AllowedHosts: []string{"*"}}, "127.0.0.1:5555", "localhost:8000", false},
		{"authenticated", server.Config{Authenticate: func(r *http.Request) (string, error) {
			if u, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer "); ok {
				return u, nil
			}
			return "", errors.New("no token")
		}}, "127.0.0.1:5555", "localhost:8000", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := tc.cfg
			cfg.Apps, cfg.Traces = []*runner.Runner{f.runner}, traceRoutes{f.tel}
			srv, err := server.New(cfg)
			if err != nil {
				t.Fatal(err)
			}
			defer srv.Close()
			get := func(path string) (int, []byte) {
				req := httptest.NewRequest("GET", path, nil)
				req.RemoteAddr, req.Host = tc.remote, tc.host
				if cfg.Authenticate != nil {
					req.Header.Set("Authorization", "Bearer mallory")
				}
				rec := httptest.NewRecorder()
				srv.ServeHTTP(rec, req)
				return rec.Code, rec.Body.Bytes()
			}
			for _, path := range []string{"/dev/apps/app/debug/trace/session/s1", "/debug/trace/session/s1"} {
				code, body := get(path)
				var spans []server.Span
				if err := json.Unmarshal(body, &spans); code != http.StatusOK || err != nil {
					t.Fatalf("%s: %d %s", path, code, body)
				}
				if shown := len(spans) == 5; shown != tc.shown || (!tc.shown && len(spans) != 0) {
					t.Errorf("%s: %d spans, want shown=%v", path, len(spans), tc.shown)
				}
			}
			for _, path := range []string{"/dev/apps/app/debug/trace/" + evs[0].ID, "/debug/trace/" + evs[0].ID} {
				code, body := get(path)
				if found := code == http.StatusOK && strings.Contains(string(body), evs[0].ID); found != tc.shown {
					t.Errorf("%s: %d %s, want found=%v", path, code, body, tc.shown)
				}
			}
		})
	}
}
