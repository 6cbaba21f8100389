package llmagent_test

import (
	"context"
	"strings"
	"testing"

	"google.golang.org/genai"

	"github.com/loomkit/loom/agent"
	"github.com/loomkit/loom/agent/llmagent"
	"github.com/loomkit/loom/model/scripted"
	"github.com/loomkit/loom/tool"
)

// TestA17TransferReason: the transfer function accepts an optional
// transfer_reason; the target agent reads it in its history; the
// declaration lists it (optional) only with DeclareTransferReason, and keeps
// ADK's single agent_name otherwise; a reason that is not a string is an
// error response and no transfer.
func TestA17TransferReason(t *testing.T) {
	for _, declare := range []bool{false, true} {
		rootModel := scripted.NewSequence("root-m", scripted.Call("transfer_to_agent",
			map[string]any{"agent_name": "billing", "transfer_reason": "the user disputes a charge"}))
		billingModel := scripted.NewSequence("billing-m", scripted.Text("Let me look at that charge."))
		billing := mustAgent(t, llmagent.Config{Name: "billing", Description: "handles bills", Model: billingModel})
		root := mustAgent(t, llmagent.Config{Name: "root", Model: rootModel, SubAgents: []agent.Agent{billing}, DeclareTransferReason: declare})
		f := newFixture(t, root, nil, nil)
		evs := f.run(t, "I was charged twice", nil)
		if len(evs) != 3 || evs[1].Actions.TransferToAgent != "billing" || evs[2].Author != "billing" {
			t.Fatalf("declare=%v: transfer with a reason did not hand over: %d events", declare, len(evs))
		}
		var seen bool
		for _, c := range billingModel.Requests()[0].Contents {
			for _, p := range c.Parts {
				if strings.Contains(p.Text, "the user disputes a charge") {
					seen = true
				}
			}
		}
		if !seen {
			t.Errorf("declare=%v: the target's history does not carry the transfer reason", declare)
		}
		decl := rootModel.Requests()[0].Config.Tools[0].FunctionDeclarations[0]
		_, declared := decl.Parameters.Properties["transfer_reason"]
		if declared != declare {
			t.Errorf("declare=%v: transfer_reason in the declaration: %v", declare, declared)
		}
		if len(decl.Parameters.Required) != 1 || decl.Parameters.Required[0] != "agent_name" {
			t.Errorf("declare=%v: required = %v, want only agent_name", declare, decl.Parameters.Required)
		}
	}

	rootModel := scripted.NewSequence("root-m",
		scripted.Call("transfer_to_agent", map[string]any{"agent_name": "billing", "transfer_reason": 42}),
		scripted.Text("I will answer myself."))
	billing := mustAgent(t, llmagent.Config{Name: "billing", Model: scripted.NewSequence("billing-m", scripted.Text("billing"))})
	f := newFixture(t, mustAgent(t, llmagent.Config{Name: "root", Model: rootModel, SubAgents: []agent.Agent{billing}}), nil, nil)
	evs := f.run(t, "hi", nil)
	resp := evs[1].FunctionResponses()
	if len(resp) != 1 || evs[1].Actions.TransferToAgent != "" || !strings.Contains(resp[0].Response["error"].(string), "transfer_reason must be a string") {
		t.Fatalf("non-string reason: response %+v, transfer %q", resp, evs[1].Actions.TransferToAgent)
	}
	if last := evs[len(evs)-1]; last.Author != "root" {
		t.Fatalf("after a refused transfer the answer came from %s", last.Author)
	}
}

// TestA17TransferOnlyToTargets: a transfer set in a tool's actions to an
// agent of the tree that is not one of the agent's transfer targets (here
// a sub-agent's own sub-agent) ends the invocation with an error naming
// the targets; that agent never runs.
func TestA17TransferOnlyToTargets(t *testing.T) {
	deepModel := scripted.NewSequence("deep-m", scripted.Text("deep answered"))
	deep := mustAgent(t, llmagent.Config{Name: "deep", Model: deepModel})
	mid := mustAgent(t, llmagent.Config{Name: "mid", Model: scripted.NewSequence("mid-m", scripted.Text("mid")), SubAgents: []agent.Agent{deep}})
	jump := fnTool{name: "jump", run: func(_ context.Context, tc tool.Context, _ map[string]any) (map[string]any, error) {
		tc.Actions().TransferToAgent = "deep"
		return map[string]any{"ok": true}, nil
	}}
	rootModel := scripted.NewSequence("root-m", scripted.Call("jump", nil))
	root := mustAgent(t, llmagent.Config{Name: "root", Model: rootModel, Tools: []tool.Tool{jump}, SubAgents: []agent.Agent{mid}})
	f := newFixture(t, root, nil, nil)
	_, err := f.r.RunSync(context.Background(), user, sid, genai.NewContentFromText("go", genai.RoleUser), nil)
	if err == nil || !strings.Contains(err.Error(), `"deep", which is not one of its transfer targets (mid)`) {
		t.Fatalf("err = %v, want a refused transfer naming the targets", err)
	}
	if n := len(deepModel.Requests()); n != 0 {
		t.Fatalf("the agent outside the targets ran %d model calls", n)
	}
}
