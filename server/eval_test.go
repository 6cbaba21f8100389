package server_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"google.golang.org/genai"

	"github.com/loomkit/loom/eval"
	"github.com/loomkit/loom/eval/sqleval"
	"github.com/loomkit/loom/internal/evaljson"
	"github.com/loomkit/loom/internal/sqldb/sqldbtest"
	"github.com/loomkit/loom/model"
	"github.com/loomkit/loom/server"
)

var (
	evalTimeRE    = regexp.MustCompile(`"(creationTimestamp|creation_timestamp)": [0-9.e+]+`)
	evalSessionRE = regexp.MustCompile(`___eval___session___[0-9a-f-]+`)
	evalResultRE  = regexp.MustCompile(`demo_smoke_[0-9]+\.[0-9]+`)
	evalInvRE     = regexp.MustCompile(`"e-[0-9a-f-]+"`)
	evalTookRE    = regexp.MustCompile(`"(durationSeconds|duration_seconds)": [0-9.e+-]+`)
)

// TestEvalRoutesGolden walks ADK's evaluation routes, older and newer
// forms, and compares status and normalized body with
// testdata/eval_routes.golden (-update rewrites it).
func TestEvalRoutesGolden(t *testing.T) {
	store := eval.NewDirStore(t.TempDir())
	f := newFixture(t, server.Config{Evals: store})
	metrics := `{"evalMetrics":[{"metricName":"response_match_score","threshold":0.8},{"metricName":"tool_trajectory_avg_score","threshold":1}]}`
	steps := []struct{ method, path, body string }{
		// A conversation to turn into an eval case.
		{"POST", "/apps/demo/users/u1/sessions", `{"sessionId":"s1"}`},
		{"POST", "/run", runBody("s1", "hello", false)},
		{"POST", "/run", runBody("s1", "how are you", false)},

		// The older forms, as ADK's web UI calls them.
		{"GET", "/apps/demo/eval_sets", ""},
		{"POST", "/apps/demo/eval_sets/smoke", ""},
		{"POST", "/apps/demo/eval_sets/smoke", ""},
		{"POST", "/apps/demo/eval_sets/bad-id!", ""},
		{"GET", "/apps/demo/eval_sets", ""},
		{"POST", "/apps/demo/eval_sets/smoke/add_session", `{"evalId":"greeting","sessionId":"s1","userId":"u1"}`},
		{"POST", "/apps/demo/eval_sets/smoke/add_session", `{"evalId":"greeting","sessionId":"s1","userId":"u1"}`},
		{"POST", "/apps/demo/eval_sets/smoke/add_session", `{"evalId":"other","sessionId":"missing","userId":"u1"}`},
		{"POST", "/apps/demo/eval_sets/nope/add_session", `{"evalId":"x","sessionId":"s1","userId":"u1"}`},
		{"GET", "/apps/demo/eval_sets/smoke/evals", ""},
		{"GET", "/apps/demo/eval_sets/smoke/evals/greeting", ""},
		{"GET", "/apps/demo/eval_sets/smoke/evals/missing", ""},
		{"POST", "/apps/demo/eval_sets/smoke/run_eval", `{"evalIds":["greeting"],` + metrics[1:]},
		{"POST", "/apps/demo/eval_sets/nope/run_eval", metrics},
		{"POST", "/apps/demo/eval_sets/smoke/run_eval", `{"evalMetrics":[{"metricName":"no_such_metric","threshold":1}]}`},
		{"GET", "/apps/demo/eval_results", ""},

		// Editing a case: the second turn now expects another answer.
		{"PUT", "/apps/demo/eval_sets/smoke/evals/greeting", `{"conversation":[{"userContent":{"parts":[{"text":"hello"}],"role":"user"},"finalResponse":{"parts":[{"text":"Hello!"}],"role":"model"}},{"userContent":{"parts":[{"text":"how are you"}],"role":"user"},"finalResponse":{"parts":[{"text":"Fine, thanks."}],"role":"model"}}],"sessionInput":{"appName":"demo","userId":"u1","state":{}}}`},
		{"PUT", "/apps/demo/eval_sets/smoke/evals/greeting", `{"evalId":"other","conversation":[]}`},

		// The newer forms.
		{"GET", "/apps/demo/eval-sets", ""},
		{"POST", "/apps/demo/eval-sets", `{"evalSet":{"evalSetId":"second","evalCases":[]}}`},
		{"POST", "/apps/demo/eval-sets", `{"evalSet":{"evalCases":[]}}`},
		{"GET", "/apps/demo/eval-sets/smoke/eval-cases/greeting", ""},
		{"POST", "/apps/demo/eval-sets/smoke/run", metrics},
		{"GET", "/apps/demo/metrics-info", ""},
		{"POST", "/apps/demo/eval-sets/second/add-session", `{"evalId":"copy","sessionId":"s1","userId":"u1"}`},
		{"DELETE", "/apps/demo/eval-sets/second/eval-cases/copy", ""},
		{"DELETE", "/apps/demo/eval-sets/second/eval-cases/copy", ""},

		// The /dev/ prefix serves the same routes.
		{"GET", "/dev/apps/demo/eval_sets", ""},
		{"GET", "/dev/apps/demo/eval_sets/smoke/evals", ""},
		{"GET", "/apps/nope/eval_sets", ""},
	}
	var out strings.Builder
	var resultID string
	for _, st := range steps {
		w := f.do(t, st.method, st.path, st.body)
		fmt.Fprintf(&out, "### %s %s\n", st.method, st.path)
		if st.body != "" {
			fmt.Fprintf(&out, "> %s\n", st.body)
		}
		fmt.Fprintf(&out, "%d %s\n", w.Code, w.Header().Get("Content-Type"))
		if w.Body.Len() > 0 {
			body := normalizeJSON(t, w.Body.Bytes(), true)
			if st.path == "/apps/demo/eval_results" {
				resultID = strings.Trim(strings.TrimSpace(strings.Trim(body, "[]\n ")), `"`)
			}
			body = evalTimeRE.ReplaceAllString(body, `"$1": "<time>"`)
			body = evalSessionRE.ReplaceAllString(body, "___eval___session___<id>")
			body = evalResultRE.ReplaceAllString(body, "demo_smoke_<time>")
			body = evalInvRE.ReplaceAllString(body, `"e-<id>"`)
			body = evalTookRE.ReplaceAllString(body, `"$1": "<duration>"`)
			out.WriteString(body + "\n")
		}
		out.WriteString("\n")
	}
	// The saved result reads back by its id, in both forms.
	for _, p := range []string{"/apps/demo/eval_results/", "/apps/demo/eval-results/"} {
		w := f.do(t, "GET", p+resultID, "")
		if w.Code != 200 || !strings.Contains(w.Body.String(), `"evalSetResultId":"`+resultID+`"`) || !strings.Contains(w.Body.String(), `"finalEvalStatus":1`) {
			t.Errorf("GET %s%s: %d %s", p, resultID, w.Code, w.Body.String())
		}
	}
	if w := f.do(t, "GET", "/apps/demo/eval_results/nope", ""); w.Code != 404 {
		t.Errorf("missing result: %d", w.Code)
	}
	// The set is stored in ADK's file form.
	set, err := eval.ReadSetFile(filepath.Join(store.Dir, "demo", "smoke.evalset.json"))
	if err != nil || len(set.EvalCases) != 1 || model.Text(set.EvalCases[0].Conversation[1].FinalResponse, "\n") != "Fine, thanks." {
		t.Errorf("stored set: %+v %v", set, err)
	}

	golden := filepath.Join("testdata", "eval_routes.golden")
	if *update {
		if err := os.WriteFile(golden, []byte(out.String()), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatalf("%v (run with -update to create it)", err)
	}
	if got := out.String(); got != string(want) {
		t.Errorf("responses differ from %s (run with -update after checking the change):\n%s", golden, lineDiff(string(want), got))
	}
}

func TestEvalRoutesNotConfigured(t *testing.T) {
	f := newFixture(t, server.Config{})
	w := f.do(t, "GET", "/apps/demo/eval_sets", "")
	if w.Code != 501 || !strings.Contains(w.Body.String(), "not configured") {
		t.Errorf("%d %s", w.Code, w.Body.String())
	}
}

// TestEvalSessionsNotListed checks that the sessions an eval run creates
// stay out of the session list, as in ADK: the run deletes them once
// scored (CONFORMANCE Q6).
func TestEvalSessionsNotListed(t *testing.T) {
	f := newFixture(t, server.Config{Evals: eval.NewDirStore(t.TempDir())})
	f.do(t, "POST", "/apps/demo/users/u1/sessions", `{"sessionId":"s1"}`)
	f.do(t, "POST", "/run", runBody("s1", "hello", false))
	f.do(t, "POST", "/apps/demo/eval_sets/smoke", "")
	f.do(t, "POST", "/apps/demo/eval_sets/smoke/add_session", `{"evalId":"c","sessionId":"s1","userId":"u1"}`)
	if w := f.do(t, "POST", "/apps/demo/eval_sets/smoke/run_eval", `{"evalMetrics":[{"metricName":"response_match_score","threshold":1}]}`); w.Code != 200 {
		t.Fatalf("run: %d %s", w.Code, w.Body.String())
	}
	w := f.do(t, "GET", "/apps/demo/users/u1/sessions", "")
	if strings.Contains(w.Body.String(), eval.SessionPrefix) || !strings.Contains(w.Body.String(), `"s1"`) {
		t.Errorf("listed sessions: %s", w.Body.String())
	}
}

// TestEvalRunsAreBounded checks that a server does at most
// EvalLimits.Runs eval runs at once: with 2, a third run request while two
// are in progress gets 429, and once they end a run is accepted again.
func TestEvalRunsAreBounded(t *testing.T) {
	store := eval.NewDirStore(t.TempDir())
	f := newFixture(t, server.Config{Evals: store, EvalLimits: server.EvalLimits{Runs: 2}})
	// The case's message makes the fixture's agent wait until the run's
	// request ends.
	setMessage := func(text string) *eval.Set {
		return &eval.Set{EvalSetID: "slow", EvalCases: []*eval.Case{{EvalID: "c", Conversation: []*eval.Invocation{
			{InvocationID: "i", UserContent: genai.NewContentFromText(text, genai.RoleUser)}}}}}
	}
	if err := store.CreateSet(context.Background(), "demo", setMessage("wait")); err != nil {
		t.Fatal(err)
	}
	run := func(ctx context.Context) int {
		req := httptest.NewRequest("POST", "/apps/demo/eval_sets/slow/run_eval", strings.NewReader(`{"evalMetrics":[{"metricName":"response_match_score","threshold":1}]}`)).WithContext(ctx)
		w := httptest.NewRecorder()
		f.srv.ServeHTTP(w, req)
		return w.Code
	}
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	for range 2 {
		wg.Go(func() { run(ctx) })
	}
	for range 2 {
		select {
		case <-f.started:
		case <-time.After(10 * time.Second):
			t.Fatal("the two eval runs did not start")
		}
	}
	third, stop := context.WithTimeout(context.Background(), 5*time.Second) // unbounded, it would wait too
	defer stop()
	if code := run(third); code != http.StatusTooManyRequests {
		t.Errorf("a third concurrent eval run: status %d, want 429", code)
	}
	cancel()
	wg.Wait()
	if err := store.UpdateSet(context.Background(), "demo", "slow", func(s *eval.Set) error {
		*s = *setMessage("hello")
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if code := run(context.Background()); code != 200 {
		t.Errorf("an eval run after the others ended: status %d, want 200", code)
	}
}

// TestEvalCasesActAsTheAuthenticatedUser checks that with
// Config.Authenticate an eval case runs as the caller: a case whose
// session input names another user is refused (403) when it is written and
// when a stored set holding it is run, and a case naming nobody runs as the
// caller rather than as eval.DefaultUserID.
func TestEvalCasesActAsTheAuthenticatedUser(t *testing.T) {
	store := eval.NewDirStore(t.TempDir())
	f := newFixture(t, server.Config{Authenticate: bearer, Evals: store})
	alice := []string{"Authorization", "Bearer alice-token"}
	bob := []string{"Authorization", "Bearer bob-token"}
	if w := f.do(t, "POST", "/apps/demo/users/bob/sessions", `{"sessionId":"b1","state":{"user:apiKey":"bob-secret"}}`, bob...); w.Code != 200 {
		t.Fatalf("bob creates a session: %d %s", w.Code, w.Body)
	}
	caseFor := func(id, user string) string {
		return `{"evalId":"` + id + `","conversation":[{"invocationId":"i","userContent":{"role":"user","parts":[{"text":"hello"}]}}],` +
			`"sessionInput":{"appName":"demo","userId":"` + user + `","state":{"user:role":"admin"}}}`
	}
	for _, tc := range []struct{ method, path, body string }{
		{"POST", "/apps/demo/eval-sets", `{"evalSet":{"evalSetId":"x","evalCases":[` + caseFor("c", "bob") + `]}}`},
		{"PUT", "/apps/demo/eval_sets/mine/evals/c", caseFor("c", "bob")},
		{"PUT", "/apps/demo/eval-sets/mine/eval-cases/c", caseFor("c", "bob")},
		{"POST", "/apps/demo/eval_sets/mine/add_session", `{"evalId":"d","sessionId":"b1","userId":"bob"}`},
	} {
		if tc.method == "PUT" {
			f.do(t, "POST", "/apps/demo/eval-sets", `{"evalSet":{"evalSetId":"mine","evalCases":[`+caseFor("c", "alice")+`]}}`, alice...)
		}
		if w := f.do(t, tc.method, tc.path, tc.body, alice...); w.Code != http.StatusForbidden {
			t.Errorf("alice: %s %s naming bob: %d %s, want 403", tc.method, tc.path, w.Code, w.Body)
		}
	}

	// A set of alice's stored before the check, with a case for bob, is not
	// run. (It is made here by writing to the store under the id alice's
	// set "old" is stored under.)
	if w := f.do(t, "POST", "/apps/demo/eval-sets", `{"evalSet":{"evalSetId":"old","evalCases":[`+caseFor("c", "alice")+`]}}`, alice...); w.Code != 200 {
		t.Fatalf("alice creates set old: %d %s", w.Code, w.Body)
	}
	var bobCase eval.Case
	if err := evaljson.Decode([]byte(caseFor("d", "bob")), &bobCase); err != nil {
		t.Fatal(err)
	}
	ids, err := store.ListSets(context.Background(), "demo")
	if err != nil {
		t.Fatal(err)
	}
	oldID := ""
	for _, id := range ids {
		if strings.HasSuffix(id, "_old") {
			oldID = id
		}
	}
	if err := eval.AddCase(context.Background(), store, "demo", oldID, &bobCase); err != nil {
		t.Fatalf("stored sets %v: %v", ids, err)
	}
	metrics := `"evalMetrics":[{"metricName":"response_match_score","threshold":0.1}]`
	for _, path := range []string{"/apps/demo/eval_sets/old/run_eval", "/apps/demo/eval-sets/old/run"} {
		if w := f.do(t, "POST", path, `{`+metrics+`}`, alice...); w.Code != http.StatusForbidden {
			t.Errorf("alice runs a set with a case for bob: %d %.300s, want 403", w.Code, w.Body)
		}
	}
	if w := f.do(t, "POST", "/apps/demo/users/bob/sessions", `{"sessionId":"b2"}`, bob...); strings.Contains(w.Body.String(), "admin") {
		t.Errorf("bob's user state was written by alice's eval run: %s", w.Body)
	}
	if w := f.do(t, "GET", "/apps/demo/eval-results", "", alice...); w.Body.String() != `{"evalResultIds":[]}` {
		t.Errorf("results after the refused runs: %s", w.Body)
	}

	// Alice's own case, and one naming nobody, run as alice.
	f.do(t, "POST", "/apps/demo/eval-sets", `{"evalSet":{"evalSetId":"own","evalCases":[`+caseFor("c", "alice")+`,`+strings.Replace(caseFor("d", ""), `"userId":"",`, "", 1)+`]}}`, alice...)
	w := f.do(t, "POST", "/apps/demo/eval-sets/own/run", `{`+metrics+`}`, alice...)
	if w.Code != 200 {
		t.Fatalf("alice runs her own set: %d %s", w.Code, w.Body)
	}
	if n := strings.Count(w.Body.String(), `"userId":"alice"`); n != 2 || strings.Contains(w.Body.String(), eval.DefaultUserID) {
		t.Errorf("alice's run: %d cases ran as alice, want 2: %s", n, w.Body)
	}

	// Without Authenticate the case's user is used as given.
	g := newFixture(t, server.Config{Evals: eval.NewDirStore(t.TempDir())})
	if w := g.do(t, "POST", "/apps/demo/eval-sets", `{"evalSet":{"evalSetId":"x","evalCases":[`+caseFor("c", "bob")+`]}}`); w.Code != 200 {
		t.Fatalf("create without Authenticate: %d %s", w.Code, w.Body)
	}
	if w := g.do(t, "POST", "/apps/demo/eval-sets/x/run", `{`+metrics+`}`); w.Code != 200 || !strings.Contains(w.Body.String(), `"userId":"bob"`) {
		t.Errorf("run without Authenticate: %d %s", w.Code, w.Body)
	}
}

// TestEvalRoutesRefuseNullInput checks that a case body that is not an
// object and a null metric get 422, as the other routes answer a body of
// the wrong shape.
func TestEvalRoutesRefuseNullInput(t *testing.T) {
	f := newFixture(t, server.Config{Evals: eval.NewDirStore(t.TempDir())})
	mustCreate(t, f, "s1")
	f.do(t, "POST", "/run", runBody("s1", "hello", false))
	f.do(t, "POST", "/apps/demo/eval_sets/smoke", "")
	if w := f.do(t, "POST", "/apps/demo/eval_sets/smoke/add_session", `{"evalId":"c","sessionId":"s1","userId":"u1"}`); w.Code != 200 {
		t.Fatalf("add_session: %d %s", w.Code, w.Body)
	}
	for _, tc := range []struct{ method, path, body string }{
		{"PUT", "/apps/demo/eval_sets/smoke/evals/c", `null`},
		{"PUT", "/apps/demo/eval-sets/smoke/eval-cases/c", ` null `},
		{"PUT", "/apps/demo/eval-sets/smoke/eval-cases/c", `[]`},
		{"POST", "/apps/demo/eval_sets/smoke/run_eval", `{"evalMetrics":[null]}`},
		{"POST", "/apps/demo/eval-sets/smoke/run", `{"evalMetrics":[{"metricName":"response_match_score"},null]}`},
	} {
		if w := f.do(t, tc.method, tc.path, tc.body); w.Code != http.StatusUnprocessableEntity {
			t.Errorf("%s %s %s: %d %s, want 422", tc.method, tc.path, tc.body, w.Code, w.Body)
		}
	}
}

// TestEvalRoutesBadIDsAre400 checks that an eval set or result id the
// store cannot use gets 400 on every route that names one, not 500, with
// and without Config.Authenticate; with it a set id leaves room for the
// user's prefix.
func TestEvalRoutesBadIDsAre400(t *testing.T) {
	t.Run("open", func(t *testing.T) { testEvalBadIDs(t, server.Config{}, nil, "bad-id!", strings.Repeat("x", 300)) })
	t.Run("authenticated", func(t *testing.T) {
		testEvalBadIDs(t, server.Config{Authenticate: bearer}, []string{"Authorization", "Bearer u1-token"},
			"bad-id!", strings.Repeat("x", 300), strings.Repeat("x", 175))
	})
}

func testEvalBadIDs(t *testing.T, cfg server.Config, auth []string, sets ...string) {
	cfg.Evals = eval.NewDirStore(t.TempDir())
	f := newFixture(t, cfg)
	if w := f.do(t, "POST", "/apps/demo/users/u1/sessions", `{"sessionId":"s1"}`, auth...); w.Code != http.StatusOK {
		t.Fatalf("create s1: %d %s", w.Code, w.Body)
	}
	for _, set := range sets {
		for _, tc := range []struct{ method, path, body string }{
			{"GET", "/apps/demo/eval_sets/" + set + "/evals", ""},
			{"GET", "/apps/demo/eval_sets/" + set + "/evals/c", ""},
			{"GET", "/apps/demo/eval-sets/" + set + "/eval-cases/c", ""},
			{"PUT", "/apps/demo/eval_sets/" + set + "/evals/c", `{"conversation":[]}`},
			{"PUT", "/apps/demo/eval-sets/" + set + "/eval-cases/c", `{"conversation":[]}`},
			{"DELETE", "/apps/demo/eval_sets/" + set + "/evals/c", ""},
			{"DELETE", "/apps/demo/eval-sets/" + set + "/eval-cases/c", ""},
			{"POST", "/apps/demo/eval_sets/" + set + "/add_session", `{"evalId":"d","sessionId":"s1","userId":"u1"}`},
			{"POST", "/apps/demo/eval-sets/" + set + "/add-session", `{"evalId":"d","sessionId":"s1","userId":"u1"}`},
			{"POST", "/apps/demo/eval_sets/" + set + "/run_eval", `{"evalMetrics":[]}`},
			{"POST", "/apps/demo/eval-sets/" + set + "/run", `{"evalMetrics":[]}`},
		} {
			if w := f.do(t, tc.method, tc.path, tc.body, auth...); w.Code != http.StatusBadRequest {
				t.Errorf("%s %.60s: %d %.100s, want 400", tc.method, tc.path, w.Code, w.Body)
			}
		}
		if w := f.do(t, "POST", "/apps/demo/eval_sets/"+set, "", auth...); w.Code != http.StatusBadRequest {
			t.Errorf("create %.60s: %d %.100s, want 400", set, w.Code, w.Body)
		}
	}
	if auth != nil {
		if w := f.do(t, "POST", "/apps/demo/eval_sets/"+strings.Repeat("x", 174), "", auth...); w.Code != http.StatusOK {
			t.Errorf("create a set with a 174-byte id: %d %.100s, want 200", w.Code, w.Body)
		}
	}
	for _, path := range []string{"/apps/demo/eval_results/a%5Cb", "/apps/demo/eval-results/a%5Cb"} {
		if w := f.do(t, "GET", path, "", auth...); w.Code != http.StatusBadRequest {
			t.Errorf("GET %s: %d %s, want 400", path, w.Code, w.Body)
		}
	}
}

// TestEvalSetsAndResultsArePerUser checks that with Config.Authenticate
// eval sets and results belong to the caller: alice and bob each have a
// set "smoke", each lists and reads only their own sets and results, and
// another user's set or result, by its id or by the id the store keeps it
// under, is answered as if it did not exist.
func TestEvalSetsAndResultsArePerUser(t *testing.T) {
	t.Run("DirStore", func(t *testing.T) { testEvalsPerUser(t, eval.NewDirStore(t.TempDir())) })
	t.Run("SQLResults", func(t *testing.T) {
		results, err := sqleval.Open(t.Context(), sqldbtest.SQLiteURL(t))
		if err != nil {
			t.Fatal(err)
		}
		defer results.Close()
		testEvalsPerUser(t, eval.WithResults(eval.NewDirStore(t.TempDir()), results))
	})
}

func testEvalsPerUser(t *testing.T, store eval.Store) {
	f := newFixture(t, server.Config{Authenticate: bearer, Evals: store})
	alice := []string{"Authorization", "Bearer alice-token"}
	bob := []string{"Authorization", "Bearer bob-token"}
	var bodies []string // every answer, to check no stored id shows
	do := func(who []string, method, path, body string) *httptest.ResponseRecorder {
		t.Helper()
		w := f.do(t, method, path, body, who...)
		bodies = append(bodies, w.Body.String())
		return w
	}
	must := func(who []string, method, path, body string) string {
		t.Helper()
		w := do(who, method, path, body)
		if w.Code != 200 {
			t.Fatalf("%s %s %s: %d %s", who[1], method, path, w.Code, w.Body)
		}
		return w.Body.String()
	}
	run := `{"appName":"demo","userId":"alice","sessionId":"a1","newMessage":{"role":"user","parts":[{"text":"hello"}]}}`
	must(alice, "POST", "/apps/demo/users/alice/sessions", `{"sessionId":"a1","state":{"user:secret":"alice-secret"}}`)
	must(alice, "POST", "/run", run)
	must(bob, "POST", "/apps/demo/users/bob/sessions", `{"sessionId":"b1"}`)

	// Both make a set "smoke": alice's from her session, bob's by value.
	must(alice, "POST", "/apps/demo/eval_sets/smoke", "")
	must(alice, "POST", "/apps/demo/eval_sets/smoke/add_session", `{"evalId":"greet","sessionId":"a1","userId":"alice"}`)
	bobCase := `{"evalId":"bobcase","conversation":[{"invocationId":"i","userContent":{"role":"user","parts":[{"text":"hi"}]}}]}`
	must(bob, "POST", "/apps/demo/eval-sets", `{"evalSet":{"evalSetId":"smoke","evalCases":[`+bobCase+`]}}`)
	if got := must(alice, "GET", "/apps/demo/eval_sets", ""); got != `["smoke"]` {
		t.Errorf("alice's sets: %s", got)
	}
	if got := must(bob, "GET", "/apps/demo/eval-sets", ""); got != `{"evalSetIds":["smoke"]}` {
		t.Errorf("bob's sets: %s", got)
	}
	if got := must(alice, "GET", "/apps/demo/eval_sets/smoke/evals", ""); got != `["greet"]` {
		t.Errorf("alice's cases: %s", got)
	}
	if got := must(bob, "GET", "/dev/apps/demo/eval_sets/smoke/evals", ""); got != `["bobcase"]` {
		t.Errorf("bob's cases: %s", got)
	}

	// Each runs their own set and sees only their own result.
	metrics := `{"evalMetrics":[{"metricName":"response_match_score","threshold":0.1}]}`
	if got := must(alice, "POST", "/apps/demo/eval_sets/smoke/run_eval", metrics); !strings.Contains(got, `"evalSetId":"smoke"`) || !strings.Contains(got, `"evalId":"greet"`) {
		t.Errorf("alice's run: %s", got)
	}
	if got := must(bob, "POST", "/apps/demo/eval-sets/smoke/run", metrics); !strings.Contains(got, `"evalSetId":"smoke"`) || !strings.Contains(got, `"evalId":"bobcase"`) {
		t.Errorf("bob's run: %s", got)
	}
	var aliceIDs, bobIDs []string
	if err := json.Unmarshal([]byte(must(alice, "GET", "/apps/demo/eval_results", "")), &aliceIDs); err != nil || len(aliceIDs) != 1 {
		t.Fatalf("alice's results: %v %v", aliceIDs, err)
	}
	var wrapped struct{ EvalResultIDs []string }
	if err := json.Unmarshal([]byte(must(bob, "GET", "/apps/demo/eval-results", "")), &wrapped); err != nil || len(wrapped.EvalResultIDs) != 1 {
		t.Fatalf("bob's results: %v %v", wrapped.EvalResultIDs, err)
	}
	bobIDs = wrapped.EvalResultIDs
	if aliceIDs[0] == bobIDs[0] {
		t.Fatalf("alice and bob got the same result id %s", aliceIDs[0])
	}
	for _, p := range []string{"/apps/demo/eval_results/", "/apps/demo/eval-results/"} {
		got := must(alice, "GET", p+aliceIDs[0], "")
		if !strings.Contains(got, `"evalSetResultId":"`+aliceIDs[0]+`"`) || !strings.Contains(got, `"evalSetId":"smoke"`) || !strings.Contains(got, `"evalId":"greet"`) {
			t.Errorf("alice reads her result: %.500s", got)
		}
		got = must(bob, "GET", p+bobIDs[0], "")
		if !strings.Contains(got, `"evalId":"bobcase"`) || strings.Contains(got, "greet") || strings.Contains(got, "alice-secret") {
			t.Errorf("bob reads his result: %.500s", got)
		}
		if w := do(bob, "GET", p+aliceIDs[0], ""); w.Code != http.StatusNotFound || strings.Contains(w.Body.String(), "alice-secret") {
			t.Errorf("bob reads alice's result: %d %.300s, want 404", w.Code, w.Body)
		}
	}

	// The store keeps each user's sets and results apart, under ids of its
	// own; those ids reach no client and name nothing for another user.
	ctx := context.Background()
	stored, err := store.ListSets(ctx, "demo")
	if err != nil || len(stored) != 2 || stored[0] == "smoke" || stored[1] == "smoke" {
		t.Fatalf("stored sets: %v %v", stored, err)
	}
	storedResults, err := store.ListResults(ctx, "demo")
	if err != nil || len(storedResults) != 2 {
		t.Fatalf("stored results: %v %v", storedResults, err)
	}
	var aliceStored, aliceStoredResult string
	for _, id := range stored {
		if s, err := store.GetSet(ctx, "demo", id); err == nil && s.Case("greet") != nil {
			aliceStored = id
		}
	}
	for _, id := range storedResults {
		if strings.HasSuffix(id, aliceIDs[0]) {
			aliceStoredResult = id
		}
	}
	if aliceStored == "" || aliceStoredResult == "" {
		t.Fatalf("alice's set and result not found among %v and %v", stored, storedResults)
	}

	// A private set of alice's: bob can neither read, change, extend, run
	// nor delete from it, by its id or by its stored id.
	must(alice, "POST", "/apps/demo/eval_sets/private", "")
	must(alice, "POST", "/apps/demo/eval-sets/private/add-session", `{"evalId":"greet","sessionId":"a1","userId":"alice"}`)
	storedPrivate := strings.TrimSuffix(aliceStored, "smoke") + "private"
	for _, set := range []string{"private", storedPrivate} {
		for _, tc := range []struct {
			method, path, body string
			code               int
		}{
			{"GET", "/apps/demo/eval_sets/" + set + "/evals", "", 404},
			{"GET", "/apps/demo/eval_sets/" + set + "/evals/greet", "", 404},
			{"GET", "/apps/demo/eval-sets/" + set + "/eval-cases/greet", "", 404},
			{"PUT", "/apps/demo/eval_sets/" + set + "/evals/greet", `{"conversation":[]}`, 404},
			{"PUT", "/apps/demo/eval-sets/" + set + "/eval-cases/greet", `{"conversation":[]}`, 404},
			{"DELETE", "/apps/demo/eval_sets/" + set + "/evals/greet", "", 404},
			{"DELETE", "/dev/apps/demo/eval-sets/" + set + "/eval-cases/greet", "", 404},
			{"POST", "/apps/demo/eval_sets/" + set + "/add_session", `{"evalId":"b","sessionId":"b1","userId":"bob"}`, 404},
			{"POST", "/apps/demo/eval-sets/" + set + "/add-session", `{"evalId":"b","sessionId":"b1","userId":"bob"}`, 404},
			// A run of a set that does not exist is 400, as in ADK.
			{"POST", "/apps/demo/eval_sets/" + set + "/run_eval", metrics, 400},
			{"POST", "/apps/demo/eval-sets/" + set + "/run", metrics, 400},
		} {
			send := do
			if set != "private" { // its answers may echo the id sent
				send = func(who []string, method, path, body string) *httptest.ResponseRecorder {
					return f.do(t, method, path, body, who...)
				}
			}
			if w := send(bob, tc.method, tc.path, tc.body); w.Code != tc.code || strings.Contains(w.Body.String(), "greet") {
				t.Errorf("bob: %s %.80s: %d %.200s, want %d", tc.method, tc.path, w.Code, w.Body, tc.code)
			}
		}
	}
	for _, p := range []string{"/apps/demo/eval_results/", "/apps/demo/eval-results/"} {
		if w := f.do(t, "GET", p+aliceStoredResult, "", bob...); w.Code != http.StatusNotFound {
			t.Errorf("bob reads alice's result by its stored id: %d %.300s, want 404", w.Code, w.Body)
		}
	}
	if got := must(alice, "GET", "/apps/demo/eval_sets/private/evals/greet", ""); !strings.Contains(got, `"evalId":"greet"`) || !strings.Contains(got, "hello") {
		t.Errorf("alice's private case after bob's tries: %s", got)
	}
	// Bob may have a set "private" too; it is his.
	must(bob, "POST", "/apps/demo/eval_sets/private", "")
	if got := must(bob, "GET", "/apps/demo/eval_sets/private/evals", ""); got != `[]` {
		t.Errorf("bob's own private set: %s", got)
	}
	if got := must(alice, "GET", "/apps/demo/eval_sets/private/evals", ""); got != `["greet"]` {
		t.Errorf("alice's private set after bob made his: %s", got)
	}

	for _, b := range bodies {
		for _, id := range stored {
			if prefix := strings.TrimSuffix(id, "smoke"); strings.Contains(b, prefix) {
				t.Errorf("an answer shows the stored prefix %s: %.300s", prefix, b)
			}
		}
	}
}
