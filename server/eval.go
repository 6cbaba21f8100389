package server

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"time"

	"github.com/loomkit/loom/eval"
	"github.com/loomkit/loom/event"
	"github.com/loomkit/loom/internal/evaljson"
	"github.com/loomkit/loom/session"
)

// registerEvalRoutes serves ADK's evaluation routes under /apps/{app} and
// /dev/apps/{app}: the older forms ADK's web UI calls (eval_sets,
// add_session, evals, run_eval, eval_results) and the newer ones of ADK's
// API server (eval-sets, add-session, eval-cases, run, eval-results,
// metrics-info). Without Config.Evals they answer 501. A request bound to
// a user by Config.Authenticate sees only that user's sets and results
// (Server.evals).
func (s *Server) registerEvalRoutes() {
	for _, p := range []string{"/apps/{app}", "/dev/apps/{app}"} {
		sets, set := p+"/eval_sets", p+"/eval_sets/{set}"
		s.handle("GET "+sets, s.evalOnly(s.listEvalSets(false)))
		s.handle("POST "+set, s.evalOnly(s.createEvalSetLegacy))
		s.handle("POST "+set+"/add_session", s.evalOnly(s.addSessionToEvalSet))
		s.handle("GET "+set+"/evals", s.evalOnly(s.listEvalCases))
		s.handle("GET "+set+"/evals/{case}", s.evalOnly(s.getEvalCase))
		s.handle("PUT "+set+"/evals/{case}", s.evalOnly(s.updateEvalCase))
		s.handle("DELETE "+set+"/evals/{case}", s.evalOnly(s.deleteEvalCase))
		s.handle("POST "+set+"/run_eval", s.evalOnly(s.runEval(false)))
		s.handle("GET "+p+"/eval_results", s.evalOnly(s.listEvalResults(false)))
		s.handle("GET "+p+"/eval_results/{result}", s.evalOnly(s.getEvalResult))

		sets, set = p+"/eval-sets", p+"/eval-sets/{set}"
		s.handle("GET "+sets, s.evalOnly(s.listEvalSets(true)))
		s.handle("POST "+sets, s.evalOnly(s.createEvalSet))
		s.handle("POST "+set+"/add-session", s.evalOnly(s.addSessionToEvalSet))
		s.handle("GET "+set+"/eval-cases/{case}", s.evalOnly(s.getEvalCase))
		s.handle("PUT "+set+"/eval-cases/{case}", s.evalOnly(s.updateEvalCase))
		s.handle("DELETE "+set+"/eval-cases/{case}", s.evalOnly(s.deleteEvalCase))
		s.handle("POST "+set+"/run", s.evalOnly(s.runEval(true)))
		s.handle("GET "+p+"/eval-results", s.evalOnly(s.listEvalResults(true)))
		s.handle("GET "+p+"/eval-results/{result}", s.evalOnly(s.getEvalResult))
		s.handle("GET "+p+"/metrics-info", s.evalOnly(s.metricsInfo))
	}
}

var errNotImplemented = errors.New("not implemented")

// evalOnly answers 501 when the server keeps no eval sets, and checks the
// app exists.
func (s *Server) evalOnly(fn apiFunc) apiFunc {
	return func(w http.ResponseWriter, r *http.Request) error {
		if s.cfg.Evals == nil {
			return &detailError{detail: "Evaluation is not configured on this server", err: errNotImplemented}
		}
		if _, err := s.app(r.PathValue("app")); err != nil {
			return err
		}
		return fn(w, r)
	}
}

// evalError maps the eval store's errors to the server's: an id the store
// cannot use, an existing set or case and a malformed document are 400, a
// missing one 404.
func evalError(err error) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, eval.ErrNotFound):
		return &detailError{detail: err.Error(), err: errNotFound}
	case errors.Is(err, eval.ErrExists), errors.Is(err, eval.ErrInvalidID):
		return badRequest("%v", err)
	}
	var fe *eval.FieldError
	if errors.As(err, &fe) {
		return badRequest("%v", err)
	}
	return err
}

// writeEval writes an eval document in camelCase, as ADK's API does.
func writeEval(w http.ResponseWriter, v any) error {
	data, err := evaljson.EncodeCamel(v)
	if err != nil {
		return err
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusOK)
	_, err = w.Write(data)
	return err
}

func (s *Server) listEvalSets(wrapped bool) apiFunc {
	return func(w http.ResponseWriter, r *http.Request) error {
		ids, err := s.evals(r).ListSets(r.Context(), r.PathValue("app"))
		if err != nil {
			return evalError(err)
		}
		if wrapped {
			return writeJSON(w, http.StatusOK, map[string][]string{"evalSetIds": ids})
		}
		return writeJSON(w, http.StatusOK, ids)
	}
}

// checkCaseUser fails with 403 if the request is bound to a user
// (Config.Authenticate) and the session input of c names another: an eval
// run creates its session as that user, writing and then returning the
// user's shared user: state.
func checkCaseUser(r *http.Request, c *eval.Case) error {
	if c == nil || c.SessionInput == nil {
		return nil
	}
	return checkUser(r, c.SessionInput.UserID)
}

// runAs returns the set whose cases ids (all when empty) are to run for the
// request. A request bound to a user runs them as that user: a case naming
// another user, which a set stored before that was checked may hold, fails
// with 403, and a case naming no user gets the bound one. Without a bound
// user the set is returned as it is.
func runAs(r *http.Request, set *eval.Set, ids []string) (*eval.Set, error) {
	user, ok := AuthenticatedUser(r.Context())
	if !ok {
		return set, nil
	}
	out := *set
	out.EvalCases = make([]*eval.Case, 0, len(set.EvalCases))
	for _, c := range set.EvalCases {
		if len(ids) > 0 && !slices.Contains(ids, c.EvalID) {
			continue
		}
		if err := checkCaseUser(r, c); err != nil {
			return nil, err
		}
		cc := *c
		in := eval.SessionInput{AppName: r.PathValue("app")}
		if c.SessionInput != nil {
			in = *c.SessionInput
		}
		in.UserID = user
		cc.SessionInput = &in
		out.EvalCases = append(out.EvalCases, &cc)
	}
	return &out, nil
}

// casesToRun returns the cases of set with the given ids (all when
// none), leaving out ids the set lacks, which eval.Run reports.
func casesToRun(set *eval.Set, ids []string) []*eval.Case {
	if len(ids) == 0 {
		return set.EvalCases
	}
	var out []*eval.Case
	for _, c := range set.EvalCases {
		if slices.Contains(ids, c.EvalID) {
			out = append(out, c)
		}
	}
	return out
}

func (s *Server) newEvalSet(w http.ResponseWriter, r *http.Request, set *eval.Set) error {
	if err := eval.CheckSetID(set.EvalSetID); err != nil {
		return badRequest("%v", err)
	}
	if err := s.checkSetSize(set); err != nil {
		return err
	}
	for _, c := range set.EvalCases {
		if err := checkCaseUser(r, c); err != nil {
			return err
		}
	}
	if err := s.authorizeCases(r, set.EvalCases...); err != nil {
		return err
	}
	if err := s.evals(r).CreateSet(r.Context(), r.PathValue("app"), set); err != nil {
		return evalError(err)
	}
	return writeEval(w, set)
}

// createEvalSetLegacy serves POST .../eval_sets/{set}: an empty set.
func (s *Server) createEvalSetLegacy(w http.ResponseWriter, r *http.Request) error {
	return s.newEvalSet(w, r, &eval.Set{EvalSetID: r.PathValue("set"), EvalCases: []*eval.Case{}})
}

// createEvalSet serves POST .../eval-sets with {evalSet: {...}}.
func (s *Server) createEvalSet(w http.ResponseWriter, r *http.Request) error {
	f, err := readObject(r)
	if err != nil {
		return err
	}
	raw, ok := f["evalSet"]
	if !ok {
		raw, ok = f["eval_set"]
	}
	if !ok {
		return unprocessable("evalSet is required")
	}
	var set eval.Set
	if err := evaljson.Decode(raw, &set); err != nil {
		return unprocessable("evalSet: %v", err)
	}
	return s.newEvalSet(w, r, &set)
}

// addSessionToEvalSet serves POST .../add_session with {evalId, sessionId,
// userId}: the session's conversation becomes a case whose expected
// responses and tool uses are the session's own.
func (s *Server) addSessionToEvalSet(w http.ResponseWriter, r *http.Request) error {
	a, err := s.app(r.PathValue("app"))
	if err != nil {
		return err
	}
	f, err := readObject(r)
	if err != nil {
		return err
	}
	var ids [3]string
	for i, k := range []string{"evalId", "sessionId", "userId"} {
		if ids[i], err = f.string(k); err != nil {
			return err
		}
		if ids[i] == "" {
			return unprocessable("%s is required", k)
		}
	}
	if err := checkUser(r, ids[2]); err != nil {
		return err
	}
	sess, err := a.Sessions().Get(r.Context(), session.Key{AppName: a.AppName(), UserID: ids[2], SessionID: ids[1]}, nil)
	if err != nil {
		return sessionError(ids[1], err)
	}
	c := &eval.Case{
		EvalID:            ids[0],
		Conversation:      eval.InvocationsFromEvents(sess.Events()),
		SessionInput:      &eval.SessionInput{AppName: a.AppName(), UserID: ids[2], State: map[string]any{}},
		CreationTimestamp: event.ToSeconds(time.Now()),
	}
	err = s.evals(r).UpdateSet(r.Context(), a.AppName(), r.PathValue("set"), func(set *eval.Set) error {
		if set.Case(c.EvalID) != nil {
			return fmt.Errorf("eval case %q: %w", c.EvalID, eval.ErrExists)
		}
		set.EvalCases = append(set.EvalCases, c)
		return s.checkSetSize(set)
	})
	if err != nil {
		return evalError(err)
	}
	return writeJSON(w, http.StatusOK, nil)
}

func (s *Server) getSet(r *http.Request) (*eval.Set, error) {
	set, err := s.evals(r).GetSet(r.Context(), r.PathValue("app"), r.PathValue("set"))
	return set, evalError(err)
}

func (s *Server) listEvalCases(w http.ResponseWriter, r *http.Request) error {
	set, err := s.getSet(r)
	if err != nil {
		return err
	}
	ids := make([]string, 0, len(set.EvalCases))
	for _, c := range set.EvalCases {
		ids = append(ids, c.EvalID)
	}
	slices.Sort(ids)
	return writeJSON(w, http.StatusOK, ids)
}

func (s *Server) getEvalCase(w http.ResponseWriter, r *http.Request) error {
	set, err := s.getSet(r)
	if err != nil {
		return err
	}
	c := set.Case(r.PathValue("case"))
	if c == nil {
		return &detailError{detail: fmt.Sprintf("Eval set `%s` or Eval `%s` not found.", set.EvalSetID, r.PathValue("case")), err: errNotFound}
	}
	return writeEval(w, c)
}

func (s *Server) updateEvalCase(w http.ResponseWriter, r *http.Request) error {
	body, err := readBody(r)
	if err != nil {
		return err
	}
	id := r.PathValue("case")
	var c eval.Case
	// The id may be left out of the body; the route names it.
	var probe map[string]json.RawMessage
	if json.Unmarshal(body, &probe) == nil {
		if probe == nil {
			return unprocessable("The body must be a JSON object holding the eval case")
		}
		if _, ok := probe["evalId"]; !ok {
			if _, ok := probe["eval_id"]; !ok {
				probe["evalId"], _ = json.Marshal(id)
				body, _ = json.Marshal(probe)
			}
		}
	}
	if err := evaljson.Decode(body, &c); err != nil {
		return unprocessable("%v", err)
	}
	if c.EvalID != id {
		return badRequest("Eval id in EvalCase should match the eval id in the API route.")
	}
	if err := checkCaseUser(r, &c); err != nil {
		return err
	}
	if err := s.authorizeCases(r, &c); err != nil {
		return err
	}
	err = s.evals(r).UpdateSet(r.Context(), r.PathValue("app"), r.PathValue("set"), func(set *eval.Set) error {
		for i, old := range set.EvalCases {
			if old.EvalID == id {
				set.EvalCases[i] = &c
				return nil
			}
		}
		return fmt.Errorf("eval case %q: %w", id, eval.ErrNotFound)
	})
	if err != nil {
		return evalError(err)
	}
	return writeJSON(w, http.StatusOK, nil)
}

func (s *Server) deleteEvalCase(w http.ResponseWriter, r *http.Request) error {
	id := r.PathValue("case")
	err := s.evals(r).UpdateSet(r.Context(), r.PathValue("app"), r.PathValue("set"), func(set *eval.Set) error {
		n := len(set.EvalCases)
		set.EvalCases = slices.DeleteFunc(set.EvalCases, func(c *eval.Case) bool { return c.EvalID == id })
		if len(set.EvalCases) == n {
			return fmt.Errorf("eval case %q: %w", id, eval.ErrNotFound)
		}
		return nil
	})
	if err != nil {
		return evalError(err)
	}
	return writeJSON(w, http.StatusOK, nil)
}

// runEvalResult is ADK's RunEvalResult: a case result without its
// session details, with the set file name it came from.
type runEvalResult struct {
	EvalSetFile                   string                `json:"eval_set_file"`
	EvalSetID                     string                `json:"eval_set_id"`
	EvalID                        string                `json:"eval_id"`
	FinalEvalStatus               eval.Status           `json:"final_eval_status"`
	EvalMetricResults             []json.RawMessage     `json:"eval_metric_results"`
	OverallEvalMetricResults      []*eval.MetricResult  `json:"overall_eval_metric_results"`
	EvalMetricResultPerInvocation []*eval.PerInvocation `json:"eval_metric_result_per_invocation"`
	UserID                        string                `json:"user_id"`
	SessionID                     string                `json:"session_id"`
	// Efficiency, beyond ADK, is what the run took.
	Efficiency *eval.Efficiency `json:"efficiency,omitempty"`
	Extra      eval.Extra
}

// runEval serves the run routes: {evalIds or evalCaseIds, evalMetrics}
// and, beyond ADK, keepSessions. The result is saved like every eval
// run's, and the sessions the run created are then deleted unless
// keepSessions is true. A request accepting text/event-stream gets the
// run's progress as it goes (streamEvalRun).
func (s *Server) runEval(wrapped bool) apiFunc {
	return func(w http.ResponseWriter, r *http.Request) error {
		a, err := s.app(r.PathValue("app"))
		if err != nil {
			return err
		}
		var req struct {
			EvalIDs      []string       `json:"eval_ids"`
			EvalCaseIDs  []string       `json:"eval_case_ids"`
			EvalMetrics  []*eval.Metric `json:"eval_metrics" eval:"required"`
			KeepSessions bool           `json:"keep_sessions"`
			Extra        eval.Extra
		}
		body, err := readBody(r)
		if err != nil {
			return err
		}
		if err := evaljson.Decode(body, &req); err != nil {
			return unprocessable("%v", err)
		}
		for i, m := range req.EvalMetrics {
			if m == nil {
				return unprocessable("evalMetrics[%d] must be an object", i)
			}
		}
		set, err := s.getSet(r)
		if err != nil {
			if errors.Is(err, errNotFound) {
				return badRequest("Eval set `%s` not found.", r.PathValue("set"))
			}
			return err
		}
		ids := req.EvalCaseIDs
		if len(ids) == 0 {
			ids = req.EvalIDs
		}
		if set, err = runAs(r, set, ids); err != nil {
			return err
		}
		cases := casesToRun(set, ids)
		if err := s.authorizeCases(r, cases...); err != nil {
			return err
		}
		n := len(cases)
		if len(ids) > 0 {
			n = len(ids)
		}
		if max := s.cfg.EvalLimits.MaxRunCases; n > max {
			return badRequest("This run would run %d eval cases; a run takes at most %d: choose some with evalCaseIds", n, max)
		}
		release, err := s.acquireEvalRun(r)
		if err != nil {
			return err
		}
		defer release()
		run := &evalRun{app: a, set: set, ids: ids, metrics: req.EvalMetrics, keep: req.KeepSessions, wrapped: wrapped}
		if wantsEventStream(r) {
			return s.streamEvalRun(w, r, run)
		}
		out, err := s.doEvalRun(r.Context(), r, run, nil)
		if err != nil {
			return err
		}
		return writeEval(w, out)
	}
}

func (s *Server) listEvalResults(wrapped bool) apiFunc {
	return func(w http.ResponseWriter, r *http.Request) error {
		ids, err := s.evals(r).ListResults(r.Context(), r.PathValue("app"))
		if err != nil {
			return evalError(err)
		}
		if wrapped {
			return writeJSON(w, http.StatusOK, map[string][]string{"evalResultIds": ids})
		}
		return writeJSON(w, http.StatusOK, ids)
	}
}

func (s *Server) getEvalResult(w http.ResponseWriter, r *http.Request) error {
	res, err := s.evals(r).GetResult(r.Context(), r.PathValue("app"), r.PathValue("result"))
	if err != nil {
		return evalError(err)
	}
	return writeEval(w, res)
}

// metricDescriptions describe the built-in metrics to ADK's web UI.
var metricDescriptions = map[string]string{
	eval.TrajectoryMetric:          "Share of invocations whose tool calls match the expected ones (exact, in order or any order).",
	eval.ResponseMatchMetric:       "ROUGE-1 F-measure of the final response against the expected one.",
	eval.JudgedMatchMetric:         "Share of final responses a judge model finds valid given the expected ones.",
	eval.RubricMetric:              "Share of rubrics a judge model finds the final responses meet.",
	eval.HallucinationMetric:       "Share of the final responses' sentences a judge model finds supported by the user's message and the tool results.",
	eval.ToolUseRubricMetric:       "Share of rubrics a judge model finds the tool calls and results of each invocation meet.",
	eval.TrajectoryRubricMetric:    "Share of rubrics a judge model finds the whole conversation meets.",
	eval.SimulatorQualityMetric:    "Share of a simulated user's messages a judge model finds follow the scenario's plan.",
	eval.TaskSuccessMetric:         "1 if a judge model finds the agent accomplished the user's goal over the conversation, else 0.",
	eval.MultiTurnTrajectoryMetric: "1 if a judge model finds the agent's course through the conversation sound, else 0.",
	eval.MultiTurnToolUseMetric:    "1 if a judge model finds the agent used its tools well throughout the conversation, else 0.",
	eval.SafetyMetric:              "Share of final responses a judge model finds safe.",
	eval.CoherenceMetric:           "Mean coherence of the final responses, rated 1 to 5 by a judge model.",
}

func (s *Server) metricsInfo(w http.ResponseWriter, r *http.Request) error {
	type interval struct {
		MinValue  float64 `json:"minValue"`
		OpenAtMin bool    `json:"openAtMin"`
		MaxValue  float64 `json:"maxValue"`
		OpenAtMax bool    `json:"openAtMax"`
	}
	type info struct {
		MetricName      string `json:"metricName"`
		Description     string `json:"description"`
		MetricValueInfo struct {
			Interval interval `json:"interval"`
		} `json:"metricValueInfo"`
	}
	out := []info{}
	reg := s.cfg.EvalMetrics
	if reg == nil {
		reg = eval.NewRegistry()
	}
	for _, name := range reg.Names() {
		i := info{MetricName: name, Description: metricDescriptions[name]}
		i.MetricValueInfo.Interval = interval{MinValue: 0, MaxValue: 1}
		if name == eval.CoherenceMetric {
			i.MetricValueInfo.Interval.MinValue, i.MetricValueInfo.Interval.MaxValue = 1, 5
		}
		out = append(out, i)
	}
	return writeJSON(w, http.StatusOK, map[string]any{"metricsInfo": out})
}
