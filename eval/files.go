package eval

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/loomkit/loom/event"
	"github.com/loomkit/loom/internal/evaljson"
	"github.com/loomkit/loom/model"
	"google.golang.org/genai"
)

// File name suffixes of the documents.
const (
	SetFileSuffix    = ".evalset.json"
	TestFileSuffix   = ".test.json"
	ResultFileSuffix = ".evalset_result.json"
)

// ReadSetFile reads an eval set file in any of the forms ADK reads,
// whatever the file is named, told apart by content as ADK tells them:
//   - an eval set object (ADK's *.evalset.json form, which ADK's own
//     *.test.json fixtures hold too);
//   - ADK's older list of cases, [{name, data, initial_session}], each data a
//     list of turns;
//   - the old *.test.json list of turns (query, expected_tool_use,
//     reference), which becomes a set of one case named after the file, with
//     the initial state of an initial.session.json beside it.
//
// Errors name the file and, where it applies, the case and field.
func ReadSetFile(path string) (*Set, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var s *Set
	if bytes.HasPrefix(bytes.TrimSpace(data), []byte("[")) {
		s, err = parseOldForms(path, data)
	} else {
		s, err = ParseSet(data)
	}
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return s, nil
}

// ParseSet parses an eval set in ADK's JSON (either key style) and checks
// it.
func ParseSet(data []byte) (*Set, error) {
	var s Set
	if err := decode(data, &s); err != nil {
		return nil, err
	}
	if err := s.Validate(); err != nil {
		return nil, err
	}
	return &s, nil
}

// Validate checks what the JSON shape alone does not: case ids are unique,
// and each case has exactly one of a conversation and a scenario.
func (s *Set) Validate() error {
	seen := map[string]bool{}
	for i, c := range s.EvalCases {
		if c == nil {
			return &FieldError{Path: fmt.Sprintf("eval_cases[%d]", i), Err: errors.New("expected an object")}
		}
		where := fmt.Sprintf("eval_cases[%d] (eval case %q)", i, c.EvalID)
		if seen[c.EvalID] {
			return &FieldError{Path: where + ".eval_id", Err: errors.New("duplicate eval case id")}
		}
		seen[c.EvalID] = true
		if (c.Conversation == nil) == (c.ConversationScenario == nil) {
			return &FieldError{Path: where, Err: errors.New("needs exactly one of conversation and conversation_scenario")}
		}
		for j, inv := range c.Conversation {
			if inv == nil {
				return &FieldError{Path: fmt.Sprintf("%s.conversation[%d]", where, j), Err: errors.New("expected an object")}
			}
		}
	}
	return nil
}

// Case returns the case with the id, or nil.
func (s *Set) Case(id string) *Case {
	for _, c := range s.EvalCases {
		if c.EvalID == id {
			return c
		}
	}
	return nil
}

// WriteSetFile writes the set to path in ADK's file form.
func WriteSetFile(path string, s *Set) error {
	data, err := s.MarshalJSON()
	if err != nil {
		return err
	}
	return writeFileAtomic(path, indent(data))
}

// oldTurn is one turn of the old forms.
type oldTurn struct {
	Query           *string `json:"query"`
	ExpectedToolUse []struct {
		ToolName  *string        `json:"tool_name"`
		ToolInput map[string]any `json:"tool_input"`
	} `json:"expected_tool_use"`
	ExpectedIntermediateAgentResponses []struct {
		Author string `json:"author"`
		Text   string `json:"text"`
	} `json:"expected_intermediate_agent_responses"`
	Reference string `json:"reference"`
}

// oldCase is one case of ADK's older list of cases.
type oldCase struct {
	Name           *string           `json:"name"`
	Data           []json.RawMessage `json:"data"`
	InitialSession *oldSession       `json:"initial_session"`
}

// oldSession is the initial session of the old forms.
type oldSession struct {
	State   map[string]any `json:"state"`
	AppName string         `json:"app_name"`
	UserID  string         `json:"user_id"`
}

// setName is the id a set read from an old-form file gets: the file name
// without its suffix.
func setName(path string) string {
	name := filepath.Base(path)
	for _, suffix := range []string{SetFileSuffix, TestFileSuffix, ".json"} {
		if strings.HasSuffix(name, suffix) {
			return strings.TrimSuffix(name, suffix)
		}
	}
	return name
}

// parseOldForms reads a JSON list: ADK's list of cases when its first
// entry has a name or data member, else a list of turns.
func parseOldForms(path string, data []byte) (*Set, error) {
	var raws []json.RawMessage
	if err := json.Unmarshal(data, &raws); err != nil {
		return nil, fmt.Errorf("an old-form eval file must be a list of turns or of cases: %w", evaljson.Simplify(err))
	}
	name := setName(path)
	if len(raws) > 0 {
		var probe map[string]json.RawMessage
		if json.Unmarshal(raws[0], &probe) == nil {
			_, hasName := probe["name"]
			_, hasData := probe["data"]
			if hasName || hasData {
				s, err := parseCaseList(name, raws)
				if err != nil {
					return nil, err
				}
				return s, s.Validate()
			}
		}
	}
	c, err := parseTurns(name, "", raws)
	if err != nil {
		return nil, err
	}
	if b, err := os.ReadFile(filepath.Join(filepath.Dir(path), "initial.session.json")); err == nil {
		var init oldSession
		if err := json.Unmarshal(b, &init); err != nil {
			return nil, fmt.Errorf("initial.session.json: %w", evaljson.Simplify(err))
		}
		c.SessionInput = &SessionInput{AppName: init.AppName, UserID: init.UserID, State: init.State}
	}
	return &Set{EvalSetID: name, EvalCases: []*Case{c}, CreationTimestamp: event.ToSeconds(time.Now())}, nil
}

// parseCaseList reads ADK's older list of cases, [{name, data,
// initial_session}], as ADK converts it: each entry a case, an empty
// initial session none.
func parseCaseList(name string, raws []json.RawMessage) (*Set, error) {
	now := event.ToSeconds(time.Now())
	s := &Set{EvalSetID: name, Name: name, EvalCases: []*Case{}, CreationTimestamp: now}
	for i, raw := range raws {
		where := fmt.Sprintf("[%d]", i)
		var oc oldCase
		if err := json.Unmarshal(raw, &oc); err != nil {
			return nil, &FieldError{Path: where, Err: evaljson.Simplify(err)}
		}
		if oc.Name == nil {
			return nil, &FieldError{Path: where + ".name", Err: errors.New("missing")}
		}
		if oc.Data == nil {
			return nil, &FieldError{Path: where + ".data", Err: errors.New("missing")}
		}
		c, err := parseTurns(*oc.Name, where+".data", oc.Data)
		if err != nil {
			return nil, err
		}
		c.CreationTimestamp = now
		if in := oc.InitialSession; in != nil && (in.State != nil || in.AppName != "" || in.UserID != "") {
			c.SessionInput = &SessionInput{AppName: in.AppName, UserID: in.UserID, State: in.State}
		}
		s.EvalCases = append(s.EvalCases, c)
	}
	return s, nil
}

// parseTurns reads a list of old-form turns as the conversation of a case
// named name; where locates the list in errors.
func parseTurns(name, where string, raws []json.RawMessage) (*Case, error) {
	c := &Case{EvalID: name, Conversation: []*Invocation{}}
	for i, raw := range raws {
		at := fmt.Sprintf("%s[%d]", where, i)
		var t oldTurn
		if err := json.Unmarshal(raw, &t); err != nil {
			return nil, &FieldError{Path: at, Err: evaljson.Simplify(err)}
		}
		if t.Query == nil {
			return nil, &FieldError{Path: at + ".query", Err: errors.New("missing")}
		}
		inv := &Invocation{
			InvocationID:  fmt.Sprintf("%s-%d", name, i),
			UserContent:   genai.NewContentFromText(*t.Query, genai.RoleUser),
			FinalResponse: genai.NewContentFromText(t.Reference, genai.RoleModel),
			IntermediateData: &IntermediateData{
				ToolUses: []*genai.FunctionCall{},
			},
		}
		for j, u := range t.ExpectedToolUse {
			if u.ToolName == nil {
				return nil, &FieldError{Path: fmt.Sprintf("%s.expected_tool_use[%d].tool_name", at, j), Err: errors.New("missing")}
			}
			inv.IntermediateData.ToolUses = append(inv.IntermediateData.ToolUses, &genai.FunctionCall{Name: *u.ToolName, Args: u.ToolInput})
		}
		for _, r := range t.ExpectedIntermediateAgentResponses {
			inv.IntermediateData.IntermediateResponses = append(inv.IntermediateData.IntermediateResponses,
				IntermediateResponse{Author: r.Author, Parts: []*genai.Part{genai.NewPartFromText(r.Text)}})
		}
		c.Conversation = append(c.Conversation, inv)
	}
	return c, nil
}

// WriteTestFile writes a set of one static case in the old *.test.json
// form. Only what that form holds is written: queries, expected tool uses,
// intermediate responses as text, and references.
func WriteTestFile(path string, s *Set) error {
	if len(s.EvalCases) != 1 || s.EvalCases[0].Conversation == nil {
		return errors.New("the old test file form holds exactly one case with a conversation")
	}
	type use struct {
		ToolName  string         `json:"tool_name"`
		ToolInput map[string]any `json:"tool_input"`
	}
	type resp struct {
		Author string `json:"author"`
		Text   string `json:"text"`
	}
	type turn struct {
		Query                              string `json:"query"`
		ExpectedToolUse                    []use  `json:"expected_tool_use"`
		ExpectedIntermediateAgentResponses []resp `json:"expected_intermediate_agent_responses"`
		Reference                          string `json:"reference"`
	}
	turns := []turn{}
	for _, inv := range s.EvalCases[0].Conversation {
		t := turn{Query: textOf(inv.UserContent), Reference: textOf(inv.FinalResponse), ExpectedToolUse: []use{}, ExpectedIntermediateAgentResponses: []resp{}}
		for _, c := range inv.IntermediateData.ToolCalls() {
			t.ExpectedToolUse = append(t.ExpectedToolUse, use{ToolName: c.Name, ToolInput: c.Args})
		}
		if inv.IntermediateData != nil {
			for _, r := range inv.IntermediateData.IntermediateResponses {
				t.ExpectedIntermediateAgentResponses = append(t.ExpectedIntermediateAgentResponses, resp{r.Author, textOf(&genai.Content{Parts: r.Parts})})
			}
		}
		turns = append(turns, t)
	}
	data, err := json.MarshalIndent(turns, "", "  ")
	if err != nil {
		return err
	}
	return writeFileAtomic(path, append(data, '\n'))
}

// ReadConfig reads a test_config.json or eval_config.json, in any form ADK
// reads: criteria as thresholds or as objects, custom metrics, a user
// simulator config. Missing criteria are none, as in ADK; a file with keys
// but none of an eval config's is refused, since it would score nothing.
func ReadConfig(path string) (*Config, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var c Config
	if err := decode(data, &c); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if c.Criteria == nil && c.CustomMetrics == nil && c.UserSimulatorConfig == nil && len(c.Extra) > 0 {
		// Keys, but none of an eval config's: another file, or a metric
		// list in a form ADK does not read. Running it would score nothing.
		return nil, fmt.Errorf("%s: not an eval config: it holds none of criteria, custom_metrics and user_simulator_config (it holds %s)",
			path, strings.Join(slices.Sorted(maps.Keys(c.Extra)), ", "))
	}
	if c.Criteria == nil {
		c.Criteria = map[string]*Criterion{}
	}
	if err := c.Validate(); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return &c, nil
}

// Validate checks what the JSON shape alone does not: every criterion and
// custom metric is an object or a threshold, judge and simulator model
// configs are genai generation configs, and the user simulator is one Loom
// has, with custom instructions that hold the placeholders they must.
func (c *Config) Validate() error {
	for name, cr := range c.Criteria {
		if cr == nil {
			return &FieldError{Path: "criteria." + name, Err: errors.New("expected a threshold or an object")}
		}
		if _, err := judgeConfig(cr); err != nil {
			return &FieldError{Path: "criteria." + name, Err: err}
		}
	}
	for name, cm := range c.CustomMetrics {
		if cm == nil {
			return &FieldError{Path: "custom_metrics." + name, Err: errors.New("expected an object")}
		}
	}
	sc := c.UserSimulatorConfig
	if sc == nil {
		return nil
	}
	if sc.Type != "" && sc.Type != "llm_backed" {
		return &FieldError{Path: "user_simulator_config.type", Err: fmt.Errorf("%q is not supported: Loom's simulated user is a model writing text (\"llm_backed\")", sc.Type)}
	}
	if _, err := genConfig(sc.ModelConfiguration); err != nil {
		return &FieldError{Path: "user_simulator_config.model_configuration", Err: err}
	}
	if sc.CustomInstructions != "" {
		for _, name := range []string{"stop_signal", "conversation_plan", "conversation_history"} {
			if !placeholder(name).MatchString(sc.CustomInstructions) {
				return &FieldError{Path: "user_simulator_config.custom_instructions", Err: fmt.Errorf("must hold the placeholder {{ %s }}", name)}
			}
		}
	}
	return nil
}

// ParseResult parses an eval set result. Besides a JSON object it accepts
// the form ADK's local result files have: the object's JSON as a JSON
// string.
func ParseResult(data []byte) (*SetResult, error) {
	data = bytes.TrimSpace(data)
	if bytes.HasPrefix(data, []byte(`"`)) {
		var inner string
		if err := json.Unmarshal(data, &inner); err != nil {
			return nil, err
		}
		data = []byte(inner)
	}
	var r SetResult
	if err := decode(data, &r); err != nil {
		return nil, err
	}
	return &r, nil
}

// ReadResultFile reads an *.evalset_result.json file.
func ReadResultFile(path string) (*SetResult, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	r, err := ParseResult(data)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return r, nil
}

// WriteResultFile writes a result the way ADK's local result files hold
// it (the result's JSON as a JSON string), so ADK's tools read it too.
func WriteResultFile(path string, r *SetResult) error {
	data, err := r.MarshalJSON()
	if err != nil {
		return err
	}
	quoted, err := json.Marshal(string(data))
	if err != nil {
		return err
	}
	return writeFileAtomic(path, append(quoted, '\n'))
}

func writeFileAtomic(path string, data []byte) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), ".tmp-*")
	if err != nil {
		return err
	}
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		os.Remove(tmp.Name())
		return err
	}
	if err := tmp.Close(); err != nil {
		os.Remove(tmp.Name())
		return err
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		os.Remove(tmp.Name())
		return err
	}
	return nil
}

// textOf joins the text parts of content with newlines, as ADK's metrics
// read a response. Thoughts are left out.
func textOf(c *genai.Content) string { return model.Text(c, "\n") }
