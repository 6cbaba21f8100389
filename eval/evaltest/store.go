package evaltest

import (
	"bytes"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"

	"github.com/loomkit/loom/eval"
)

// TestResultStore is the conformance suite of [eval.ResultStore]: every
// implementation runs it from its tests. newStore returns an empty store
// for one test.
func TestResultStore(t *testing.T, newStore func(t *testing.T) eval.ResultStore) {
	t.Run("Q4RoundTrip", func(t *testing.T) { testQ4ResultRoundTrip(t, newStore(t)) })
	t.Run("Q4Missing", func(t *testing.T) { testQ4ResultMissing(t, newStore(t)) })
	t.Run("Q4Replace", func(t *testing.T) { testQ4ResultReplace(t, newStore(t)) })
	t.Run("Q4InvalidIDs", func(t *testing.T) { testQ4ResultInvalidIDs(t, newStore(t)) })
	t.Run("Q4Concurrent", func(t *testing.T) { testQ4ResultsConcurrent(t, newStore(t)) })
}

// TestStore is the conformance suite of [eval.Store]: the sets' part, and
// [TestResultStore] for the results' part. newStore returns an empty store
// for one test.
func TestStore(t *testing.T, newStore func(t *testing.T) eval.Store) {
	TestResultStore(t, func(t *testing.T) eval.ResultStore { return newStore(t) })
	t.Run("Q5CreateGet", func(t *testing.T) { testQ5CreateGet(t, newStore(t)) })
	t.Run("Q5CreateRefused", func(t *testing.T) { testQ5CreateRefused(t, newStore(t)) })
	t.Run("Q5Update", func(t *testing.T) { testQ5Update(t, newStore(t)) })
	t.Run("Q5ConcurrentUpdates", func(t *testing.T) { testQ5ConcurrentUpdates(t, newStore(t)) })
}

// result returns a result of one case with a score.
func result(id, setID string) *eval.SetResult {
	score, threshold := 0.75, 0.5
	return &eval.SetResult{
		EvalSetResultID: id, EvalSetResultName: id, EvalSetID: setID, CreationTimestamp: 1700000000.5,
		EvalCaseResults: []*eval.CaseResult{{
			EvalSetID: setID, EvalID: "case_1", FinalEvalStatus: eval.Passed, UserID: "u1", SessionID: "s1",
			OverallEvalMetricResults:      []*eval.MetricResult{{MetricName: eval.ResponseMatchMetric, Threshold: &threshold, Score: &score, EvalStatus: eval.Passed}},
			EvalMetricResultPerInvocation: []*eval.PerInvocation{},
		}},
	}
}

func encoded(t *testing.T, r *eval.SetResult) []byte {
	t.Helper()
	b, err := r.MarshalJSON()
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func testQ4ResultRoundTrip(t *testing.T, st eval.ResultStore) {
	ctx := t.Context()
	ids, err := st.ListResults(ctx, "app")
	if err != nil || ids == nil || len(ids) != 0 {
		t.Fatalf("results of an app without any: %#v, %v; want an empty list", ids, err)
	}
	for _, id := range []string{"app_set_2", "app_set_1"} {
		if err := st.SaveResult(ctx, "app", result(id, "set")); err != nil {
			t.Fatalf("save %s: %v", id, err)
		}
	}
	if err := st.SaveResult(ctx, "other", result("other_set_1", "set")); err != nil {
		t.Fatal(err)
	}
	ids, err = st.ListResults(ctx, "app")
	if err != nil || !slices.Equal(ids, []string{"app_set_1", "app_set_2"}) {
		t.Errorf("results of app: %v, %v; want [app_set_1 app_set_2]", ids, err)
	}
	got, err := st.GetResult(ctx, "app", "app_set_1")
	if err != nil {
		t.Fatal(err)
	}
	if want := encoded(t, result("app_set_1", "set")); !bytes.Equal(encoded(t, got), want) {
		t.Errorf("read back:\n%s\nwant\n%s", encoded(t, got), want)
	}
	if _, err := st.GetResult(ctx, "app", "other_set_1"); !errors.Is(err, eval.ErrNotFound) {
		t.Errorf("another app's result: %v, want ErrNotFound", err)
	}
}

func testQ4ResultMissing(t *testing.T, st eval.ResultStore) {
	_, err := st.GetResult(t.Context(), "app", "nope")
	if !errors.Is(err, eval.ErrNotFound) {
		t.Errorf("missing result: %v, want ErrNotFound", err)
	}
}

func testQ4ResultReplace(t *testing.T, st eval.ResultStore) {
	ctx := t.Context()
	if err := st.SaveResult(ctx, "app", result("r", "first")); err != nil {
		t.Fatal(err)
	}
	if err := st.SaveResult(ctx, "app", result("r", "second")); err != nil {
		t.Fatalf("saving under a stored id: %v", err)
	}
	got, err := st.GetResult(ctx, "app", "r")
	if err != nil || got.EvalSetID != "second" {
		t.Errorf("after a second save: %+v, %v; want the second result", got, err)
	}
	if ids, _ := st.ListResults(ctx, "app"); len(ids) != 1 {
		t.Errorf("results %v, want one", ids)
	}
}

func testQ4ResultInvalidIDs(t *testing.T, st eval.ResultStore) {
	ctx := t.Context()
	for _, app := range []string{"", "a/b", `a\b`, ".."} {
		if _, err := st.ListResults(ctx, app); !errors.Is(err, eval.ErrInvalidID) {
			t.Errorf("list of app %q: %v, want ErrInvalidID", app, err)
		}
		if err := st.SaveResult(ctx, app, result("r", "s")); !errors.Is(err, eval.ErrInvalidID) {
			t.Errorf("save in app %q: %v, want ErrInvalidID", app, err)
		}
	}
	for _, id := range []string{"a/b", `a\b`} {
		if _, err := st.GetResult(ctx, "app", id); !errors.Is(err, eval.ErrInvalidID) {
			t.Errorf("get result %q: %v, want ErrInvalidID", id, err)
		}
		if err := st.SaveResult(ctx, "app", result(id, "s")); !errors.Is(err, eval.ErrInvalidID) {
			t.Errorf("save result %q: %v, want ErrInvalidID", id, err)
		}
	}
	if ids, err := st.ListResults(ctx, "app"); err != nil || len(ids) != 0 {
		t.Errorf("refused saves stored %v (%v)", ids, err)
	}
}

func testQ4ResultsConcurrent(t *testing.T, st eval.ResultStore) {
	ctx := t.Context()
	const n = 8
	var wg sync.WaitGroup
	errs := make([]error, n)
	for i := range n {
		wg.Go(func() {
			errs[i] = st.SaveResult(ctx, "app", result(fmt.Sprintf("r%d", i), "s"))
			if errs[i] == nil {
				_, errs[i] = st.ListResults(ctx, "app")
			}
		})
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		t.Fatal(err)
	}
	if ids, err := st.ListResults(ctx, "app"); err != nil || len(ids) != n {
		t.Errorf("after %d concurrent saves: %v, %v", n, ids, err)
	}
}

func testQ5CreateGet(t *testing.T, st eval.Store) {
	ctx := t.Context()
	if ids, err := st.ListSets(ctx, "app"); err != nil || ids == nil || len(ids) != 0 {
		t.Fatalf("sets of an app without any: %#v, %v; want an empty list", ids, err)
	}
	s := &eval.Set{EvalSetID: "smoke"}
	if err := st.CreateSet(ctx, "app", s); err != nil {
		t.Fatal(err)
	}
	if s.CreationTimestamp == 0 || s.EvalCases == nil {
		t.Errorf("created set: time %v, cases %v; want both filled in", s.CreationTimestamp, s.EvalCases)
	}
	if err := st.CreateSet(ctx, "app", &eval.Set{EvalSetID: "another"}); err != nil {
		t.Fatal(err)
	}
	if ids, err := st.ListSets(ctx, "app"); err != nil || !slices.Equal(ids, []string{"another", "smoke"}) {
		t.Errorf("sets %v, %v; want [another smoke]", ids, err)
	}
	got, err := st.GetSet(ctx, "app", "smoke")
	if err != nil || got.EvalSetID != "smoke" || got.CreationTimestamp != s.CreationTimestamp || got.EvalCases == nil || len(got.EvalCases) != 0 {
		t.Errorf("read back %+v, %v", got, err)
	}
	if _, err := st.GetSet(ctx, "app", "nope"); !errors.Is(err, eval.ErrNotFound) {
		t.Errorf("missing set: %v, want ErrNotFound", err)
	}
	if _, err := st.GetSet(ctx, "other", "smoke"); !errors.Is(err, eval.ErrNotFound) {
		t.Errorf("another app's set: %v, want ErrNotFound", err)
	}
}

func testQ5CreateRefused(t *testing.T, st eval.Store) {
	ctx := t.Context()
	if err := st.CreateSet(ctx, "app", &eval.Set{EvalSetID: "smoke"}); err != nil {
		t.Fatal(err)
	}
	if err := st.CreateSet(ctx, "app", &eval.Set{EvalSetID: "smoke"}); !errors.Is(err, eval.ErrExists) {
		t.Errorf("second create: %v, want ErrExists", err)
	}
	for _, id := range []string{"", "bad-id!", "a/b", ".."} {
		if err := st.CreateSet(ctx, "app", &eval.Set{EvalSetID: id}); !errors.Is(err, eval.ErrInvalidID) {
			t.Errorf("create set %q: %v, want ErrInvalidID", id, err)
		}
		if _, err := st.GetSet(ctx, "app", id); !errors.Is(err, eval.ErrInvalidID) {
			t.Errorf("get set %q: %v, want ErrInvalidID", id, err)
		}
	}
	if err := st.CreateSet(ctx, "a/b", &eval.Set{EvalSetID: "smoke"}); !errors.Is(err, eval.ErrInvalidID) {
		t.Errorf("create in app a/b: %v, want ErrInvalidID", err)
	}
	if ids, err := st.ListSets(ctx, "app"); err != nil || !slices.Equal(ids, []string{"smoke"}) {
		t.Errorf("sets after refused creates: %v, %v", ids, err)
	}
}

func testQ5Update(t *testing.T, st eval.Store) {
	ctx := t.Context()
	if err := st.CreateSet(ctx, "app", &eval.Set{EvalSetID: "smoke"}); err != nil {
		t.Fatal(err)
	}
	c := &eval.Case{EvalID: "c1", Conversation: []*eval.Invocation{}}
	if err := eval.AddCase(ctx, st, "app", "smoke", c); err != nil {
		t.Fatal(err)
	}
	if err := eval.AddCase(ctx, st, "app", "smoke", &eval.Case{EvalID: "c1", Conversation: []*eval.Invocation{}}); !errors.Is(err, eval.ErrExists) {
		t.Errorf("adding a case twice: %v, want ErrExists", err)
	}
	boom := errors.New("boom")
	err := st.UpdateSet(ctx, "app", "smoke", func(s *eval.Set) error {
		if s.EvalSetID != "smoke" {
			t.Errorf("update sees set %q", s.EvalSetID)
		}
		s.EvalCases = nil
		return boom
	})
	if !errors.Is(err, boom) {
		t.Errorf("update failing: %v, want its error", err)
	}
	got, err := st.GetSet(ctx, "app", "smoke")
	if err != nil || len(got.EvalCases) != 1 || got.EvalCases[0].EvalID != "c1" {
		t.Errorf("after updates: %+v, %v; want the one case", got, err)
	}
	if err := st.UpdateSet(ctx, "app", "nope", func(*eval.Set) error { return nil }); !errors.Is(err, eval.ErrNotFound) {
		t.Errorf("update of a missing set: %v, want ErrNotFound", err)
	}
}

func testQ5ConcurrentUpdates(t *testing.T, st eval.Store) {
	ctx := t.Context()
	if err := st.CreateSet(ctx, "app", &eval.Set{EvalSetID: "smoke"}); err != nil {
		t.Fatal(err)
	}
	const n = 8
	var wg sync.WaitGroup
	errs := make([]error, n)
	for i := range n {
		wg.Go(func() {
			errs[i] = eval.AddCase(ctx, st, "app", "smoke", &eval.Case{EvalID: fmt.Sprintf("c%d", i), Conversation: []*eval.Invocation{}})
		})
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		t.Fatal(err)
	}
	got, err := st.GetSet(ctx, "app", "smoke")
	if err != nil || len(got.EvalCases) != n {
		t.Fatalf("after %d concurrent additions: %v; want every case", n, err)
	}
}
