// Package advisortool lets an agent consult another model mid-task: a tool
// (consult_advisor by default) that sends the agent's question, with any
// context it gives and the user's message of the turn, to an advisor model
// and returns its answer.
//
// Consultations are bounded per turn (per invocation) and per session.
// Each is recorded in session state, one key per consultation
// ("loom_advisor_calls:<tool name>:<n>", and the same under "temp:" for the
// turn), so that the session's count survives restarts, is shared by every
// server that serves the session, and stays exact when a model response
// holds several consultations. A consultation over budget does not reach
// the advisor: the model gets an error response saying which budget is
// spent.
package advisortool

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"

	"google.golang.org/genai"

	"github.com/loomkit/loom/model"
	"github.com/loomkit/loom/session"
	"github.com/loomkit/loom/tool"
)

// Defaults for zero fields of Config.
const (
	DefaultName            = "consult_advisor"
	DefaultPerTurn         = 3
	DefaultPerSession      = 20
	DefaultInstruction     = "You are an advisor consulted by another AI agent in the middle of a task. Answer its question directly and concisely, with the reasoning it needs to continue. You cannot call tools."
	defaultDescriptionHead = "Consult an advisor model on a hard question before you continue: a plan, a judgement, a check of your reasoning."
)

// StateKeyPrefix prefixes the state keys recording consultations.
const StateKeyPrefix = "loom_advisor_calls:"

// Config configures the tool.
type Config struct {
	// Name is the function name; empty means DefaultName.
	Name string
	// Description tells the model when to consult; empty means a generic
	// text followed by the budgets.
	Description string
	// Model is the advisor. Required.
	Model model.LLM
	// Instruction is the advisor's system instruction; empty means
	// DefaultInstruction.
	Instruction string
	// MaxPerTurn bounds consultations per invocation: zero means
	// DefaultPerTurn, negative means no bound.
	MaxPerTurn int
	// MaxPerSession bounds consultations per session: zero means
	// DefaultPerSession, negative means no bound.
	MaxPerSession int
	// Config is the generation config of the advisor's requests (its
	// system instruction is set from Instruction). It may be nil.
	Config *genai.GenerateContentConfig
}

// Tool is the advisor tool. It is safe for concurrent use. Create it with
// New.
type Tool struct {
	cfg Config
	mu  sync.Mutex
}

var _ tool.Function = (*Tool)(nil)

// New returns the tool.
func New(cfg Config) (*Tool, error) {
	if cfg.Model == nil {
		return nil, errors.New("advisortool: no advisor model")
	}
	if cfg.Name == "" {
		cfg.Name = DefaultName
	}
	if cfg.Instruction == "" {
		cfg.Instruction = DefaultInstruction
	}
	if cfg.MaxPerTurn == 0 {
		cfg.MaxPerTurn = DefaultPerTurn
	}
	if cfg.MaxPerSession == 0 {
		cfg.MaxPerSession = DefaultPerSession
	}
	if cfg.Description == "" {
		cfg.Description = defaultDescriptionHead + budgetText(cfg)
	}
	return &Tool{cfg: cfg}, nil
}

func budgetText(cfg Config) string {
	var parts []string
	if cfg.MaxPerTurn > 0 {
		parts = append(parts, fmt.Sprintf("%d per turn", cfg.MaxPerTurn))
	}
	if cfg.MaxPerSession > 0 {
		parts = append(parts, fmt.Sprintf("%d per conversation", cfg.MaxPerSession))
	}
	if len(parts) == 0 {
		return ""
	}
	return " Consultations are limited (" + strings.Join(parts, ", ") + "): ask only when it matters."
}

// Name implements tool.Tool.
func (t *Tool) Name() string { return t.cfg.Name }

// Description implements tool.Tool.
func (t *Tool) Description() string { return t.cfg.Description }

// Declaration implements tool.Function: a required question and an optional
// context, both strings.
func (t *Tool) Declaration() *genai.FunctionDeclaration {
	return &genai.FunctionDeclaration{
		Name:        t.cfg.Name,
		Description: t.cfg.Description,
		Parameters: &genai.Schema{
			Type: genai.TypeObject,
			Properties: map[string]*genai.Schema{
				"question": {Type: genai.TypeString, Description: "The question for the advisor, self-contained."},
				"context":  {Type: genai.TypeString, Description: "What the advisor needs to know to answer: findings so far, constraints, options considered."},
			},
			Required: []string{"question"},
		},
	}
}

// used returns how many of the first max consultation keys under prefix
// are set: consultation n is recorded under prefix + n, one key each, so
// that the records of calls that run at once and commit in one event add up
// instead of overwriting one another. The keys are set in order from 1, so
// a binary search finds the last.
func used(st StateReader, prefix string, max int) int {
	set := func(n int) bool {
		v, ok := st.Get(prefix + strconv.Itoa(n))
		return ok && v != nil
	}
	lo, hi := 0, max
	for lo < hi {
		mid := lo + (hi-lo+1)/2
		if set(mid) {
			lo = mid
		} else {
			hi = mid - 1
		}
	}
	return lo
}

// turnPrefix and sessionPrefix prefix the keys recording a turn's and a
// session's consultations.
func (t *Tool) turnPrefix() string    { return session.PrefixTemp + StateKeyPrefix + t.cfg.Name + ":" }
func (t *Tool) sessionPrefix() string { return StateKeyPrefix + t.cfg.Name + ":" }

// reserve records a consultation against the budgets in the call's state
// delta, or returns the error response when a budget is spent. The lock
// makes the check and the record one step: calls of one model response run
// at once, and each reads the records the others staged (state written in
// an invocation is read at once, CONFORMANCE R5).
func (t *Tool) reserve(tc tool.Context) map[string]any {
	st := tc.State()
	t.mu.Lock()
	defer t.mu.Unlock()
	if max := t.cfg.MaxPerTurn; max > 0 {
		if used(st, t.turnPrefix(), max) >= max {
			return map[string]any{"error": fmt.Sprintf("advisor budget spent: %d consultations per turn; continue without the advisor", max)}
		}
	}
	if max := t.cfg.MaxPerSession; max > 0 {
		if used(st, t.sessionPrefix(), max) >= max {
			return map[string]any{"error": fmt.Sprintf("advisor budget spent: %d consultations per conversation; continue without the advisor", max)}
		}
	}
	if max := t.cfg.MaxPerTurn; max > 0 {
		st.Set(t.turnPrefix()+strconv.Itoa(used(st, t.turnPrefix(), max)+1), true)
	}
	if max := t.cfg.MaxPerSession; max > 0 {
		st.Set(t.sessionPrefix()+strconv.Itoa(used(st, t.sessionPrefix(), max)+1), true)
	}
	return nil
}

// StateReader reads state: a tool.State, or a *session.Session.
type StateReader interface {
	Get(key string) (any, bool)
}

// Used returns the number of consultations a session's state records for
// the tool, up to its session budget.
func (t *Tool) Used(st StateReader) int {
	if t.cfg.MaxPerSession <= 0 {
		return 0
	}
	return used(st, t.sessionPrefix(), t.cfg.MaxPerSession)
}

// Run implements tool.Function.
func (t *Tool) Run(ctx context.Context, tc tool.Context, args map[string]any) (map[string]any, error) {
	q, _ := args["question"].(string)
	if strings.TrimSpace(q) == "" {
		return nil, errors.New("question must be a non-empty string")
	}
	extra, _ := args["context"].(string)
	if c, ok := args["context"]; ok && c != nil {
		if _, isString := c.(string); !isString {
			return nil, fmt.Errorf("context must be a string, got %T", c)
		}
	}
	if res := t.reserve(tc); res != nil {
		return res, nil
	}
	req := &model.Request{Config: &genai.GenerateContentConfig{}}
	if t.cfg.Config != nil {
		c := *t.cfg.Config
		req.Config = &c
	}
	req.Config.SystemInstruction = genai.NewContentFromText(t.cfg.Instruction, genai.RoleUser)
	var b strings.Builder
	if uc := tc.UserContent(); uc != nil {
		var user []string
		for _, p := range uc.Parts {
			if p != nil && p.Text != "" {
				user = append(user, p.Text)
			}
		}
		if len(user) > 0 {
			b.WriteString("The user asked the agent:\n" + strings.Join(user, "\n") + "\n\n")
		}
	}
	if extra != "" {
		b.WriteString("Context from the agent:\n" + extra + "\n\n")
	}
	b.WriteString("The agent's question:\n" + q)
	req.Contents = []*genai.Content{genai.NewContentFromText(b.String(), genai.RoleUser)}
	var answer string
	var usage *genai.GenerateContentResponseUsageMetadata
	for resp, err := range t.cfg.Model.Generate(ctx, req, false) {
		if err != nil {
			return nil, fmt.Errorf("advisor %s: %w", t.cfg.Model.Name(), err)
		}
		if resp.Partial {
			continue
		}
		answer += resp.Text()
		if resp.UsageMetadata != nil {
			usage = resp.UsageMetadata
		}
	}
	out := map[string]any{"advice": answer}
	if usage != nil {
		out["advisor_usage"] = map[string]any{
			"model":             t.cfg.Model.Name(),
			"prompt_tokens":     usage.PromptTokenCount,
			"candidates_tokens": usage.CandidatesTokenCount,
			"total_tokens":      usage.TotalTokenCount,
		}
	}
	return out, nil
}
