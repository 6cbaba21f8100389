package server_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"google.golang.org/genai"

	"github.com/loomkit/loom/eval"
	"github.com/loomkit/loom/internal/evaljson"
	"github.com/loomkit/loom/server"
)

const evalMetrics = `{"evalMetrics":[{"metricName":"response_match_score","threshold":0.1}]}`

// evalCases returns n cases saying text, with ids c0, c1, ...
func evalCases(n int, text string) []*eval.Case {
	var out []*eval.Case
	for i := range n {
		out = append(out, &eval.Case{EvalID: fmt.Sprintf("c%d", i), Conversation: []*eval.Invocation{
			{InvocationID: "i", UserContent: genai.NewContentFromText(text, genai.RoleUser)}}})
	}
	return out
}

func caseJSON(t *testing.T, cases []*eval.Case) string {
	t.Helper()
	b, err := evaljson.EncodeCamel(cases)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestEvalCaseLimits checks Config.EvalLimits.MaxSetCases and MaxRunCases:
// a set of more cases than the limit is refused with 400 when it is
// created and when a case is added to it, and a run of more cases than a
// run may hold (a set stored straight to the store) is refused with 400
// unless evalCaseIds picks few enough.
func TestEvalCaseLimits(t *testing.T) {
	store := eval.NewDirStore(t.TempDir())
	f := newFixture(t, server.Config{Evals: store, EvalLimits: server.EvalLimits{MaxSetCases: 3, MaxRunCases: 2}})
	w := f.do(t, "POST", "/apps/demo/eval-sets", `{"evalSet":{"evalSetId":"big","evalCases":`+caseJSON(t, evalCases(4, "hello"))+`}}`)
	if w.Code != http.StatusBadRequest || !strings.Contains(w.Body.String(), "at most 3 cases") {
		t.Errorf("a set of 4 cases: %d %s, want 400 saying at most 3", w.Code, w.Body)
	}
	if w := f.do(t, "POST", "/apps/demo/eval-sets", `{"evalSet":{"evalSetId":"full","evalCases":`+caseJSON(t, evalCases(3, "hello"))+`}}`); w.Code != 200 {
		t.Fatalf("a set of 3 cases: %d %s", w.Code, w.Body)
	}
	mustCreate(t, f, "s1")
	f.do(t, "POST", "/run", runBody("s1", "hello", false))
	w = f.do(t, "POST", "/apps/demo/eval_sets/full/add_session", `{"evalId":"more","sessionId":"s1","userId":"u1"}`)
	if w.Code != http.StatusBadRequest || !strings.Contains(w.Body.String(), "at most 3 cases") {
		t.Errorf("a 4th case added: %d %s, want 400", w.Code, w.Body)
	}
	if set, err := store.GetSet(t.Context(), "demo", "full"); err != nil || len(set.EvalCases) != 3 {
		t.Errorf("set full after the refused add: %v, %v", set, err)
	}
	w = f.do(t, "POST", "/apps/demo/eval-sets/full/run", evalMetrics)
	if w.Code != http.StatusBadRequest || !strings.Contains(w.Body.String(), "evalCaseIds") {
		t.Errorf("a run of 3 cases with 2 per run: %d %s, want 400 pointing at evalCaseIds", w.Code, w.Body)
	}
	w = f.do(t, "POST", "/apps/demo/eval-sets/full/run", `{"evalCaseIds":["c0","c2"],`+evalMetrics[1:])
	if w.Code != 200 || strings.Count(w.Body.String(), `"evalId"`) != 2 {
		t.Errorf("a run of 2 chosen cases: %d %s", w.Code, w.Body)
	}
}

// TestEvalRunsPerUser checks the run slots: under Authenticate each user
// has EvalLimits.RunsPerUser runs at once (a second run of alice's while
// her first goes on gets 429) while another user's run proceeds, and the
// server as a whole does at most EvalLimits.Runs.
func TestEvalRunsPerUser(t *testing.T) {
	store := eval.NewDirStore(t.TempDir())
	f := newFixture(t, server.Config{Authenticate: bearer, Evals: store, EvalLimits: server.EvalLimits{Runs: 2}})
	for _, u := range []string{"alice", "bob", "carol"} {
		set := `{"evalSet":{"evalSetId":"slow","evalCases":` + caseJSON(t, evalCases(1, "wait")) + `}}`
		if w := f.do(t, "POST", "/apps/demo/eval-sets", set, "Authorization", "Bearer "+u+"-token"); w.Code != 200 {
			t.Fatalf("%s creates a set: %d %s", u, w.Code, w.Body)
		}
	}
	run := func(ctx context.Context, user string) *httptest.ResponseRecorder {
		req := httptest.NewRequest("POST", "/apps/demo/eval-sets/slow/run", strings.NewReader(evalMetrics)).WithContext(ctx)
		req.Header.Set("Authorization", "Bearer "+user+"-token")
		w := httptest.NewRecorder()
		f.srv.ServeHTTP(w, req)
		return w
	}
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	started := func(who string) {
		t.Helper()
		select {
		case <-f.started:
		case <-time.After(10 * time.Second):
			t.Fatalf("%s's eval run did not start", who)
		}
	}
	wg.Go(func() { run(ctx, "alice") })
	started("alice")
	quick, stop := context.WithTimeout(context.Background(), 5*time.Second)
	defer stop()
	if w := run(quick, "alice"); w.Code != http.StatusTooManyRequests || !strings.Contains(w.Body.String(), "Your") {
		t.Errorf("alice's second run: %d %s, want 429 about her own runs", w.Code, w.Body)
	}
	wg.Go(func() { run(ctx, "bob") })
	started("bob")
	if w := run(quick, "carol"); w.Code != http.StatusTooManyRequests {
		t.Errorf("a third run on a server of 2: %d %s, want 429", w.Code, w.Body)
	}
	cancel()
	wg.Wait()
}

// TestEvalRunDeletesItsSessions checks that the sessions an eval run
// creates are deleted once its result is saved, and kept when the request
// asks with keepSessions (CONFORMANCE Q6).
func TestEvalRunDeletesItsSessions(t *testing.T) {
	store := eval.NewDirStore(t.TempDir())
	f := newFixture(t, server.Config{Evals: store})
	if err := store.CreateSet(t.Context(), "demo", &eval.Set{EvalSetID: "smoke", EvalCases: evalCases(3, "hello")}); err != nil {
		t.Fatal(err)
	}
	count := func() int {
		res, err := f.runner.Sessions().List(t.Context(), "demo", eval.DefaultUserID, nil)
		if err != nil {
			t.Fatal(err)
		}
		return len(res.Sessions)
	}
	if w := f.do(t, "POST", "/apps/demo/eval-sets/smoke/run", evalMetrics); w.Code != 200 {
		t.Fatalf("run: %d %s", w.Code, w.Body)
	}
	if n := count(); n != 0 {
		t.Errorf("%d eval sessions left after a run, want 0", n)
	}
	ids, err := store.ListResults(t.Context(), "demo")
	if err != nil || len(ids) != 1 {
		t.Fatalf("results %v, %v", ids, err)
	}
	res, err := store.GetResult(t.Context(), "demo", ids[0])
	if err != nil {
		t.Fatal(err)
	}
	if d := res.EvalCaseResults[0].SessionDetails; !strings.Contains(string(d), "hello") {
		t.Errorf("the saved result lost the session's details: %.200s", d)
	}
	if w := f.do(t, "POST", "/apps/demo/eval-sets/smoke/run", `{"keepSessions":true,`+evalMetrics[1:]); w.Code != 200 {
		t.Fatalf("run keeping sessions: %d %s", w.Code, w.Body)
	}
	if n := count(); n != 3 {
		t.Errorf("%d eval sessions kept, want 3", n)
	}
}

// TestEvalResultSizeBounded checks EvalLimits.MaxResultBytes: a result
// over the bound is saved without the cases' session details, and one
// still over it is refused with 413 and not saved.
func TestEvalResultSizeBounded(t *testing.T) {
	store := eval.NewDirStore(t.TempDir())
	long := strings.Repeat("word ", 400) // the agent echoes it: 2 KB a session
	if err := store.CreateSet(t.Context(), "demo", &eval.Set{EvalSetID: "smoke", EvalCases: evalCases(4, long)}); err != nil {
		t.Fatal(err)
	}
	f := newFixture(t, server.Config{Evals: store, EvalLimits: server.EvalLimits{MaxResultBytes: 32 << 10}})
	if w := f.do(t, "POST", "/apps/demo/eval-sets/smoke/run", evalMetrics); w.Code != 200 {
		t.Fatalf("run: %d %.300s", w.Code, w.Body)
	}
	ids, _ := store.ListResults(t.Context(), "demo")
	if len(ids) != 1 {
		t.Fatalf("results %v", ids)
	}
	res, err := store.GetResult(t.Context(), "demo", ids[0])
	if err != nil {
		t.Fatal(err)
	}
	b, _ := evaljson.EncodeCamel(res)
	if len(b) > 32<<10 || len(res.EvalCaseResults) != 4 {
		t.Errorf("saved result: %d bytes, %d cases; want at most 32 KiB and 4 cases", len(b), len(res.EvalCaseResults))
	}
	g := newFixture(t, server.Config{Evals: store, EvalLimits: server.EvalLimits{MaxResultBytes: 1 << 10}})
	if w := g.do(t, "POST", "/apps/demo/eval-sets/smoke/run", evalMetrics); w.Code != http.StatusRequestEntityTooLarge {
		t.Errorf("a result over the bound without details: %d %.300s, want 413", w.Code, w.Body)
	}
	if ids, _ := store.ListResults(t.Context(), "demo"); len(ids) != 1 {
		t.Errorf("results after the refused run: %v", ids)
	}
}

// TestEvalRunStreamsProgress checks the streamed form of the run routes:
// with Accept: text/event-stream the answer is a stream of "progress"
// events, one per case run, then a "result" event holding what the JSON
// form answers; the result is saved as usual.
func TestEvalRunStreamsProgress(t *testing.T) {
	store := eval.NewDirStore(t.TempDir())
	f := newFixture(t, server.Config{Evals: store})
	if err := store.CreateSet(t.Context(), "demo", &eval.Set{EvalSetID: "smoke", EvalCases: evalCases(3, "hello")}); err != nil {
		t.Fatal(err)
	}
	plain := f.do(t, "POST", "/apps/demo/eval-sets/smoke/run", evalMetrics)
	w := f.do(t, "POST", "/apps/demo/eval-sets/smoke/run", evalMetrics, "Accept", "text/event-stream")
	if w.Code != 200 || !strings.HasPrefix(w.Header().Get("Content-Type"), "text/event-stream") {
		t.Fatalf("streamed run: %d %s %s", w.Code, w.Header().Get("Content-Type"), w.Body)
	}
	frames := sseFrames(w.Body.String())
	if len(frames) < 2 {
		t.Fatalf("frames %q", frames)
	}
	last := 0
	for _, fr := range frames[:len(frames)-1] {
		data, ok := strings.CutPrefix(fr, "event: progress\ndata: ")
		var p struct{ Done, Total int }
		if !ok || json.Unmarshal([]byte(data), &p) != nil || p.Total != 3 || p.Done <= last {
			t.Errorf("progress frame %q (after %d done)", fr, last)
		}
		last = p.Done
	}
	if last != 3 {
		t.Errorf("the last progress frame says %d done, want 3", last)
	}
	data, ok := strings.CutPrefix(frames[len(frames)-1], "event: result\ndata: ")
	if !ok {
		t.Fatalf("last frame %q is not the result", frames[len(frames)-1])
	}
	stamp := regexp.MustCompile(`"creationTimestamp":[0-9.e+]+`)
	norm := func(s string) string {
		s = evalSessionRE.ReplaceAllString(s, "<session>")
		s = evalInvRE.ReplaceAllString(s, "<invocation>")
		s = regexp.MustCompile(`"durationSeconds":[0-9.e+-]+`).ReplaceAllString(s, "<duration>")
		return stamp.ReplaceAllString(s, "<time>")
	}
	if norm(data) != norm(strings.TrimSpace(plain.Body.String())) {
		t.Errorf("streamed result\n%s\nJSON result\n%s", data, plain.Body)
	}
	if ids, _ := store.ListResults(t.Context(), "demo"); len(ids) != 2 {
		t.Errorf("results %v, want the two runs'", ids)
	}
	// An error before the run starts is a JSON answer still.
	if w := f.do(t, "POST", "/apps/demo/eval-sets/nope/run", evalMetrics, "Accept", "text/event-stream"); w.Code != http.StatusBadRequest {
		t.Errorf("a streamed run of a missing set: %d %s, want 400", w.Code, w.Body)
	}
}
