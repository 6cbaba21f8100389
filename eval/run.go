package eval

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"google.golang.org/genai"

	"github.com/loomkit/loom/agent"
	"github.com/loomkit/loom/event"
	"github.com/loomkit/loom/model"
	"github.com/loomkit/loom/runner"
	"github.com/loomkit/loom/session"
)

// SessionPrefix starts the ids of the sessions eval runs create, as in ADK,
// so they can be told apart from users' sessions.
const SessionPrefix = "___eval___session___"

// DefaultUserID is the user of eval sessions whose case names none.
const DefaultUserID = "eval_user"

// Options configure a run of eval sets.
type Options struct {
	// Runner runs the app under evaluation. Each case runs in a new
	// session of the runner's session service. Required.
	Runner *runner.Runner
	// Metrics are the metrics to compute; nil means [DefaultConfig]'s.
	Metrics []*Metric
	// Registry gives the metrics' scorers; nil means [NewRegistry].
	Registry *Registry
	// Judge is the default judge model of judged metrics, and Models opens
	// judge models by name (see [Env]).
	Judge  model.LLM
	Models func(ctx context.Context, name string) (model.LLM, error)
	// UserSimulator plays the user of scenario cases; nil means Judge.
	UserSimulator model.LLM
	// Simulator configures the simulated user.
	Simulator *SimulatorConfig
	// Parallelism bounds the case runs in flight; zero means 4.
	Parallelism int
	// NumRuns is how many times each case runs; zero means 1. Scores are
	// averaged over the runs.
	NumRuns int
	// CaseIDs, if set, restricts the run to these cases.
	CaseIDs []string
	// Progress, if set, is called after each case run (from one goroutine
	// at a time).
	Progress func(done, total int)
	// DeleteSessions deletes the session of each case run (and its
	// artifacts) once the run is scored; the result keeps the session's
	// details. By default the sessions stay in the runner's service.
	DeleteSessions bool
}

// Report is the outcome of running an eval set.
type Report struct {
	// Result holds every case run, as ADK stores it.
	Result *SetResult
	// Cases summarizes each case over its runs, in the set's order.
	Cases []*CaseSummary
}

// CaseSummary is a case's outcome over its runs: each metric's mean score
// and status.
type CaseSummary struct {
	EvalID  string
	Status  Status
	Metrics []*MetricSummary
	// Runs are the case's runs.
	Runs []*CaseResult
	// Errs are the errors of runs that failed to complete.
	Errs []error
	// Efficiency is the mean of the runs' efficiency, nil when no run
	// reached the app.
	Efficiency *Efficiency
}

// MetricSummary is a metric's mean score over a case's runs.
type MetricSummary struct {
	Name      string
	Threshold float64
	Score     *float64
	Status    Status
}

// Passed reports whether every case passed.
func (r *Report) Passed() bool {
	for _, c := range r.Cases {
		if c.Status != Passed {
			return false
		}
	}
	return true
}

// Run runs the cases of an eval set against opts.Runner and scores them.
// Cases (and repeated runs) run in parallel, at most opts.Parallelism at a
// time. A case that fails to run is recorded as failed, with its error in
// its summary; Run itself fails only for a bad configuration (a nil or
// unknown metric, a case id the set lacks) or a done context.
func Run(ctx context.Context, set *Set, opts Options) (*Report, error) {
	if opts.Runner == nil {
		return nil, errors.New("eval: Options.Runner is required")
	}
	if opts.Metrics == nil {
		opts.Metrics = DefaultConfig().Metrics()
	}
	if opts.Registry == nil {
		opts.Registry = NewRegistry()
	}
	env := &Env{Judge: opts.Judge, Models: opts.Models}
	scorers := make([]Scorer, len(opts.Metrics))
	for i, m := range opts.Metrics {
		if m == nil {
			return nil, fmt.Errorf("eval: Options.Metrics[%d] is nil", i)
		}
		s, err := opts.Registry.Scorer(m, env)
		if err != nil {
			return nil, err
		}
		scorers[i] = s
	}
	cases := set.EvalCases
	if len(opts.CaseIDs) > 0 {
		cases = nil
		for _, id := range opts.CaseIDs {
			c := set.Case(id)
			if c == nil {
				return nil, fmt.Errorf("eval set %s has no case %q", set.EvalSetID, id)
			}
			cases = append(cases, c)
		}
	}
	runs := max(opts.NumRuns, 1)
	par := opts.Parallelism
	if par <= 0 {
		par = 4
	}
	type job struct{ c, run int }
	var mu sync.Mutex
	done, total := 0, len(cases)*runs
	progress := func() {
		mu.Lock()
		defer mu.Unlock()
		done++
		if opts.Progress != nil {
			opts.Progress(done, total)
		}
	}
	results := make([][]*CaseResult, len(cases))
	errs := make([][]error, len(cases))
	for i := range cases {
		results[i] = make([]*CaseResult, runs)
		errs[i] = make([]error, runs)
	}
	jobs := make(chan job, total)
	for i := range cases {
		for r := range runs {
			jobs <- job{i, r}
		}
	}
	close(jobs)
	panics := agent.Concurrently(min(par, total), func(int) {
		for j := range jobs {
			if ctx.Err() != nil {
				return
			}
			res, err := runCase(ctx, set, cases[j.c], &opts, scorers)
			results[j.c][j.run], errs[j.c][j.run] = res, err
			progress()
		}
	})
	for _, p := range panics {
		if p != nil {
			return nil, fmt.Errorf("eval: progress callback: %w", p)
		}
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	now := time.Now()
	id := ResultID(opts.Runner.AppName(), set.EvalSetID, now)
	report := &Report{Result: &SetResult{EvalSetResultID: id, EvalSetResultName: id, EvalSetID: set.EvalSetID, CreationTimestamp: event.ToSeconds(now), EvalCaseResults: []*CaseResult{}}}
	for i, c := range cases {
		sum := summarize(c.EvalID, opts.Metrics, results[i], errs[i])
		report.Cases = append(report.Cases, sum)
		report.Result.EvalCaseResults = append(report.Result.EvalCaseResults, results[i]...)
	}
	return report, nil
}

// maxResultIDBytes bounds the ids of results, so that every store keeps
// them with room to spare: as a file name with its suffix, or as a session
// id, with a prefix of the server's per-user view.
const maxResultIDBytes = 180

// ResultID is the id of a result as ADK forms it: app, set and time. When
// a long app name and set id would make it longer than 180 bytes, the app
// and set part is cut, at a character boundary, and ends with a hash of
// the whole of it, so that results of different sets stay apart.
func ResultID(app, setID string, t time.Time) string {
	head := strings.ReplaceAll(app+"_"+setID, "/", "_")
	tail := fmt.Sprintf("_%.6f", event.ToSeconds(t))
	if len(head)+len(tail) > maxResultIDBytes {
		sum := sha256.Sum256([]byte(head))
		hash := "_" + hex.EncodeToString(sum[:6])
		n := maxResultIDBytes - len(tail) - len(hash)
		for n > 0 && !utf8.RuneStart(head[n]) {
			n--
		}
		head = head[:n] + hash
	}
	return head + tail
}

func summarize(id string, metrics []*Metric, runs []*CaseResult, errs []error) *CaseSummary {
	sum := &CaseSummary{EvalID: id, Runs: runs, Efficiency: meanEfficiency(runs)}
	for _, err := range errs {
		if err != nil {
			sum.Errs = append(sum.Errs, err)
		}
	}
	anyFailed, anyPassed := len(sum.Errs) > 0, false
	for i, m := range metrics {
		total, n := 0.0, 0
		for _, r := range runs {
			if s := r.OverallEvalMetricResults[i].Score; s != nil {
				total += *s
				n++
			}
		}
		ms := &MetricSummary{Name: m.MetricName, Threshold: m.threshold()}
		if n > 0 {
			ms.Score = ptr(total / float64(n))
		}
		ms.Status = statusOf(ms.Score, ms.Threshold)
		switch ms.Status {
		case Failed:
			anyFailed = true
		case Passed:
			anyPassed = true
		}
		sum.Metrics = append(sum.Metrics, ms)
	}
	switch {
	case anyFailed:
		sum.Status = Failed
	case anyPassed:
		sum.Status = Passed
	default:
		sum.Status = NotEvaluated
	}
	return sum
}

// meanEfficiency is the mean efficiency of the runs that have one, or nil.
func meanEfficiency(runs []*CaseResult) *Efficiency {
	var sum Efficiency
	n := 0
	for _, r := range runs {
		if e := r.Efficiency; e != nil {
			n++
			sum.DurationSeconds += e.DurationSeconds
			sum.ModelCalls += e.ModelCalls
			sum.PromptTokens += e.PromptTokens
			sum.CandidatesTokens += e.CandidatesTokens
			sum.TotalTokens += e.TotalTokens
		}
	}
	if n == 0 {
		return nil
	}
	return &Efficiency{
		DurationSeconds:  sum.DurationSeconds / float64(n),
		ModelCalls:       (sum.ModelCalls + n/2) / n,
		PromptTokens:     (sum.PromptTokens + int64(n)/2) / int64(n),
		CandidatesTokens: (sum.CandidatesTokens + int64(n)/2) / int64(n),
		TotalTokens:      (sum.TotalTokens + int64(n)/2) / int64(n),
	}
}

// runCase runs one case once and scores it. The returned result is never
// nil: a run that fails has every metric not evaluated and fails the case.
func runCase(ctx context.Context, set *Set, c *Case, opts *Options, scorers []Scorer) (res *CaseResult, err error) {
	userID := DefaultUserID
	if c.SessionInput != nil && c.SessionInput.UserID != "" {
		userID = c.SessionInput.UserID
	}
	res = &CaseResult{EvalSetID: set.EvalSetID, EvalID: c.EvalID, UserID: userID, FinalEvalStatus: Failed,
		OverallEvalMetricResults: []*MetricResult{}, EvalMetricResultPerInvocation: []*PerInvocation{}}
	for _, m := range opts.Metrics {
		res.OverallEvalMetricResults = append(res.OverallEvalMetricResults, newResult(m, nil))
	}
	if p := agent.Safely(func() { err = inferAndScore(ctx, c, opts, scorers, userID, res) }); p != nil {
		err = fmt.Errorf("eval case %s: panic: %v\n%s", c.EvalID, p.Value, p.Stack)
	}
	return res, err
}

// inferAndScore runs a case and scores it into res.
func inferAndScore(ctx context.Context, c *Case, opts *Options, scorers []Scorer, userID string, res *CaseResult) error {
	actual, sid, eff, err := infer(ctx, opts.Runner, c, userID, opts)
	res.SessionID, res.Efficiency = sid, eff
	if sess, gerr := opts.Runner.Sessions().Get(ctx, session.Key{AppName: opts.Runner.AppName(), UserID: userID, SessionID: sid}, nil); gerr == nil {
		if b, merr := json.Marshal(sess); merr == nil {
			res.SessionDetails = b
		}
	}
	if opts.DeleteSessions {
		// Deleted even when the run was cancelled: nobody will read it.
		defer func() {
			_ = opts.Runner.DeleteSession(context.WithoutCancel(ctx), userID, sid)
		}()
	}
	if err != nil {
		return fmt.Errorf("eval case %s: %w", c.EvalID, err)
	}
	in := &ScoreInput{Case: c, Actual: actual}
	if c.ConversationScenario == nil {
		in.Expected = c.Conversation
	}
	per := make([]*PerInvocation, len(actual))
	for i, a := range actual {
		per[i] = &PerInvocation{ActualInvocation: a, EvalMetricResults: []*MetricResult{}}
		if i < len(in.Expected) {
			per[i].ExpectedInvocation = in.Expected[i]
		}
	}
	anyFailed, anyPassed := false, false
	for i, m := range opts.Metrics {
		in.Criterion = m.criterion()
		score, err := scorers[i].Score(ctx, in)
		if err != nil {
			return fmt.Errorf("eval case %s: metric %s: %w", c.EvalID, m.MetricName, err)
		}
		r := newResult(m, score.Overall)
		r.Details = score.Details
		res.OverallEvalMetricResults[i] = r
		switch r.EvalStatus {
		case Failed:
			anyFailed = true
		case Passed:
			anyPassed = true
		}
		for j, s := range score.PerInvocation {
			if j < len(per) {
				pr := newResult(m, s.Score)
				pr.Details = s.Details
				per[j].EvalMetricResults = append(per[j].EvalMetricResults, pr)
			}
		}
	}
	res.EvalMetricResultPerInvocation = per
	switch {
	case anyFailed:
		res.FinalEvalStatus = Failed
	case anyPassed:
		res.FinalEvalStatus = Passed
	default:
		res.FinalEvalStatus = NotEvaluated
	}
	return nil
}

func newResult(m *Metric, score *float64) *MetricResult {
	t := m.threshold()
	return &MetricResult{MetricName: m.MetricName, Threshold: &t, Criterion: m.Criterion, Score: score, EvalStatus: statusOf(score, t)}
}

// infer runs a case against r in a new session of user userID, starting
// from the case's initial state: the conversation's user turns in order, or
// a simulated user's. It returns the actual invocations, the session id
// and, once the session exists, what the app's turns took.
func infer(ctx context.Context, r *runner.Runner, c *Case, userID string, opts *Options) ([]*Invocation, string, *Efficiency, error) {
	sid := SessionPrefix + event.NewID()
	var state map[string]any
	if c.SessionInput != nil {
		state = event.CloneMap(c.SessionInput.State)
	}
	if _, err := r.Sessions().Create(ctx, session.Key{AppName: r.AppName(), UserID: userID, SessionID: sid}, state); err != nil {
		return nil, sid, nil, fmt.Errorf("create session: %w", err)
	}
	eff := &Efficiency{}
	turn := func(msg *genai.Content) (*Invocation, error) {
		var events []*event.Event
		start := time.Now()
		defer func() { eff.DurationSeconds += time.Since(start).Seconds() }()
		for ev, err := range r.Run(ctx, userID, sid, msg, nil) {
			if err != nil {
				return nil, err
			}
			eff.add(ev)
			events = append(events, ev)
		}
		inv := &Invocation{UserContent: msg, CreationTimestamp: event.ToSeconds(time.Now())}
		if len(events) > 0 {
			inv.InvocationID = events[0].InvocationID
		}
		fill(inv, events)
		return inv, nil
	}
	if c.ConversationScenario != nil {
		actual, err := simulate(ctx, c.ConversationScenario, opts, turn)
		return actual, sid, eff, err
	}
	var actual []*Invocation
	for i, exp := range c.Conversation {
		if exp.UserContent == nil {
			return actual, sid, eff, fmt.Errorf("conversation[%d]: no user content", i)
		}
		msg := event.CloneContent(exp.UserContent)
		if msg.Role == "" {
			msg.Role = genai.RoleUser
		}
		inv, err := turn(msg)
		if err != nil {
			return actual, sid, eff, fmt.Errorf("conversation[%d]: %w", i, err)
		}
		actual = append(actual, inv)
	}
	return actual, sid, eff, nil
}
