// Package plugin provides global hooks that the runner applies to every
// invocation: around the run, the user message, every event, and every
// agent, model call and tool call of every agent.
//
// # Order
//
// For each hook point, plugins run in the order they were given to the
// runner, before the agents' own callbacks. A plugin hook that returns a
// value short-circuits: later plugins and the agent's own callback for that
// point are skipped, and the value is used (as the user message, the run's
// response, the model response, the tool result, ...).
//
// Hook points, in the order an invocation meets them:
//
//	OnUserMessage  the user message, before it is stored (may replace it)
//	BeforeRun      before the root agent runs (content ends the run early)
//	BeforeAgent    before each agent (content skips the agent)
//	ResumeAgent    instead of BeforeAgent, when an agent continues a resumed invocation (observes)
//	BeforeNode     before each attempt of a graph workflow's node (observes)
//	BeforeModel    before each model call (a response skips the model)
//	OnModelError   when a model call fails (a response recovers)
//	AfterModel     after each complete model response (may replace it)
//	BeforeTool     before each tool call (a result skips the tool)
//	OnToolError    when a tool fails (a result recovers)
//	AfterTool      after each tool call (may replace the result)
//	AfterNode      after each attempt of a node, with its route or failure (observes)
//	AfterAgent     after each agent (content is emitted as a response)
//	OnEvent        after each event is committed (may replace what the caller receives)
//	AfterAgents    when the agents have finished without error (an event to commit)
//	AfterRun       when the invocation has ended, even on error
//
// Plugins never write to the session themselves: the runner is the only
// writer. A plugin that adds to the log (compaction, in plugin/compaction)
// returns the event from AfterAgents and the runner commits it.
package plugin

import (
	"context"

	"google.golang.org/genai"

	"github.com/loomkit/loom/agent"
	"github.com/loomkit/loom/event"
)

// Plugin is a named set of global hooks. Any hook may be nil. A Plugin must
// be safe for concurrent use by many invocations.
type Plugin struct {
	// Name identifies the plugin in logs and errors.
	Name string
	// OnUserMessage sees the user message before it is stored; non-nil
	// content replaces it. State and artifacts it saves through cc are
	// committed with the user message.
	OnUserMessage func(ctx context.Context, cc *agent.CallbackContext, msg *genai.Content) (*genai.Content, error)
	// BeforeRun runs before the root agent; non-nil content is committed as
	// the root agent's response and the agents do not run. State it sets
	// through cc is committed with that response, or with an event of its
	// own.
	BeforeRun func(ctx context.Context, cc *agent.CallbackContext) (*genai.Content, error)
	// OnEvent sees every committed event; a non-nil event replaces the one
	// forwarded to the caller (storage keeps the original). The event it
	// sees is the committed one, which later model calls are built from:
	// a hook returns a changed copy (event.Event.Clone) rather than change
	// it.
	OnEvent func(ctx context.Context, inv *agent.Invocation, ev *event.Event) (*event.Event, error)
	// AfterAgents runs when the agents of an invocation have finished
	// without error. A non-nil event is committed by the runner as part of
	// the invocation (the caller does not receive it); an error, or a
	// failed commit, is the invocation's last error.
	AfterAgents func(ctx context.Context, inv *agent.Invocation) (*event.Event, error)
	// AfterRun runs when the invocation has ended, successfully or not.
	AfterRun func(ctx context.Context, inv *agent.Invocation)
	// Callbacks are the agent, model and tool hooks.
	agent.Callbacks
}

// Merge combines the agent, model and tool hooks of plugins, in order, into
// the global callbacks of an invocation. Their model hooks are read-only
// (agent.Callbacks.ReadOnlyModelHooks) if every plugin's are.
func Merge(plugins []*Plugin) agent.Callbacks {
	c := agent.Callbacks{ReadOnlyModelHooks: true}
	for _, p := range plugins {
		if !p.ReadOnlyModelHooks && (len(p.BeforeModel) > 0 || len(p.OnModelError) > 0) {
			c.ReadOnlyModelHooks = false
		}
		c.BeforeAgent = append(c.BeforeAgent, p.BeforeAgent...)
		c.AfterAgent = append(c.AfterAgent, p.AfterAgent...)
		c.BeforeModel = append(c.BeforeModel, p.BeforeModel...)
		c.AfterModel = append(c.AfterModel, p.AfterModel...)
		c.OnModelError = append(c.OnModelError, p.OnModelError...)
		c.BeforeTool = append(c.BeforeTool, p.BeforeTool...)
		c.AfterTool = append(c.AfterTool, p.AfterTool...)
		c.OnToolError = append(c.OnToolError, p.OnToolError...)
		c.ResumeAgent = append(c.ResumeAgent, p.ResumeAgent...)
		c.BeforeNode = append(c.BeforeNode, p.BeforeNode...)
		c.AfterNode = append(c.AfterNode, p.AfterNode...)
	}
	return c
}
