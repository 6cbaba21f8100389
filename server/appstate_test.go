package server_test

import (
	"errors"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/loomkit/loom/eval"
	"github.com/loomkit/loom/internal/evaljson"
	"github.com/loomkit/loom/server"
)

// appStateWrites are the requests through which a client's state enters a
// session, each writing the app-scoped key app:banner as alice.
var appStateWrites = []struct{ name, method, path, body string }{
	{"create", "POST", "/apps/demo/users/alice/sessions", `{"sessionId":"c1","state":{"app:banner":"alice was here","k":1}}`},
	{"create legacy", "POST", "/apps/demo/users/alice/sessions/c2", `{"app:banner":"alice was here"}`},
	{"create with history", "POST", "/apps/demo/users/alice/sessions", `{"sessionId":"c3","events":[{"author":"user","content":{"role":"user","parts":[{"text":"hi"}]},"actions":{"stateDelta":{"app:banner":"alice was here"}}}]}`},
	{"patch", "PATCH", "/apps/demo/users/alice/sessions/s1", `{"stateDelta":{"app:banner":"alice was here"}}`},
	{"run", "POST", "/run", `{"appName":"demo","userId":"alice","sessionId":"s1","stateDelta":{"app:banner":"alice was here"},"newMessage":{"role":"user","parts":[{"text":"hello"}]}}`},
	{"run_sse", "POST", "/run_sse", `{"appName":"demo","userId":"alice","sessionId":"s1","stateDelta":{"app:banner":"alice was here"},"newMessage":{"role":"user","parts":[{"text":"hello"}]}}`},
	{"eval set", "POST", "/apps/demo/eval-sets", `{"evalSet":{"evalSetId":"x","evalCases":[` + appStateCase + `]}}`},
	{"eval case", "PUT", "/apps/demo/eval-sets/mine/eval-cases/c", appStateCase},
	{"eval case legacy", "PUT", "/apps/demo/eval_sets/mine/evals/c", appStateCase},
}

const appStateCase = `{"evalId":"c","conversation":[{"invocationId":"i","userContent":{"role":"user","parts":[{"text":"hello"}]}}],` +
	`"sessionInput":{"appName":"demo","userId":"alice","state":{"app:banner":"alice was here"}}}`

// prepareAppState gives alice a session s1 and an eval set "mine" without
// app-scoped state, for the requests of appStateWrites.
func prepareAppState(t *testing.T, f *fixture, auth []string) {
	t.Helper()
	if w := f.do(t, "POST", "/apps/demo/users/alice/sessions", `{"sessionId":"s1"}`, auth...); w.Code != 200 {
		t.Fatalf("create s1: %d %s", w.Code, w.Body)
	}
	plain := strings.Replace(appStateCase, `"app:banner"`, `"banner"`, 1)
	if w := f.do(t, "POST", "/apps/demo/eval-sets", `{"evalSet":{"evalSetId":"mine","evalCases":[`+plain+`]}}`, auth...); w.Code != 200 {
		t.Fatalf("create set mine: %d %s", w.Code, w.Body)
	}
}

// TestAppStateWritesNeedAuthorization checks that with Config.Authenticate
// and no Config.AuthorizeAppState a client cannot write app: state, which
// every user of the app reads, through any route that takes state (403,
// nothing written), while the same requests without app: keys succeed;
// that a stored eval set holding app: state is not run; and that bob does
// not see alice's banner.
func TestAppStateWritesNeedAuthorization(t *testing.T) {
	store := eval.NewDirStore(t.TempDir())
	f := newFixture(t, server.Config{Authenticate: bearer, Evals: store})
	alice := []string{"Authorization", "Bearer alice-token"}
	prepareAppState(t, f, alice)
	for _, tc := range appStateWrites {
		w := f.do(t, tc.method, tc.path, tc.body, alice...)
		if w.Code != http.StatusForbidden || !strings.Contains(w.Body.String(), "app:banner") {
			t.Errorf("%s: %d %.300s, want 403 naming app:banner", tc.name, w.Code, w.Body)
		}
		plain := strings.ReplaceAll(tc.body, `"app:banner"`, `"banner"`)
		if w := f.do(t, tc.method, tc.path, plain, alice...); w.Code != 200 {
			t.Errorf("%s without app: keys: %d %.300s, want 200", tc.name, w.Code, w.Body)
		}
	}
	// A set stored with app: state (before the check, or straight to the
	// store) is not run either.
	var c eval.Case
	if err := evaljson.Decode([]byte(strings.Replace(appStateCase, `"evalId":"c"`, `"evalId":"d"`, 1)), &c); err != nil {
		t.Fatal(err)
	}
	ids, err := store.ListSets(t.Context(), "demo")
	if err != nil {
		t.Fatal(err)
	}
	i := slices.IndexFunc(ids, func(id string) bool { return strings.HasSuffix(id, "_mine") })
	if i < 0 {
		t.Fatalf("no stored set mine among %v", ids)
	}
	if err := eval.AddCase(t.Context(), store, "demo", ids[i], &c); err != nil {
		t.Fatal(err)
	}
	w := f.do(t, "POST", "/apps/demo/eval-sets/mine/run", `{"evalMetrics":[{"metricName":"response_match_score","threshold":0.1}]}`, alice...)
	if w.Code != http.StatusForbidden {
		t.Errorf("run of a stored set with app: state: %d %.300s, want 403", w.Code, w.Body)
	}
	if w := f.do(t, "POST", "/apps/demo/users/bob/sessions", `{"sessionId":"b1"}`, "Authorization", "Bearer bob-token"); w.Code != 200 || strings.Contains(w.Body.String(), "alice was here") {
		t.Errorf("bob's new session: %d %s; alice's app: state must not be in it", w.Code, w.Body)
	}
}

// TestAuthorizeAppState checks that Config.AuthorizeAppState decides on
// every app: write: it gets the acting user and the app: keys (sorted),
// its error is answered 403 with its text, and a nil error lets the write
// through, so that bob then reads the banner. Without Authenticate the
// hook is consulted too, and without either app: writes are allowed, as
// in ADK.
func TestAuthorizeAppState(t *testing.T) {
	var mu sync.Mutex
	var calls []string
	hook := func(r *http.Request, user string, keys []string) error {
		mu.Lock()
		calls = append(calls, user+" "+strings.Join(keys, ","))
		mu.Unlock()
		if user != "alice" {
			return errors.New("only alice writes the banner")
		}
		return nil
	}
	f := newFixture(t, server.Config{Authenticate: bearer, Evals: eval.NewDirStore(t.TempDir()), AuthorizeAppState: hook})
	alice := []string{"Authorization", "Bearer alice-token"}
	prepareAppState(t, f, alice)
	for _, tc := range appStateWrites {
		if w := f.do(t, tc.method, tc.path, tc.body, alice...); w.Code != 200 {
			t.Errorf("%s allowed by the hook: %d %.300s, want 200", tc.name, w.Code, w.Body)
		}
	}
	if w := f.do(t, "POST", "/apps/demo/eval-sets/mine/run", `{"evalMetrics":[{"metricName":"response_match_score","threshold":0.1}]}`, alice...); w.Code != 200 {
		t.Errorf("run of a set with app: state allowed by the hook: %d %.300s", w.Code, w.Body)
	}
	mu.Lock()
	if len(calls) == 0 || slices.ContainsFunc(calls, func(c string) bool { return c != "alice app:banner" }) {
		t.Errorf("hook calls %q, want only %q", calls, "alice app:banner")
	}
	mu.Unlock()
	bob := []string{"Authorization", "Bearer bob-token"}
	w := f.do(t, "POST", "/apps/demo/users/bob/sessions", `{"sessionId":"b1","state":{"app:z":1,"app:a":2}}`, bob...)
	if w.Code != http.StatusForbidden || !strings.Contains(w.Body.String(), "only alice writes the banner") {
		t.Errorf("bob refused by the hook: %d %s, want 403 with the hook's text", w.Code, w.Body)
	}
	mu.Lock()
	if last := calls[len(calls)-1]; last != "bob app:a,app:z" {
		t.Errorf("last hook call %q, want %q", last, "bob app:a,app:z")
	}
	mu.Unlock()
	if w := f.do(t, "POST", "/apps/demo/users/bob/sessions", `{"sessionId":"b2"}`, bob...); !strings.Contains(w.Body.String(), "alice was here") {
		t.Errorf("bob does not read the banner alice was allowed to write: %s", w.Body)
	}

	g := newFixture(t, server.Config{AuthorizeAppState: hook})
	if w := g.do(t, "POST", "/apps/demo/users/bob/sessions", `{"state":{"app:banner":1}}`); w.Code != http.StatusForbidden {
		t.Errorf("hook without Authenticate: %d %s, want 403", w.Code, w.Body)
	}
	h := newFixture(t, server.Config{})
	if w := h.do(t, "POST", "/apps/demo/users/bob/sessions", `{"state":{"app:banner":1}}`); w.Code != 200 {
		t.Errorf("app: state without Authenticate or hook: %d %s, want 200", w.Code, w.Body)
	}
}
