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

// transferTarget returns the agent a transfer recorded in an event's
// actions hands the conversation to. Whoever set the action (the transfer
// function, another tool, a callback), only this agent's targets are
// allowed: a transfer elsewhere is an error, as is an unknown name.
func (a *Agent) transferTarget(inv *agent.Invocation, name string) (agent.Agent, error) {
	targets := a.transferTargets(inv)
	for _, t := range targets {
		if t.Name() == name {
			return t, nil
		}
	}
	if inv.Tree().Find(name) == nil {
		return nil, fmt.Errorf("llmagent: %s: transfer to unknown agent %q", a.Name(), name)
	}
	return nil, fmt.Errorf("llmagent: %s: transfer to agent %q, which is not one of its transfer targets (%s)", a.Name(), name, targetNames(targets))
}

// transferInstruction is ADK's text telling the model whom it may hand the
// conversation to: each target's name and description in target order, the
// rule for when to call the transfer tool, the sorted list of valid names
// and, when the parent is a target, when to go back to it. The wording is
// the model contract ADK's recordings pin.
func transferInstruction(a *Agent, targets []agent.Agent, inv *agent.Invocation) string {
	var b strings.Builder
	b.WriteString("\nYou have a list of other agents to transfer to:\n\n")
	for i, t := range targets {
		if i > 0 {
			b.WriteString("\n")
		}
		fmt.Fprintf(&b, "\nAgent name: %s\nAgent description: %s\n", t.Name(), t.Description())
	}
	b.WriteString("\n\nIf you are the best to answer the question according to your description,\n" +
		"you can answer it.\n\n" +
		"If another agent is better for answering the question according to its\n" +
		"description, call `" + transferToolName + "` function to transfer the question to that\n" +
		"agent. When transferring, do not generate any text other than the function\n" +
		"call.\n\n" +
		"**NOTE**: the only available agents for `" + transferToolName + "` function are\n")
	names := make([]string, len(targets))
	for i, t := range targets {
		names[i] = "`" + t.Name() + "`"
	}
	sortStrings(names)
	b.WriteString(strings.Join(names, ", ") + ".\n")
	if p, ok := inv.Tree().Parent(a.Name()).(*Agent); ok && !a.cfg.DisallowTransferToParent {
		fmt.Fprintf(&b, "\nIf neither you nor the other agents are best for the question, transfer to your parent agent %s.\n", p.Name())
	}
	return b.String()
}

// identityInstruction is the line that tells the model which agent it is,
// in ADK's words: its name and, when it has one, its description.
func identityInstruction(a *Agent) string {
	s := `You are an agent. Your internal name is "` + a.Name() + `".`
	if d := a.Description(); d != "" {
		s += ` The description about you is "` + d + `".`
	}
	return s
}

// transferTool hands the conversation to another agent. It records the
// transfer in the response event's actions; the LLM agent then runs the
// target in the same invocation.
type transferTool struct {
	targets []agent.Agent
	// reason declares the optional transfer_reason argument.
	reason bool
}

// transferReasonArg is the optional argument that says why the model hands
// the conversation over. It stays in the function call, so the agent that
// takes over reads it in its history.
const transferReasonArg = "transfer_reason"

// transferReasonDescription describes transferReasonArg to the model.
const transferReasonDescription = "why the conversation is handed to that agent, in a short sentence for it to read."

func (transferTool) Name() string { return transferToolName }

// transferDescription is the description ADK gives the transfer function.
const transferDescription = `Transfer the question to another agent.

  This tool hands off control to another agent when it's more suitable to
  answer the user's question according to the agent's description.

  Note:
    For most use cases, you should use TransferToAgentTool instead of this
    function directly. TransferToAgentTool provides additional enum constraints
    that prevent LLMs from hallucinating invalid agent names.

  Args:
    agent_name: the agent name to transfer to.
  `

func (transferTool) Description() string { return transferDescription }

// Declaration is ADK's declaration of the transfer function: one required
// agent_name string limited to the targets' names (in target order), and
// no result; with reason set, also an optional transfer_reason string.
func (t transferTool) Declaration() *genai.FunctionDeclaration {
	names := make([]string, len(t.targets))
	for i, a := range t.targets {
		names[i] = a.Name()
	}
	props := map[string]*genai.Schema{"agent_name": {Type: genai.TypeString, Enum: names}}
	if t.reason {
		props[transferReasonArg] = &genai.Schema{Type: genai.TypeString, Description: transferReasonDescription}
	}
	return &genai.FunctionDeclaration{
		Name:        transferToolName,
		Description: transferDescription,
		Parameters: &genai.Schema{
			Type:       genai.TypeObject,
			Properties: props,
			Required:   []string{"agent_name"},
		},
		Response: &genai.Schema{Type: genai.TypeNULL},
	}
}

func (t transferTool) Run(_ context.Context, tc tool.Context, args map[string]any) (map[string]any, error) {
	name, _ := args["agent_name"].(string)
	if r, ok := args[transferReasonArg]; ok && r != nil {
		if _, isString := r.(string); !isString {
			return nil, fmt.Errorf("%s: %s must be a string, got %T", transferToolName, transferReasonArg, r)
		}
	}
	for _, a := range t.targets {
		if a.Name() == name {
			tc.Actions().TransferToAgent = name
			// ADK's transfer function returns nothing, which its function
			// tools report as a null result.
			return map[string]any{"result": nil}, nil
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
