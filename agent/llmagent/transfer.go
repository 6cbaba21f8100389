package llmagent

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"google.golang.org/genai"

	"github.com/loomkit/loom/agent"
	"github.com/loomkit/loom/tool"
)

const transferToolName = "transfer_to_agent"

// transferTargets returns the agents this agent may hand the conversation
// to: its sub-agents and, when its parent is an LLM agent, the parent and
// its peers (unless disallowed). A workflow parent is never a target:
// transferring to it would restart the workflow.
func (a *Agent) transferTargets(inv *agent.Invocation) []agent.Agent {
	targets := slices.Clone(a.cfg.SubAgents)
	tree := inv.Tree()
	if tree == nil {
		return targets
	}
	parent, llmParent := tree.Parent(a.Name()).(*Agent)
	if !llmParent {
		return targets
	}
	if !a.cfg.DisallowTransferToParent {
		targets = append(targets, parent)
	}
	if !a.cfg.DisallowTransferToPeers {
		for _, peer := range agent.SubAgents(parent) {
			if peer.Name() != a.Name() {
				targets = append(targets, peer)
			}
		}
	}
	return targets
}

func transferInstruction(a *Agent, targets []agent.Agent, inv *agent.Invocation) string {
	var b strings.Builder
	fmt.Fprintf(&b, "You are agent %q.", a.Name())
	if a.Description() != "" {
		fmt.Fprintf(&b, " Your role: %s", a.Description())
	}
	b.WriteString("\n\nOther agents you can hand the conversation to:\n")
	for _, t := range targets {
		fmt.Fprintf(&b, "- %s: %s\n", t.Name(), t.Description())
	}
	fmt.Fprintf(&b, "\nIf another agent is better suited to answer, call the function `%s` with its name as `agent_name`. "+
		"Otherwise answer the user yourself.", transferToolName)
	if p, ok := inv.Tree().Parent(a.Name()).(*Agent); ok && !a.cfg.DisallowTransferToParent {
		fmt.Fprintf(&b, " If none of you fits the request, transfer back to your parent agent %q.", p.Name())
	}
	return b.String()
}

// transferTool hands the conversation to another agent. It records the
// transfer in the response event's actions; the LLM agent then runs the
// target in the same invocation.
type transferTool struct{ targets []agent.Agent }

func (transferTool) Name() string { return transferToolName }

func (transferTool) Description() string {
	return "Transfer the conversation to another agent better suited to answer the user."
}

func (t transferTool) Declaration() *genai.FunctionDeclaration {
	names := make([]string, len(t.targets))
	for i, a := range t.targets {
		names[i] = a.Name()
	}
	return &genai.FunctionDeclaration{
		Name:        transferToolName,
		Description: t.Description(),
		ParametersJsonSchema: map[string]any{
			"type": "object",
			"properties": map[string]any{
				"agent_name": map[string]any{"type": "string", "description": "the name of the agent to transfer to", "enum": names},
			},
			"required": []string{"agent_name"},
		},
	}
}

func (t transferTool) Run(_ context.Context, tc tool.Context, args map[string]any) (map[string]any, error) {
	name, _ := args["agent_name"].(string)
	for _, a := range t.targets {
		if a.Name() == name {
			tc.Actions().TransferToAgent = name
			return map[string]any{}, nil
		}
	}
	return nil, fmt.Errorf("cannot transfer to agent %q; valid targets: %s", name, targetNames(t.targets))
}

func targetNames(targets []agent.Agent) string {
	names := make([]string, len(targets))
	for i, a := range targets {
		names[i] = a.Name()
	}
	return strings.Join(names, ", ")
}
