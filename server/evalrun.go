package server

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/loomkit/loom/agent"
	"github.com/loomkit/loom/eval"
	"github.com/loomkit/loom/internal/evaljson"
	"github.com/loomkit/loom/runner"
)

// EvalLimits bound the evaluation routes (Config.EvalLimits). A zero field
// takes its default.
type EvalLimits struct {
	// MaxSetCases is the most cases an eval set may hold (default
	// DefaultMaxEvalSetCases): creating a larger set, or adding a case to
	// a full one, gets 400.
	MaxSetCases int
	// MaxRunCases is the most cases one run request may run (default
	// DefaultMaxEvalRunCases): a run of more, such as a whole set stored
	// larger, gets 400 and can choose cases with evalCaseIds.
	MaxRunCases int
	// MaxResultBytes bounds a run's result as saved (default
	// DefaultMaxEvalResultBytes). A larger result is saved without the
	// cases' session details; one still larger gets 413 and is not saved.
	MaxResultBytes int64
	// Runs is the most eval runs the server does at once (default
	// DefaultEvalRuns); a run request beyond it gets 429.
	Runs int
	// RunsPerUser is the most eval runs one user does at once (default
	// DefaultEvalRunsPerUser); a user's run request beyond it gets 429
	// while other users' runs proceed. Users are those Config.Authenticate
	// binds; without it only Runs applies.
	RunsPerUser int
	// Parallelism is how many cases of one run go on at once (default
	// DefaultEvalParallelism).
	Parallelism int
}

// The defaults of EvalLimits.
const (
	DefaultMaxEvalSetCases    = 1000
	DefaultMaxEvalRunCases    = 1000
	DefaultMaxEvalResultBytes = 16 << 20
	DefaultEvalRuns           = 8
	DefaultEvalRunsPerUser    = 1
	DefaultEvalParallelism    = 4
)

func (l *EvalLimits) setDefaults() {
	def := func(v *int, d int) {
		if *v <= 0 {
			*v = d
		}
	}
	def(&l.MaxSetCases, DefaultMaxEvalSetCases)
	def(&l.MaxRunCases, DefaultMaxEvalRunCases)
	def(&l.Runs, DefaultEvalRuns)
	def(&l.RunsPerUser, DefaultEvalRunsPerUser)
	def(&l.Parallelism, DefaultEvalParallelism)
	if l.MaxResultBytes <= 0 {
		l.MaxResultBytes = DefaultMaxEvalResultBytes
	}
}

var (
	errBusy     = errors.New("too many requests")
	errTooLarge = errors.New("too large")
)

// checkSetSize refuses a set holding more cases than a set may.
func (s *Server) checkSetSize(set *eval.Set) error {
	if n, max := len(set.EvalCases), s.cfg.EvalLimits.MaxSetCases; n > max {
		return badRequest("Eval set `%s` would hold %d cases; a set holds at most %d cases", set.EvalSetID, n, max)
	}
	return nil
}

// evalSlots counts the eval runs in progress, in all and by user.
type evalSlots struct {
	mu     sync.Mutex
	total  int
	byUser map[string]int
}

// acquireEvalRun takes a run slot for the request's user, or fails with
// 429. release gives it back.
func (s *Server) acquireEvalRun(r *http.Request) (release func(), err error) {
	lim := &s.cfg.EvalLimits
	user, bound := AuthenticatedUser(r.Context())
	sl := &s.evalSlots
	sl.mu.Lock()
	defer sl.mu.Unlock()
	switch {
	case bound && sl.byUser[user] >= lim.RunsPerUser:
		return nil, &detailError{detail: fmt.Sprintf("Your eval runs in progress (%d) are as many as a user may have; try again when one ends", sl.byUser[user]), err: errBusy}
	case sl.total >= lim.Runs:
		return nil, &detailError{detail: fmt.Sprintf("%d eval runs are in progress; try again when one ends", sl.total), err: errBusy}
	}
	sl.total++
	if bound {
		if sl.byUser == nil {
			sl.byUser = map[string]int{}
		}
		sl.byUser[user]++
	}
	return func() {
		sl.mu.Lock()
		defer sl.mu.Unlock()
		sl.total--
		if bound {
			if sl.byUser[user]--; sl.byUser[user] == 0 {
				delete(sl.byUser, user)
			}
		}
	}, nil
}

// evalRun is one accepted run request.
type evalRun struct {
	app     *runner.Runner
	set     *eval.Set
	ids     []string
	metrics []*eval.Metric
	keep    bool // keep the sessions the run creates
	wrapped bool // answer the newer route's shape
}

// doEvalRun runs the cases, saves the result within its bound, deletes the
// sessions the run created (unless kept) and returns the answer's body.
// progress, if set, is called after each case run.
func (s *Server) doEvalRun(ctx context.Context, r *http.Request, run *evalRun, progress func(done, total int)) (any, error) {
	opts := eval.Options{Runner: run.app, Metrics: run.metrics, CaseIDs: run.ids, Judge: s.cfg.EvalJudge, Registry: s.cfg.EvalMetrics,
		Parallelism: s.cfg.EvalLimits.Parallelism, DeleteSessions: !run.keep, Progress: progress}
	if len(run.metrics) == 0 {
		opts.Metrics = nil
	}
	rep, err := eval.Run(ctx, run.set, opts)
	if err != nil {
		if ctx.Err() == nil {
			return nil, badRequest("%v", err)
		}
		return nil, err
	}
	if err := fitResult(rep.Result, s.cfg.EvalLimits.MaxResultBytes); err != nil {
		return nil, err
	}
	if err := s.evals(r).SaveResult(ctx, run.app.AppName(), rep.Result); err != nil {
		return nil, evalError(err)
	}
	out := []*runEvalResult{}
	for _, cr := range rep.Result.EvalCaseResults {
		out = append(out, &runEvalResult{
			EvalSetFile: run.set.EvalSetID, EvalSetID: run.set.EvalSetID, EvalID: cr.EvalID, FinalEvalStatus: cr.FinalEvalStatus,
			EvalMetricResults: []json.RawMessage{}, OverallEvalMetricResults: cr.OverallEvalMetricResults,
			EvalMetricResultPerInvocation: cr.EvalMetricResultPerInvocation, UserID: cr.UserID, SessionID: cr.SessionID,
			Efficiency: cr.Efficiency,
		})
	}
	if run.wrapped {
		return &struct {
			RunEvalResults []*runEvalResult `json:"run_eval_results"`
			Extra          eval.Extra
		}{RunEvalResults: out}, nil
	}
	return out, nil
}

// fitResult keeps a result within max bytes as encoded: the cases'
// session details, the bulk of a result and a copy of what the sessions
// held, go first; a result still too large is refused.
func fitResult(res *eval.SetResult, max int64) error {
	size := func() (int64, error) {
		b, err := evaljson.EncodeCamel(res)
		return int64(len(b)), err
	}
	n, err := size()
	if err != nil || n <= max {
		return err
	}
	for _, cr := range res.EvalCaseResults {
		cr.SessionDetails = nil
	}
	if n, err = size(); err != nil || n <= max {
		return err
	}
	return &detailError{detail: fmt.Sprintf("The eval result is %d bytes without its session details, more than the %d this server keeps; run fewer cases at once", n, max), err: errTooLarge}
}

// wantsEventStream reports whether a run request asks for its progress as
// server-sent events. ADK's clients ask for JSON and get it.
func wantsEventStream(r *http.Request) bool {
	for _, v := range r.Header.Values("Accept") {
		for part := range strings.SplitSeq(v, ",") {
			mt, _, _ := strings.Cut(part, ";")
			if strings.EqualFold(strings.TrimSpace(mt), "text/event-stream") {
				return true
			}
		}
	}
	return false
}

// streamEvalRun answers a run as server-sent events: "progress" events
// ({"done": n, "total": m}) as cases finish, at most one pending at a time
// (a slow client sees fewer), then one "result" event holding the JSON
// answer, or an "error" event ({"error": detail, "status": code}). A client
// that does not take a frame within Config.StreamWriteTimeout, or leaves,
// cancels the run.
func (s *Server) streamEvalRun(w http.ResponseWriter, r *http.Request, run *evalRun) error {
	ctx, cancel := context.WithCancel(r.Context())
	defer cancel()
	type progress struct {
		Done  int `json:"done"`
		Total int `json:"total"`
	}
	updates := make(chan progress, 1)
	report := func(done, total int) {
		p := progress{done, total}
		for { // the latest replaces one the handler has not taken yet
			select {
			case updates <- p:
				return
			default:
				select {
				case <-updates:
				default:
				}
			}
		}
	}
	type outcome struct {
		body any
		err  error
	}
	finished := make(chan outcome, 1)
	go func() {
		var o outcome
		// The run is user code on a goroutine of its own: a panic is its error.
		if p := agent.Safely(func() { o.body, o.err = s.doEvalRun(ctx, r, run, report) }); p != nil {
			o.err = p
		}
		finished <- o
	}()

	rc := http.NewResponseController(w)
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-cache")
	w.WriteHeader(http.StatusOK)
	broken := false
	frame := func(name string, data []byte) {
		if broken {
			return
		}
		if s.cfg.StreamWriteTimeout > 0 {
			_ = rc.SetWriteDeadline(time.Now().Add(s.cfg.StreamWriteTimeout))
		}
		buf := make([]byte, 0, len(name)+len(data)+16)
		buf = append(append(append(append(buf, "event: "...), name...), "\ndata: "...), data...)
		buf = append(buf, "\n\n"...)
		if _, err := w.Write(buf); err != nil || rc.Flush() != nil {
			broken = true
			cancel() // nobody reads on: stop the run
		}
	}
	for {
		select {
		case p := <-updates:
			b, _ := json.Marshal(p)
			frame("progress", b)
		case out := <-finished:
			// Progress sent before the end is not lost.
			select {
			case p := <-updates:
				b, _ := json.Marshal(p)
				frame("progress", b)
			default:
			}
			if out.err != nil {
				if broken || r.Context().Err() != nil {
					return nil
				}
				b, _ := json.Marshal(map[string]any{"error": detail(out.err), "status": status(out.err)})
				frame("error", b)
				return nil
			}
			b, err := evaljson.EncodeCamel(out.body)
			if err != nil {
				return err
			}
			frame("result", b)
			if s.cfg.StreamWriteTimeout > 0 {
				_ = rc.SetWriteDeadline(time.Time{})
			}
			return nil
		}
	}
}
