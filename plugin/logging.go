package plugin

import (
	"context"
	"log/slog"
	"time"

	"google.golang.org/genai"

	"github.com/loomkit/loom/agent"
	"github.com/loomkit/loom/event"
	"github.com/loomkit/loom/model"
	"github.com/loomkit/loom/tool"
)

// Logging returns a plugin that logs every step of every invocation to
// logger (slog.Default() if nil): user messages, agents, model calls with
// token usage, tool calls with their outcome, graph workflow node attempts
// with their route or error, events, and the end of the run.
// It never changes anything.
func Logging(logger *slog.Logger) *Plugin {
	if logger == nil {
		logger = slog.Default()
	}
	attrs := func(inv *agent.Invocation) slog.Attr {
		s := inv.Session()
		return slog.Group("invocation", "id", inv.ID(), "app", s.AppName(), "user", s.UserID(), "session", s.ID())
	}
	return &Plugin{
		Name: "logging",
		OnUserMessage: func(ctx context.Context, cc *agent.CallbackContext, msg *genai.Content) (*genai.Content, error) {
			logger.LogAttrs(ctx, slog.LevelInfo, "user message", attrs(cc.Invocation()), slog.Int("parts", len(msg.Parts)))
			return nil, nil
		},
		OnEvent: func(ctx context.Context, inv *agent.Invocation, ev *event.Event) (*event.Event, error) {
			logger.LogAttrs(ctx, slog.LevelDebug, "event", attrs(inv), slog.String("id", ev.ID), slog.String("author", ev.Author),
				slog.Bool("final", ev.IsFinalResponse()), slog.Int("calls", len(ev.FunctionCalls())))
			return nil, nil
		},
		AfterRun: func(ctx context.Context, inv *agent.Invocation) {
			logger.LogAttrs(ctx, slog.LevelInfo, "run finished", attrs(inv))
		},
		Callbacks: agent.Callbacks{
			BeforeAgent: []agent.BeforeAgentCallback{func(ctx context.Context, cc *agent.CallbackContext) (*genai.Content, error) {
				logger.LogAttrs(ctx, slog.LevelInfo, "agent start", attrs(cc.Invocation()), slog.String("agent", cc.AgentName()))
				return nil, nil
			}},
			AfterAgent: []agent.AfterAgentCallback{func(ctx context.Context, cc *agent.CallbackContext) (*genai.Content, error) {
				logger.LogAttrs(ctx, slog.LevelInfo, "agent end", attrs(cc.Invocation()), slog.String("agent", cc.AgentName()))
				return nil, nil
			}},
			BeforeModel: []agent.BeforeModelCallback{func(ctx context.Context, cc *agent.CallbackContext, req *model.Request) (*model.Response, error) {
				logger.LogAttrs(ctx, slog.LevelInfo, "model call", attrs(cc.Invocation()), slog.String("agent", cc.AgentName()),
					slog.String("model", req.Model), slog.Int("contents", len(req.Contents)))
				return nil, nil
			}},
			AfterModel: []agent.AfterModelCallback{func(ctx context.Context, cc *agent.CallbackContext, resp *model.Response) (*model.Response, error) {
				logger.LogAttrs(ctx, slog.LevelInfo, "model response", responseAttrs(attrs(cc.Invocation()), cc.AgentName(), resp)...)
				return nil, nil
			}},
			OnModelError: []agent.OnModelErrorCallback{func(ctx context.Context, cc *agent.CallbackContext, req *model.Request, err error) (*model.Response, error) {
				logger.LogAttrs(ctx, slog.LevelError, "model error", attrs(cc.Invocation()), slog.String("agent", cc.AgentName()), slog.Any("error", err))
				return nil, nil
			}},
			BeforeTool: []agent.BeforeToolCallback{func(ctx context.Context, tc tool.Context, t tool.Tool, args map[string]any) (map[string]any, error) {
				logger.LogAttrs(ctx, slog.LevelInfo, "tool call", slog.String("tool", t.Name()), slog.String("call_id", tc.FunctionCallID()),
					slog.String("invocation", tc.InvocationID()), slog.Time("at", time.Now()))
				return nil, nil
			}},
			OnToolError: []agent.OnToolErrorCallback{func(ctx context.Context, tc tool.Context, t tool.Tool, args map[string]any, err error) (map[string]any, error) {
				logger.LogAttrs(ctx, slog.LevelWarn, "tool error", slog.String("tool", t.Name()), slog.String("call_id", tc.FunctionCallID()), slog.Any("error", err))
				return nil, nil
			}},
			ResumeAgent: []agent.ResumeAgentCallback{func(ctx context.Context, cc *agent.CallbackContext) {
				logger.LogAttrs(ctx, slog.LevelInfo, "agent resumed", attrs(cc.Invocation()), slog.String("agent", cc.AgentName()))
			}},
			AfterNode: []agent.AfterNodeCallback{func(ctx context.Context, inv *agent.Invocation, a agent.NodeAttempt, o agent.NodeOutcome) {
				level, at := nodeAttrs(attrs(inv), a, o)
				logger.LogAttrs(ctx, level, "node attempt", at...)
			}},
			ReadOnlyModelHooks: true,
		},
	}
}

// responseAttrs are the attributes of the log line of an agent's model
// response: its finish reason, token usage and error.
func responseAttrs(inv slog.Attr, agentName string, resp *model.Response) []slog.Attr {
	a := []slog.Attr{inv, slog.String("agent", agentName), slog.String("finish", string(resp.FinishReason))}
	if u := resp.UsageMetadata; u != nil {
		a = append(a, slog.Int("prompt_tokens", int(u.PromptTokenCount)), slog.Int("output_tokens", int(u.CandidatesTokenCount)))
	}
	if resp.ErrorCode != "" {
		a = append(a, slog.String("error_code", resp.ErrorCode), slog.String("error", resp.ErrorMessage))
	}
	return a
}

// nodeAttrs are the level and attributes of the log line of a graph
// workflow node's attempt: a warning for a failed one.
func nodeAttrs(inv slog.Attr, a agent.NodeAttempt, o agent.NodeOutcome) (slog.Level, []slog.Attr) {
	level := slog.LevelInfo
	at := []slog.Attr{inv, slog.String("path", a.Path), slog.Int("attempt", a.Attempt), slog.Int("max_attempts", a.MaxAttempts)}
	switch {
	case o.Err != nil:
		level = slog.LevelWarn
		at = append(at, slog.Any("error", o.Err))
	case o.Paused:
		at = append(at, slog.Bool("paused", true))
	case o.Route != "":
		at = append(at, slog.String("route", o.Route))
	}
	return level, at
}
