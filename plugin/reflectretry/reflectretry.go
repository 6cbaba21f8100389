// Package reflectretry is ADK's reflect-and-retry tool plugin: when a tool
// fails, the model gets, instead of a bare error, a structured response with
// the error, the arguments it used and guidance to reflect and try a
// different call, for a bounded number of consecutive failures per tool.
//
// The response the model reads has ADK's keys and wording
// (response_type "ERROR_HANDLED_BY_REFLECT_AND_RETRY_PLUGIN", error_type,
// error_details, retry_count, reflection_guidance), so that recorded
// conversations and prompts tuned for ADK carry over.
//
// Failures are counted per tool, per invocation by default (ScopeGlobal
// counts across invocations); a success of a tool resets its count. Past
// the limit the plugin steps aside and the error takes its ordinary path
// (an error response, CONFORMANCE R8), or, with AnswerWhenExceeded, the
// model is told not to call the tool again.
//
// For malformed model answers, WrapModel wraps a model so that an answer
// the provider reports as a malformed function call, or one that does not
// parse or match the request's response schema, is sent back to the model
// with the problem, a bounded number of times.
package reflectretry

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"

	"github.com/loomkit/loom/agent"
	"github.com/loomkit/loom/plugin"
	"github.com/loomkit/loom/tool"
)

// ResponseType marks a result written by this plugin; a result that
// carries it is never treated as a failure again.
const ResponseType = "ERROR_HANDLED_BY_REFLECT_AND_RETRY_PLUGIN"

// DefaultMaxRetries is ADK's default retry limit.
const DefaultMaxRetries = 3

// Scope says over which calls failures are counted.
type Scope int

const (
	// ScopeInvocation counts a tool's failures within one invocation.
	ScopeInvocation Scope = iota
	// ScopeGlobal counts them across every invocation the plugin sees.
	ScopeGlobal
)

// Config configures the plugin.
type Config struct {
	// Name is the plugin's name; empty means "reflect_retry_tool_plugin".
	Name string
	// MaxRetries is the number of consecutive failures of a tool answered
	// with guidance. Zero means DefaultMaxRetries; a negative value means
	// none (every failure takes its ordinary path, or gets the final
	// guidance with AnswerWhenExceeded).
	MaxRetries int
	// AnswerWhenExceeded answers a failure past the limit with guidance not
	// to call the tool again, instead of the ordinary error response (ADK's
	// throw_exception_if_retry_exceeded=False).
	AnswerWhenExceeded bool
	// Scope is ScopeInvocation (the default) or ScopeGlobal.
	Scope Scope
	// ExtractError, if set, finds a failure in a successful result (for
	// tools that report errors as {"status": "error", ...}); a non-nil
	// error is handled as if the tool had returned it.
	ExtractError func(ctx context.Context, tc tool.Context, t tool.Tool, args, result map[string]any) error
}

// New returns the plugin.
func New(cfg Config) *plugin.Plugin {
	if cfg.Name == "" {
		cfg.Name = "reflect_retry_tool_plugin"
	}
	if cfg.MaxRetries == 0 {
		cfg.MaxRetries = DefaultMaxRetries
	}
	if cfg.MaxRetries < 0 {
		cfg.MaxRetries = 0
	}
	r := &retrier{cfg: cfg, counts: map[string]map[string]int{}}
	p := &plugin.Plugin{Name: cfg.Name}
	p.OnToolError = []agent.OnToolErrorCallback{r.onError}
	p.AfterTool = []agent.AfterToolCallback{r.after}
	p.AfterRun = func(_ context.Context, inv *agent.Invocation) { r.forget(inv.ID()) }
	return p
}

// globalScope is the counters' key under ScopeGlobal.
const globalScope = "\x00global"

type retrier struct {
	cfg    Config
	mu     sync.Mutex
	counts map[string]map[string]int // scope key → tool name → consecutive failures
}

func (r *retrier) scope(tc tool.Context) string {
	if r.cfg.Scope == ScopeGlobal {
		return globalScope
	}
	return tc.InvocationID()
}

func (r *retrier) onError(_ context.Context, tc tool.Context, t tool.Tool, args map[string]any, err error) (map[string]any, error) {
	return r.handle(tc, t, args, err), nil
}

func (r *retrier) after(ctx context.Context, tc tool.Context, t tool.Tool, args, result map[string]any) (map[string]any, error) {
	if result["response_type"] == ResponseType {
		return nil, nil
	}
	if r.cfg.ExtractError != nil {
		if err := r.cfg.ExtractError(ctx, tc, t, args, result); err != nil {
			if res := r.handle(tc, t, args, err); res != nil {
				return res, nil
			}
			return nil, nil
		}
	}
	r.mu.Lock()
	delete(r.counts[r.scope(tc)], t.Name())
	r.mu.Unlock()
	return nil, nil
}

// handle counts the failure and returns the guidance, or nil past the limit
// when the error takes its ordinary path.
func (r *retrier) handle(tc tool.Context, t tool.Tool, args map[string]any, err error) map[string]any {
	key := r.scope(tc)
	r.mu.Lock()
	m := r.counts[key]
	if m == nil {
		m = map[string]int{}
		r.counts[key] = m
	}
	m[t.Name()]++
	n := m[t.Name()]
	r.mu.Unlock()
	if n <= r.cfg.MaxRetries {
		return failure(err, n, reflection(t.Name(), args, err, n, r.cfg.MaxRetries))
	}
	if r.cfg.AnswerWhenExceeded {
		return failure(err, r.cfg.MaxRetries, exceeded(t.Name(), args, err, r.cfg.MaxRetries))
	}
	return nil
}

// forget drops an invocation's counters when it ends.
func (r *retrier) forget(invocationID string) {
	if r.cfg.Scope == ScopeGlobal {
		return
	}
	r.mu.Lock()
	delete(r.counts, invocationID)
	r.mu.Unlock()
}

// failure is ADK's tool failure response.
func failure(err error, retry int, guidance string) map[string]any {
	return map[string]any{
		"response_type":       ResponseType,
		"error_type":          errorType(err),
		"error_details":       err.Error(),
		"retry_count":         retry,
		"reflection_guidance": guidance,
	}
}

// errorType names the kind of error, as ADK names an exception's class:
// the Go type of the error inside fmt's wrapping, or "ToolError" for a
// plain error that has no type of its own.
func errorType(err error) string {
	for {
		t := fmt.Sprintf("%T", err)
		u := errors.Unwrap(err)
		if t != "*fmt.wrapError" || u == nil {
			if t == "*errors.errorString" || t == "*fmt.wrapError" || t == "*fmt.wrapErrors" {
				return "ToolError"
			}
			return t
		}
		err = u
	}
}

func argsSummary(args map[string]any) string {
	var b strings.Builder
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(args); err != nil {
		return fmt.Sprint(args)
	}
	return strings.TrimSuffix(b.String(), "\n")
}

func reflection(name string, args map[string]any, err error, retry, max int) string {
	return "The call to tool `" + name + "` failed.\n\n" +
		"**Error Details:**\n```\n" + err.Error() + "\n```\n\n" +
		"**Tool Arguments Used:**\n```json\n" + argsSummary(args) + "\n```\n\n" +
		"**Reflection Guidance:**\n" +
		fmt.Sprintf("This is retry attempt **%d of %d**. ", retry, max) +
		"Analyze the error and the arguments you provided. Do not repeat the exact same call. Consider the following before your next attempt:\n\n" +
		"1.  **Invalid Parameters**: Does the error suggest that one or more arguments are incorrect, badly formatted, or missing? Review the tool's schema and your arguments.\n" +
		"2.  **State or Preconditions**: Did a previous step fail or not produce the necessary state/resource for this tool to succeed?\n" +
		"3.  **Alternative Approach**: Is this the right tool for the job? Could another tool or a different sequence of steps achieve the goal?\n" +
		"4.  **Simplify the Task**: Can you break the problem down into smaller, simpler steps?\n" +
		"5.  **Wrong Function Name**: Does the error indicates the tool is not found? Please check again and only use available tools.\n\n" +
		"Formulate a new plan based on your analysis and try a corrected or different approach."
}

func exceeded(name string, args map[string]any, err error, max int) string {
	return fmt.Sprintf("The tool `%s` has failed consecutively %d times and the retry limit has been exceeded.\n\n", name, max) +
		"**Last Error:**\n```\n" + err.Error() + "\n```\n\n" +
		"**Last Arguments Used:**\n```json\n" + argsSummary(args) + "\n```\n\n" +
		"**Final Instruction:**\n" +
		"**Do not attempt to use the `" + name + "` tool again for this task.** You must now try a different approach. " +
		"Acknowledge the failure and devise a new strategy, potentially using other available tools or informing the user that the task cannot be completed."
}
