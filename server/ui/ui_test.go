package ui_test

import (
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/loomkit/loom/server/ui"
)

func get(t *testing.T, h http.Handler, method, path string) *http.Response {
	t.Helper()
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(method, path, nil))
	return rec.Result()
}

func body(t *testing.T, r *http.Response) string {
	t.Helper()
	b, err := io.ReadAll(r.Body)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestServesFiles(t *testing.T) {
	api := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { fmt.Fprint(w, "api:"+r.URL.Path) })
	h := ui.Wrap(api)
	for _, tc := range []struct {
		path, contentType, contains string
	}{
		{"/dev-ui/", "text/html", `<script type="module" src="app.js">`},
		{"/dev-ui/app.js", "text/javascript", "import { Client"},
		{"/dev-ui/api.js", "text/javascript", "/run_sse"},
		{"/dev-ui/style.css", "text/css", ":root"},
		{"/dev-ui/favicon.svg", "image/svg+xml", "<svg"},
	} {
		r := get(t, h, http.MethodGet, tc.path)
		b := body(t, r)
		if r.StatusCode != http.StatusOK || !strings.HasPrefix(r.Header.Get("Content-Type"), tc.contentType) || !strings.Contains(b, tc.contains) {
			t.Errorf("GET %s: %d %s, body has %q: %v", tc.path, r.StatusCode, r.Header.Get("Content-Type"), tc.contains, strings.Contains(b, tc.contains))
		}
		if r.Header.Get("Cache-Control") != "no-cache" {
			t.Errorf("GET %s: Cache-Control = %q", tc.path, r.Header.Get("Cache-Control"))
		}
	}
}

func TestRuntimeConfig(t *testing.T) {
	r := get(t, ui.Handler(), http.MethodGet, "/dev-ui/assets/config/runtime-config.json")
	var cfg map[string]any
	if err := json.Unmarshal([]byte(body(t, r)), &cfg); err != nil {
		t.Fatal(err)
	}
	if v, ok := cfg["backendUrl"]; !ok || v != "" {
		t.Errorf("runtime config = %v, want backendUrl \"\"", cfg)
	}
}

func TestWrapRoutes(t *testing.T) {
	api := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { fmt.Fprint(w, "api:"+r.Method+" "+r.URL.Path) })
	h := ui.Wrap(api)
	for _, path := range []string{"/", "/dev-ui"} {
		r := get(t, h, http.MethodGet, path)
		if r.StatusCode != http.StatusFound || r.Header.Get("Location") != ui.Prefix {
			t.Errorf("GET %s: %d to %q, want a redirect to %s", path, r.StatusCode, r.Header.Get("Location"), ui.Prefix)
		}
	}
	for _, tc := range []struct{ method, path string }{
		{http.MethodGet, "/list-apps"},
		{http.MethodPost, "/run_sse"},
		{http.MethodPost, "/"},
		{http.MethodGet, "/apps/a/users/u/sessions"},
	} {
		if got := body(t, get(t, h, tc.method, tc.path)); got != "api:"+tc.method+" "+tc.path {
			t.Errorf("%s %s reached %q, want the API", tc.method, tc.path, got)
		}
	}
	if r := get(t, h, http.MethodPost, "/dev-ui/"); r.StatusCode != http.StatusMethodNotAllowed {
		t.Errorf("POST /dev-ui/: %d, want 405", r.StatusCode)
	}
	if r := get(t, h, http.MethodGet, "/dev-ui/missing.js"); r.StatusCode != http.StatusNotFound {
		t.Errorf("GET a missing file: %d, want 404", r.StatusCode)
	}
}

// TestNoInlineHTML guards the rule that the UI renders server data with
// textContent only, never innerHTML, so agent output cannot inject markup.
func TestNoInlineHTML(t *testing.T) {
	err := fs.WalkDir(ui.FS(), ".", func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(path, ".js") {
			return err
		}
		b, err := fs.ReadFile(ui.FS(), path)
		if err != nil {
			return err
		}
		for _, bad := range []string{"innerHTML", "outerHTML", "insertAdjacentHTML", "document.write"} {
			if strings.Contains(string(b), bad) {
				t.Errorf("%s uses %s", path, bad)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// Serve the dev UI next to an API handler: "/" redirects to the UI, which
// calls the API on the same origin.
func ExampleWrap() {
	api := http.NotFoundHandler() // in a real program: server.New(...)
	h := ui.Wrap(api)

	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/", nil))
	fmt.Println(rec.Code, rec.Header().Get("Location"))
	// Output: 302 /dev-ui/
}

// TestCallbackPage: the OAuth2 redirect route serves the page that hands
// the redirect URL to the UI, kept out of caches and referrers, whatever
// the query holds; only GET and HEAD. (CONFORMANCE T21)
func TestCallbackPage(t *testing.T) {
	h := ui.Wrap(http.NotFoundHandler())
	r := get(t, h, http.MethodGet, ui.CallbackPath+"?code=c&state=s")
	b := body(t, r)
	if r.StatusCode != http.StatusOK || !strings.HasPrefix(r.Header.Get("Content-Type"), "text/html") ||
		!strings.Contains(b, `src="../oauth2_callback.js"`) {
		t.Fatalf("GET %s: %d %s\n%s", ui.CallbackPath, r.StatusCode, r.Header.Get("Content-Type"), b)
	}
	if r.Header.Get("Cache-Control") != "no-store" || r.Header.Get("Referrer-Policy") != "no-referrer" {
		t.Errorf("Cache-Control %q, Referrer-Policy %q", r.Header.Get("Cache-Control"), r.Header.Get("Referrer-Policy"))
	}
	// The script it loads ("../" from the route's directory).
	s := get(t, h, http.MethodGet, "/dev-ui/oauth2_callback.js")
	if js := body(t, s); s.StatusCode != http.StatusOK || !strings.Contains(js, "authResponseUrl") || !strings.Contains(js, "window.location.origin") {
		t.Errorf("GET /dev-ui/oauth2_callback.js: %d", s.StatusCode)
	}
	if r := get(t, h, http.MethodPost, ui.CallbackPath); r.StatusCode != http.StatusMethodNotAllowed {
		t.Errorf("POST %s: %d, want 405", ui.CallbackPath, r.StatusCode)
	}
}
