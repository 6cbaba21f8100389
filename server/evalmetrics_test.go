package server_test

import (
	"context"
	"strings"
	"testing"

	"github.com/loomkit/loom/eval"
	"github.com/loomkit/loom/server"
)

// alwaysOne scores every run 1.
type alwaysOne struct{}

func (alwaysOne) Score(context.Context, *eval.ScoreInput) (*eval.Score, error) {
	one := 1.0
	return &eval.Score{Overall: &one}, nil
}

// TestEvalMetricsRegistry checks that the evaluation routes compute the
// metrics of Config.EvalMetrics, custom ones included, and list them in
// metrics-info; and that without it a custom metric is refused with 400,
// saying it is code to register.
func TestEvalMetricsRegistry(t *testing.T) {
	setup := func(f *fixture) {
		f.do(t, "POST", "/apps/demo/users/u1/sessions", `{"sessionId":"s1"}`)
		f.do(t, "POST", "/run", runBody("s1", "hello", false))
		f.do(t, "POST", "/apps/demo/eval_sets/smoke", "")
		f.do(t, "POST", "/apps/demo/eval_sets/smoke/add_session", `{"evalId":"c","sessionId":"s1","userId":"u1"}`)
	}
	body := `{"evalMetrics":[{"metricName":"always_one","threshold":1,"customFunctionPath":"pkg.metrics.always_one"}]}`

	reg := eval.NewRegistry()
	reg.Register("always_one", func(*eval.Criterion, *eval.Env) (eval.Scorer, error) { return alwaysOne{}, nil })
	f := newFixture(t, server.Config{Evals: eval.NewDirStore(t.TempDir()), EvalMetrics: reg})
	setup(f)
	if w := f.do(t, "POST", "/apps/demo/eval_sets/smoke/run_eval", body); w.Code != 200 || !strings.Contains(w.Body.String(), `"finalEvalStatus":1`) {
		t.Errorf("registered custom metric: %d %s", w.Code, w.Body.String())
	}
	if w := f.do(t, "GET", "/apps/demo/metrics-info", ""); !strings.Contains(w.Body.String(), `"always_one"`) || !strings.Contains(w.Body.String(), `"safety_v1"`) {
		t.Errorf("metrics-info: %s", w.Body.String())
	}

	g := newFixture(t, server.Config{Evals: eval.NewDirStore(t.TempDir())})
	setup(g)
	if w := g.do(t, "POST", "/apps/demo/eval_sets/smoke/run_eval", body); w.Code != 400 || !strings.Contains(w.Body.String(), "pkg.metrics.always_one") {
		t.Errorf("unregistered custom metric: %d %s", w.Code, w.Body.String())
	}
}
