// Package evaltest runs eval sets from Go tests: the counterpart of ADK's
// AgentEvaluator.evaluate under pytest. A test names an agent and eval set
// files; each case runs in a fresh session, and a case that misses a
// threshold fails the test with the expected and actual tool calls and
// responses side by side. [TestStore] and [TestResultStore] are the
// conformance suite of eval stores: every implementation runs it.
//
//	func TestEvals(t *testing.T) {
//		ag, _ := assistant.New(assistant.Offline())
//		evaltest.Check(t, ag, "testdata/weather.evalset.json")
//	}
package evaltest

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/loomkit/loom/agent"
	"github.com/loomkit/loom/eval"
	"github.com/loomkit/loom/model"
	"github.com/loomkit/loom/runner"
	"github.com/loomkit/loom/session"
	"github.com/loomkit/loom/session/memsession"
)

// Options configure [CheckWith].
type Options struct {
	// Agent is the agent under test; used when Runner is nil.
	Agent agent.Agent
	// Runner runs the app instead, with its own services and plugins.
	Runner *runner.Runner
	// Config gives the criteria. Nil means the test_config.json beside
	// each eval set file, or else [eval.DefaultConfig].
	Config *eval.Config
	// Judge judges LLM-judged metrics and plays simulated users.
	Judge model.LLM
	// NumRuns runs each case this many times (scores are averaged); zero
	// means 1.
	NumRuns int
}

// Check runs the eval set files against ag and fails t for every case that
// misses a threshold.
func Check(t testing.TB, ag agent.Agent, paths ...string) {
	t.Helper()
	CheckWith(t, Options{Agent: ag}, paths...)
}

// CheckWith is [Check] with options.
func CheckWith(t testing.TB, opts Options, paths ...string) {
	t.Helper()
	if len(paths) == 0 {
		t.Fatal("evaltest: no eval set files")
	}
	r := opts.Runner
	if r == nil {
		if opts.Agent == nil {
			t.Fatal("evaltest: Options.Agent or Options.Runner is required")
		}
		var err error
		r, err = runner.New(runner.Config{AppName: opts.Agent.Name(), Agent: opts.Agent, Sessions: session.NewService(memsession.New(), nil)})
		if err != nil {
			t.Fatalf("evaltest: %v", err)
		}
	}
	for _, path := range paths {
		set, err := eval.ReadSetFile(path)
		if err != nil {
			t.Fatalf("evaltest: %v", err)
		}
		cfg := opts.Config
		if cfg == nil {
			cfg = eval.DefaultConfig()
			beside := filepath.Join(filepath.Dir(path), "test_config.json")
			if _, err := os.Stat(beside); err == nil {
				if cfg, err = eval.ReadConfig(beside); err != nil {
					t.Fatalf("evaltest: %v", err)
				}
			}
		}
		rep, err := eval.Run(context.Background(), set, eval.Options{
			Runner: r, Metrics: cfg.Metrics(), Judge: opts.Judge, NumRuns: opts.NumRuns, Simulator: cfg.UserSimulatorConfig,
		})
		if err != nil {
			t.Fatalf("evaltest: %s: %v", path, err)
		}
		for _, c := range rep.Cases {
			if c.Status != eval.Passed {
				t.Errorf("%s", Explain(path, c))
			}
		}
	}
}

// Explain describes why a case did not pass: its metric scores against
// their thresholds, run errors, and for each invocation of the first
// failing run the expected and actual tool calls and responses.
func Explain(path string, c *eval.CaseSummary) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s: eval case %s %s\n", path, c.EvalID, c.Status)
	for _, m := range c.Metrics {
		score := "not evaluated"
		if m.Score != nil {
			score = fmt.Sprintf("%.3f", *m.Score)
		}
		fmt.Fprintf(&b, "  %s: %s (threshold %.3f) %s\n", m.Name, score, m.Threshold, m.Status)
	}
	for _, err := range c.Errs {
		fmt.Fprintf(&b, "  error: %v\n", err)
	}
	for i, run := range c.Runs {
		if run.FinalEvalStatus == eval.Passed {
			continue
		}
		fmt.Fprintf(&b, "  run %d (- expected, + actual):\n", i+1)
		for j, per := range run.EvalMetricResultPerInvocation {
			fmt.Fprintf(&b, "  invocation %d\n", j+1)
			for _, line := range strings.Split(strings.TrimRight(eval.Diff(per.ExpectedInvocation, per.ActualInvocation), "\n"), "\n") {
				fmt.Fprintf(&b, "  %s\n", line)
			}
		}
		break
	}
	return strings.TrimRight(b.String(), "\n")
}
