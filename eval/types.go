package eval

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"

	"google.golang.org/genai"

	"github.com/loomkit/loom/event"
)

// Set is an eval set: named eval cases, as in ADK's *.evalset.json files.
type Set struct {
	EvalSetID         string  `json:"eval_set_id" eval:"required"`
	Name              string  `json:"name,omitempty"`
	Description       string  `json:"description,omitempty"`
	EvalCases         []*Case `json:"eval_cases"`
	CreationTimestamp float64 `json:"creation_timestamp,omitempty"`
	Extra             Extra
}

// Case is one eval case: a conversation with the expected answers, or a
// scenario a simulated user plays out, and the session it starts from.
type Case struct {
	EvalID string `json:"eval_id" eval:"required"`
	// Conversation is the static conversation: the user's turns in order,
	// each with the expected response and tool uses.
	Conversation []*Invocation `json:"conversation,omitempty"`
	// ConversationScenario, instead of a conversation, has a simulated
	// user talk to the agent.
	ConversationScenario *Scenario     `json:"conversation_scenario,omitempty"`
	SessionInput         *SessionInput `json:"session_input,omitempty"`
	CreationTimestamp    float64       `json:"creation_timestamp,omitempty"`
	// Rubrics apply to every invocation of the case.
	Rubrics           []*Rubric      `json:"rubrics,omitempty"`
	FinalSessionState map[string]any `json:"final_session_state,omitempty"`
	Extra             Extra
}

// Invocation is one turn: the user's content, the agent's final response
// and what happened in between.
type Invocation struct {
	InvocationID      string            `json:"invocation_id,omitempty"`
	UserContent       *genai.Content    `json:"user_content" eval:"required"`
	FinalResponse     *genai.Content    `json:"final_response,omitempty"`
	IntermediateData  *IntermediateData `json:"intermediate_data,omitempty"`
	CreationTimestamp float64           `json:"creation_timestamp,omitempty"`
	// Rubrics apply to this invocation only.
	Rubrics []*Rubric `json:"rubrics,omitempty"`
	Extra   Extra
}

// IntermediateData is what an agent did before its final response: either
// the tool uses, tool responses and intermediate responses, or (ADK's
// other form) the invocation's events.
type IntermediateData struct {
	ToolUses              []*genai.FunctionCall     `json:"tool_uses,omitempty"`
	ToolResponses         []*genai.FunctionResponse `json:"tool_responses,omitempty"`
	IntermediateResponses []IntermediateResponse    `json:"intermediate_responses,omitempty"`
	InvocationEvents      []*InvocationEvent        `json:"invocation_events,omitempty"`
	Extra                 Extra
}

// InvocationEvent is an event of an invocation, reduced to its author and
// content.
type InvocationEvent struct {
	Author  string         `json:"author"`
	Content *genai.Content `json:"content,omitempty"`
	Extra   Extra
}

// IntermediateResponse is a response of a sub-agent before the final one.
// In JSON it is the pair [author, parts].
type IntermediateResponse struct {
	Author string
	Parts  []*genai.Part
}

// MarshalJSON writes the pair [author, parts].
func (r IntermediateResponse) MarshalJSON() ([]byte, error) {
	parts := r.Parts
	if parts == nil {
		parts = []*genai.Part{}
	}
	return json.Marshal([]any{r.Author, parts})
}

// UnmarshalJSON reads the pair [author, parts].
func (r *IntermediateResponse) UnmarshalJSON(data []byte) error {
	var pair []json.RawMessage
	if err := json.Unmarshal(data, &pair); err != nil || len(pair) != 2 {
		return errors.New("expected a pair [author, parts]")
	}
	if err := json.Unmarshal(pair[0], &r.Author); err != nil {
		return errors.New("expected the author as a string")
	}
	c, err := event.UnmarshalContent([]byte(`{"parts":` + string(pair[1]) + `}`))
	if err != nil {
		return err
	}
	r.Parts = c.Parts
	return nil
}

// ToolCalls returns the tool calls of either form of intermediate data.
func (d *IntermediateData) ToolCalls() []*genai.FunctionCall {
	if d == nil {
		return nil
	}
	if len(d.InvocationEvents) == 0 {
		return d.ToolUses
	}
	var calls []*genai.FunctionCall
	for _, e := range d.InvocationEvents {
		if e.Content == nil {
			continue
		}
		for _, p := range e.Content.Parts {
			if p != nil && p.FunctionCall != nil {
				calls = append(calls, p.FunctionCall)
			}
		}
	}
	return calls
}

// SessionInput is the session an eval case starts from.
type SessionInput struct {
	AppName string         `json:"app_name"`
	UserID  string         `json:"user_id"`
	State   map[string]any `json:"state,omitempty"`
	Extra   Extra
}

// Scenario is a conversation a simulated user plays out: the first user
// message, then a plan the simulator follows until it is done.
type Scenario struct {
	StartingPrompt   string `json:"starting_prompt" eval:"required"`
	ConversationPlan string `json:"conversation_plan" eval:"required"`
	Extra            Extra
}

// Rubric is one property a judge checks a response for.
type Rubric struct {
	RubricID      string         `json:"rubric_id" eval:"required"`
	RubricContent *RubricContent `json:"rubric_content" eval:"required"`
	Description   string         `json:"description,omitempty"`
	Type          string         `json:"type,omitempty"`
	Extra         Extra
}

// RubricContent is the property a rubric checks.
type RubricContent struct {
	TextProperty string `json:"text_property"`
	Extra        Extra
}

// Status is the outcome of a metric or a case, as ADK numbers it.
type Status int

// The statuses.
const (
	Passed       Status = 1
	Failed       Status = 2
	NotEvaluated Status = 3
)

// String gives ADK's name of the status.
func (s Status) String() string {
	switch s {
	case Passed:
		return "PASSED"
	case Failed:
		return "FAILED"
	case NotEvaluated:
		return "NOT_EVALUATED"
	}
	return fmt.Sprintf("Status(%d)", int(s))
}

// MatchType is how a tool trajectory is compared with the expected one.
type MatchType int

// The match types, numbered as ADK numbers them.
const (
	// Exact requires the same calls in the same order, nothing more.
	Exact MatchType = 0
	// InOrder requires the expected calls in order; others may come between.
	InOrder MatchType = 1
	// AnyOrder requires every expected call in any order; others may occur.
	AnyOrder MatchType = 2
)

var matchNames = []string{"EXACT", "IN_ORDER", "ANY_ORDER"}

// String gives ADK's name of the match type.
func (m MatchType) String() string {
	if m >= 0 && int(m) < len(matchNames) {
		return matchNames[m]
	}
	return fmt.Sprintf("MatchType(%d)", int(m))
}

// MarshalJSON writes the match type's name.
func (m MatchType) MarshalJSON() ([]byte, error) { return json.Marshal(m.String()) }

// UnmarshalJSON accepts the name (any case, '-' or ' ' for '_') or ADK's
// number.
func (m *MatchType) UnmarshalJSON(data []byte) error {
	var n int
	if json.Unmarshal(data, &n) == nil && n >= 0 && n < len(matchNames) {
		*m = MatchType(n)
		return nil
	}
	var s string
	if json.Unmarshal(data, &s) == nil {
		s = strings.NewReplacer("-", "_", " ", "_").Replace(strings.ToUpper(strings.TrimSpace(s)))
		for i, name := range matchNames {
			if s == name {
				*m = MatchType(i)
				return nil
			}
		}
	}
	return fmt.Errorf("unknown match type %s (want EXACT, IN_ORDER or ANY_ORDER)", data)
}

// JudgeOptions are the options of a metric's judge model.
type JudgeOptions struct {
	// JudgeModel names the judge model; empty means the evaluator's
	// default judge.
	JudgeModel string `json:"judge_model,omitempty"`
	// JudgeModelConfig is the judge's generation config, genai's
	// GenerateContentConfig as JSON; it is kept as given.
	JudgeModelConfig json.RawMessage `json:"judge_model_config,omitempty"`
	// NumSamples is how many times the judge is asked per invocation; the
	// verdicts are combined by majority. Zero means 5, as in ADK.
	NumSamples int `json:"num_samples,omitempty"`
	Extra      Extra
}

// Criterion configures a metric: its threshold and, depending on the
// metric, a match type, judge options or rubrics. In test_config.json a
// criterion is either an object or just its threshold.
type Criterion struct {
	Threshold    float64       `json:"threshold"`
	MatchType    *MatchType    `json:"match_type,omitempty"`
	JudgeOptions *JudgeOptions `json:"judge_model_options,omitempty"`
	Rubrics      []*Rubric     `json:"rubrics,omitempty"`
	// IncludeIntermediateResponsesInFinal has the rubric metrics judge the
	// intermediate responses of an invocation with its final response.
	IncludeIntermediateResponsesInFinal bool `json:"include_intermediate_responses_in_final,omitempty"`
	// EvaluateIntermediateNLResponses has hallucinations_v1 check the
	// intermediate responses too.
	EvaluateIntermediateNLResponses bool `json:"evaluate_intermediate_nl_responses,omitempty"`
	// StopSignal is what the simulated user says to end a conversation,
	// for per_turn_user_simulator_quality_v1; empty means [StopSignal].
	StopSignal string `json:"stop_signal,omitempty"`
	Extra      Extra

	bare bool // written as a bare threshold
}

func (c *Criterion) fromNumber(f float64) { *c = Criterion{Threshold: f, bare: true} }

func (c *Criterion) asNumber() (float64, bool) {
	return c.Threshold, c.bare && c.MatchType == nil && c.JudgeOptions == nil && c.Rubrics == nil && len(c.Extra) == 0 &&
		!c.IncludeIntermediateResponsesInFinal && !c.EvaluateIntermediateNLResponses && c.StopSignal == ""
}

// Metric names a metric with its criterion, as in ADK's run requests and
// results.
type Metric struct {
	MetricName string     `json:"metric_name" eval:"required"`
	Threshold  *float64   `json:"threshold,omitempty"`
	Criterion  *Criterion `json:"criterion,omitempty"`
	// CustomFunctionPath names the Python function that computes a custom
	// metric in ADK. Loom computes it with the Go scorer registered under
	// the metric's name.
	CustomFunctionPath string `json:"custom_function_path,omitempty"`
	Extra              Extra
}

// threshold returns the metric's threshold, from its criterion first.
func (m *Metric) threshold() float64 {
	if m.Criterion != nil {
		return m.Criterion.Threshold
	}
	if m.Threshold != nil {
		return *m.Threshold
	}
	return 0
}

// criterion returns the metric's criterion, made from its threshold when
// it has none.
func (m *Metric) criterion() *Criterion {
	if m.Criterion != nil {
		return m.Criterion
	}
	return &Criterion{Threshold: m.threshold()}
}

// MetricResult is a metric's score and status.
type MetricResult struct {
	MetricName string         `json:"metric_name" eval:"required"`
	Threshold  *float64       `json:"threshold"`
	Criterion  *Criterion     `json:"criterion,omitempty"`
	Score      *float64       `json:"score"`
	EvalStatus Status         `json:"eval_status" eval:"required"`
	Details    *ResultDetails `json:"details,omitempty"`
	Extra      Extra
}

// ResultDetails are a metric's explanations: the judge's verdict on each
// rubric.
type ResultDetails struct {
	RubricScores []*RubricScore `json:"rubric_scores,omitempty"`
	Extra        Extra
}

// RubricScore is a judge's verdict on one rubric.
type RubricScore struct {
	RubricID  string   `json:"rubric_id"`
	Rationale string   `json:"rationale,omitempty"`
	Score     *float64 `json:"score,omitempty"`
	Extra     Extra
}

// PerInvocation holds the metric results of one invocation, with the
// actual and expected invocations they compare.
type PerInvocation struct {
	ActualInvocation   *Invocation     `json:"actual_invocation" eval:"required"`
	ExpectedInvocation *Invocation     `json:"expected_invocation,omitempty"`
	EvalMetricResults  []*MetricResult `json:"eval_metric_results"`
	Extra              Extra
}

// CaseResult is the result of one run of an eval case.
type CaseResult struct {
	EvalSetFile                   string           `json:"eval_set_file,omitempty"`
	EvalSetID                     string           `json:"eval_set_id"`
	EvalID                        string           `json:"eval_id"`
	FinalEvalStatus               Status           `json:"final_eval_status" eval:"required"`
	OverallEvalMetricResults      []*MetricResult  `json:"overall_eval_metric_results"`
	EvalMetricResultPerInvocation []*PerInvocation `json:"eval_metric_result_per_invocation"`
	SessionID                     string           `json:"session_id"`
	// SessionDetails is the session the run produced, in ADK's JSON.
	SessionDetails json.RawMessage `json:"session_details"`
	UserID         string          `json:"user_id,omitempty"`
	// Efficiency is what the run took. ADK has no such member: its readers
	// ignore it.
	Efficiency *Efficiency `json:"efficiency,omitempty"`
	Extra      Extra
}

// Efficiency is what running a case took: the time the app spent on the
// case's user turns, the model calls it made and the tokens those calls
// reported in their usage metadata (zero when a model reports none). A
// simulated user's turns and a judge's calls are not counted.
type Efficiency struct {
	// DurationSeconds is the time from each user turn sent to the app's
	// last event of that turn, summed over the turns.
	DurationSeconds float64 `json:"duration_seconds"`
	// ModelCalls counts the app's model calls.
	ModelCalls int `json:"model_calls"`
	// PromptTokens, CandidatesTokens and TotalTokens sum the usage
	// metadata of those calls.
	PromptTokens     int64 `json:"prompt_tokens"`
	CandidatesTokens int64 `json:"candidates_tokens"`
	TotalTokens      int64 `json:"total_tokens"`
	Extra            Extra
}

// add counts one event of the app's.
func (e *Efficiency) add(ev *event.Event) {
	if !ev.LLMCall {
		return
	}
	e.ModelCalls++
	if u := ev.UsageMetadata; u != nil {
		e.PromptTokens += int64(u.PromptTokenCount)
		e.CandidatesTokens += int64(u.CandidatesTokenCount)
		e.TotalTokens += int64(u.TotalTokenCount)
	}
}

// SetResult is the result of running an eval set, as stored in ADK's
// *.evalset_result.json files.
type SetResult struct {
	EvalSetResultID   string        `json:"eval_set_result_id" eval:"required"`
	EvalSetResultName string        `json:"eval_set_result_name,omitempty"`
	EvalSetID         string        `json:"eval_set_id"`
	EvalCaseResults   []*CaseResult `json:"eval_case_results"`
	CreationTimestamp float64       `json:"creation_timestamp"`
	Extra             Extra
}

// Config is a test_config.json or eval_config.json: the criteria, by
// metric name, that an eval is judged by.
type Config struct {
	Criteria map[string]*Criterion `json:"criteria"`
	// CustomMetrics describe the metrics of Criteria that are custom code,
	// by metric name.
	CustomMetrics map[string]*CustomMetricConfig `json:"custom_metrics,omitempty"`
	// UserSimulatorConfig configures the simulated user of scenario cases.
	UserSimulatorConfig *SimulatorConfig `json:"user_simulator_config,omitempty"`
	Extra               Extra
}

// CustomMetricConfig describes a custom metric of a config: the code ADK
// computes it with, and what it measures.
type CustomMetricConfig struct {
	CodeConfig  *CodeConfig     `json:"code_config" eval:"required"`
	MetricInfo  json.RawMessage `json:"metric_info,omitempty"`
	Description string          `json:"description,omitempty"`
	Extra       Extra
}

// CodeConfig names a function by its import path.
type CodeConfig struct {
	Name  string `json:"name" eval:"required"`
	Extra Extra
}

// SimulatorConfig configures the simulated user.
type SimulatorConfig struct {
	// Type is the kind of simulator; empty and "llm_backed" are the one
	// Loom has, a model playing the user in text.
	Type string `json:"type,omitempty"`
	// Model names the simulator's model; empty means the evaluator's.
	Model string `json:"model,omitempty"`
	// MaxAllowedInvocations bounds the conversation; zero or less means 20.
	MaxAllowedInvocations int `json:"max_allowed_invocations,omitempty"`
	// CustomInstructions replaces the simulator's prompt. It holds the
	// placeholders {{ stop_signal }}, {{ conversation_plan }} and
	// {{ conversation_history }} (and optionally {{ persona }}, the
	// scenario's user_persona as JSON).
	CustomInstructions string `json:"custom_instructions,omitempty"`
	// ModelConfiguration is the simulator model's generation config,
	// genai's GenerateContentConfig as JSON.
	ModelConfiguration json.RawMessage `json:"model_configuration,omitempty"`
	Extra              Extra
}

// DefaultConfig is the configuration used when none is given, as in ADK:
// an exact tool trajectory and a response match of 0.8.
func DefaultConfig() *Config {
	return &Config{Criteria: map[string]*Criterion{
		TrajectoryMetric:    {Threshold: 1, bare: true},
		ResponseMatchMetric: {Threshold: 0.8, bare: true},
	}}
}

// Metrics returns the config's criteria as metrics, sorted by name.
func (c *Config) Metrics() []*Metric {
	names := make([]string, 0, len(c.Criteria))
	for n := range c.Criteria {
		names = append(names, n)
	}
	slices.Sort(names)
	out := make([]*Metric, 0, len(names))
	for _, n := range names {
		cr := c.Criteria[n]
		if cr == nil {
			cr = &Criterion{}
		}
		t := cr.Threshold
		m := &Metric{MetricName: n, Threshold: &t, Criterion: cr}
		if cm := c.CustomMetrics[n]; cm != nil && cm.CodeConfig != nil {
			m.CustomFunctionPath = cm.CodeConfig.Name
		}
		out = append(out, m)
	}
	return out
}
