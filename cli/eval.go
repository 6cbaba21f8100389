package cli

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"text/tabwriter"
	"time"

	"github.com/loomkit/loom/eval"
	"github.com/loomkit/loom/eval/sqleval"
	"github.com/loomkit/loom/internal/sqldb"
	"github.com/loomkit/loom/model"
)

// DefaultEvals is where eval sets served by web and api, and the results of
// every eval run, are kept: DIR/APP/ID.evalset.json and
// DIR/APP/eval_history/ID.evalset_result.json.
const DefaultEvals = "./.loom/evals"

// errEvalFailed reports an eval that ran but missed a threshold; the
// table has said which.
var errEvalFailed = errors.New("eval: some cases did not pass")

// evalCmd runs "loom eval".
func evalCmd(ctx context.Context, env Env, args []string, p Program) error {
	fs := newFlagSet("eval", "eval [flags] APP EVALSET... [flags]\n\nRuns the eval sets (ADK eval set files in every form adk eval reads: *.evalset.json, *.test.json, the old lists of cases or of turns; FILE:ID1,ID2 runs only those cases) against APP, prints a table of each case's metric scores and saves the result as ADK eval-result JSON under --evals (in the session database when --sessions names one other than the default). Exits with status 1 when a case misses a threshold. Sessions and artifacts default to memory:// here.", env)
	var o options
	o.register(fs)
	// An eval's sessions and artifacts are its own: in memory unless named.
	fs.Lookup("sessions").DefValue, fs.Lookup("artifacts").DefValue = "memory://", "memory://"
	o.sessions, o.artifacts = "memory://", "memory://"
	config := fs.String("config", "", "test_config.json or eval_config.json `file` with the criteria (default: tool_trajectory_avg_score 1.0, response_match_score 0.8, or a test_config.json beside the first eval set)")
	details := fs.Bool("print-details", false, "print each invocation's expected and actual response and tool calls")
	numRuns := fs.Int("num-runs", 1, "run each case `n` times; scores are averaged")
	parallel := fs.Int("parallel", 4, "run at most `n` cases at once")
	judge := fs.String("judge-model", "", "judge and user simulator model `name` for LLM-judged metrics and scenario cases (default: --model's)")
	evals := fs.String("evals", DefaultEvals, "`directory` where results are saved (unless --sessions names a database other than the default)")
	positional, err := parseInterspersed(fs, args)
	if err != nil {
		return err
	}
	if len(positional) < 2 {
		fmt.Fprintf(env.Stderr, "loom eval: name the application and at least one eval set file\n")
		fs.Usage()
		return errUsage
	}
	app, err := p.pickApp(positional[:1])
	if err != nil {
		fmt.Fprintf(env.Stderr, "loom eval: %v\n", err)
		fs.Usage()
		return errUsage
	}
	targets, err := readTargets(positional[1:])
	if err != nil {
		return err
	}
	cfg, err := evalConfig(*config, positional[1])
	if err != nil {
		return err
	}

	svc, runners, err := setup(ctx, env, &o, []App{app}, p.Registry)
	if err != nil {
		return err
	}
	defer svc.close()
	r := runners[0]

	opts := eval.Options{
		Runner:      r,
		Metrics:     cfg.Metrics(),
		Registry:    p.EvalMetrics,
		Parallelism: *parallel,
		NumRuns:     *numRuns,
		Simulator:   cfg.UserSimulatorConfig,
		Models:      cachedModels(env, o.modelTimeout),
	}
	judgeName := cmp.Or(*judge, o.model, defaultModel(env.Getenv))
	sets := make([]*eval.Set, len(targets))
	for i, t := range targets {
		sets[i] = t.set
	}
	if judgeName != "" && needsJudge(cfg, sets) {
		if opts.Judge, err = openModel(ctx, judgeName, env.Getenv, o.modelTimeout); err != nil {
			return fmt.Errorf("judge model %s: %w", judgeName, err)
		}
	}
	store, where, closeStore, err := evalStore(ctx, &o, *evals)
	if err != nil {
		return err
	}
	defer closeStore()
	// Sessions kept in a database are deleted once a run is scored (the
	// result keeps their details), so that no user's session list holds
	// them.
	opts.DeleteSessions = !inMemory(&o)
	failed := false
	for _, t := range targets {
		passed, err := runTarget(ctx, env, t, opts, app.Name, store, where, *details)
		if err != nil {
			return err
		}
		failed = failed || !passed
	}
	if failed {
		return errEvalFailed
	}
	return nil
}

// evalTarget is an eval set named on the command line, and the ids of the
// cases to run (all when none).
type evalTarget struct {
	set *eval.Set
	ids []string
}

// readTargets reads the eval sets the arguments name (FILE or
// FILE:ID1,ID2).
func readTargets(args []string) ([]evalTarget, error) {
	var targets []evalTarget
	for _, arg := range args {
		path, ids := splitSetArg(arg)
		s, err := eval.ReadSetFile(path)
		if err != nil {
			return nil, err
		}
		// A case named that the set lacks is a mistake of the command
		// line: said before anything runs, once.
		for _, id := range ids {
			if s.Case(id) == nil {
				return nil, fmt.Errorf("eval set %s (%s) has no case %q", s.EvalSetID, path, id)
			}
		}
		targets = append(targets, evalTarget{s, ids})
	}
	return targets, nil
}

// evalConfig reads the criteria: the --config file, else a test_config.json
// beside the first eval set (firstArg), else the defaults.
func evalConfig(path, firstArg string) (*eval.Config, error) {
	if path == "" {
		set, _ := splitSetArg(firstArg)
		path = siblingConfig(set)
	}
	if path == "" {
		return eval.DefaultConfig(), nil
	}
	return eval.ReadConfig(path)
}

// runTarget runs the cases of one eval set, saves the result in store (which
// where names) and prints its table; passed reports whether every case met
// its thresholds.
func runTarget(ctx context.Context, env Env, t evalTarget, opts eval.Options, app string, store eval.Store, where string, details bool) (passed bool, err error) {
	tty := isTerminal(env.Stderr)
	opts.CaseIDs = t.ids
	if tty {
		opts.Progress = func(done, total int) { progressBar(env.Stderr, t.set.EvalSetID, done, total) }
	}
	rep, err := eval.Run(ctx, t.set, opts)
	if tty {
		fmt.Fprint(env.Stderr, "\r\033[K")
	}
	if err != nil {
		return false, fmt.Errorf("eval set %s: %w", t.set.EvalSetID, err)
	}
	if err := store.SaveResult(ctx, app, rep.Result); err != nil {
		return false, fmt.Errorf("save result: %w", err)
	}
	printReport(env.Stdout, t.set, rep, details)
	fmt.Fprintf(env.Stderr, "loom: result %s saved in %s\n", rep.Result.EvalSetResultID, where)
	return rep.Passed(), nil
}

// evalStore keeps eval sets in dir, and results there too when sessions
// are in memory or in the embedded default database; with sessions in
// another SQL database (another SQLite file, PostgreSQL) the results are
// kept in a table of that database (eval/sqleval). where names the
// results' home for messages; closeStore closes what evalStore opened.
func evalStore(ctx context.Context, o *options, dir string) (store eval.Store, where string, closeStore func() error, err error) {
	files := eval.NewDirStore(dir)
	none := func() error { return nil }
	if o.sessions == DefaultSessions || o.sessions == "memory://" {
		return files, dir, none, nil
	}
	results, err := sqleval.Open(ctx, o.sessions)
	if errors.Is(err, sqldb.ErrUnsupportedURL) {
		return files, dir, none, nil // sessions in a store that holds no tables
	}
	if err != nil {
		return nil, "", nil, fmt.Errorf("eval results: %w", err)
	}
	return eval.WithResults(files, results), "the session database " + redact(o.sessions), results.Close, nil
}

// inMemory reports whether the sessions are kept in memory only.
func inMemory(o *options) bool {
	return o.sessions == "memory://"
}

// splitSetArg splits FILE:ID1,ID2 into the file and the case ids.
func splitSetArg(arg string) (string, []string) {
	if i := strings.LastIndex(arg, ":"); i > 0 && strings.HasSuffix(arg[:i], ".json") {
		return arg[:i], splitList(arg[i+1:])
	}
	return arg, nil
}

// siblingConfig returns the test_config.json beside an eval set file, as
// ADK looks for it, or "".
func siblingConfig(setPath string) string {
	dir := "."
	if i := strings.LastIndexAny(setPath, `/\`); i >= 0 {
		dir = setPath[:i]
	}
	p := dir + string(os.PathSeparator) + "test_config.json"
	if _, err := os.Stat(p); err == nil {
		return p
	}
	return ""
}

// needsJudge reports whether a run needs a judge or simulator model.
func needsJudge(cfg *eval.Config, sets []*eval.Set) bool {
	for name := range cfg.Criteria {
		if name != eval.TrajectoryMetric && name != eval.ResponseMatchMetric {
			return true
		}
	}
	for _, s := range sets {
		for _, c := range s.EvalCases {
			if c.ConversationScenario != nil {
				return true
			}
		}
	}
	return false
}

// cachedModels opens judge models by name, each once.
func cachedModels(env Env, timeout time.Duration) func(context.Context, string) (model.LLM, error) {
	var mu sync.Mutex
	opened := map[string]model.LLM{}
	return func(ctx context.Context, name string) (model.LLM, error) {
		mu.Lock()
		defer mu.Unlock()
		if m, ok := opened[name]; ok {
			return m, nil
		}
		m, err := openModel(ctx, name, env.Getenv, timeout)
		if err != nil {
			return nil, err
		}
		opened[name] = m
		return m, nil
	}
}

func progressBar(w io.Writer, name string, done, total int) {
	const width = 30
	filled := width * done / max(total, 1)
	fmt.Fprintf(w, "\r\033[K%s [%s%s] %d/%d", name, strings.Repeat("#", filled), strings.Repeat(".", width-filled), done, total)
}

func fmtScore(s *float64) string {
	if s == nil {
		return "-"
	}
	return fmt.Sprintf("%.3f", *s)
}

// printReport prints one row per case and metric, and with details the
// expected and actual invocations of each run.
func printReport(w io.Writer, s *eval.Set, rep *eval.Report, details bool) {
	fmt.Fprintf(w, "Eval set %s\n", s.EvalSetID)
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "CASE\tMETRIC\tSCORE\tTHRESHOLD\tSTATUS")
	passed := 0
	for _, c := range rep.Cases {
		if c.Status == eval.Passed {
			passed++
		}
		for _, m := range c.Metrics {
			fmt.Fprintf(tw, "%s\t%s\t%s\t%.3f\t%s\n", c.EvalID, m.Name, fmtScore(m.Score), m.Threshold, m.Status)
		}
		for _, err := range c.Errs {
			fmt.Fprintf(tw, "%s\t(error)\t\t\t%v\n", c.EvalID, firstLine(err.Error()))
		}
	}
	tw.Flush()
	fmt.Fprintf(w, "%d of %d cases passed\n", passed, len(rep.Cases))
	for _, c := range rep.Cases {
		if e := c.Efficiency; e != nil {
			fmt.Fprintf(w, "%s took %.3f s, %d model calls, %d tokens (%d prompt, %d candidates) a run\n",
				c.EvalID, e.DurationSeconds, e.ModelCalls, e.TotalTokens, e.PromptTokens, e.CandidatesTokens)
		}
	}
	if !details {
		return
	}
	for _, c := range rep.Cases {
		for i, run := range c.Runs {
			fmt.Fprintf(w, "\n== %s, run %d: %s (session %s)\n", c.EvalID, i+1, run.FinalEvalStatus, run.SessionID)
			for j, per := range run.EvalMetricResultPerInvocation {
				fmt.Fprintf(w, "-- invocation %d\n%s", j+1, eval.Diff(per.ExpectedInvocation, per.ActualInvocation))
				for _, m := range per.EvalMetricResults {
					fmt.Fprintf(w, "   %s: %s (%s)\n", m.MetricName, fmtScore(m.Score), m.EvalStatus)
				}
			}
		}
	}
}

func firstLine(s string) string {
	first, _, _ := strings.Cut(s, "\n")
	return first
}
