package server

import (
	"testing"

	"github.com/loomkit/loom/eval"
	"github.com/loomkit/loom/eval/evaltest"
)

// TestConformanceUserEvals runs the eval store suite on one user's view
// of a store shared with another user, who holds sets and results of the
// same ids that the view must not show.
func TestConformanceUserEvals(t *testing.T) {
	evaltest.TestStore(t, func(t *testing.T) eval.Store {
		st := eval.NewDirStore(t.TempDir())
		other := newUserEvals(st, "bob")
		for _, app := range []string{"app", "other"} {
			for _, id := range []string{"smoke", "another"} {
				if err := other.CreateSet(t.Context(), app, &eval.Set{EvalSetID: id}); err != nil {
					t.Fatal(err)
				}
			}
			for _, id := range []string{"app_set_1", "r", "r0"} {
				if err := other.SaveResult(t.Context(), app, &eval.SetResult{EvalSetResultID: id, EvalSetID: "x"}); err != nil {
					t.Fatal(err)
				}
			}
		}
		return newUserEvals(st, "alice")
	})
}
