package llmagent_test

import (
	"encoding/json"
	"slices"
	"testing"

	"github.com/loomkit/loom/agent"
	"github.com/loomkit/loom/agent/llmagent"
	"github.com/loomkit/loom/model/scripted"
	"github.com/loomkit/loom/tool"
)

// TestA14IdentityInstruction pins ADK's identity line and the order of a
// request's system instruction: global instruction, the agent's
// instruction, then the identity, joined by blank lines, in one text
// (CONFORMANCE A14).
func TestA14IdentityInstruction(t *testing.T) {
	m := scripted.NewSequence("m", scripted.Text("ok"))
	a := mustAgent(t, llmagent.Config{Name: "helper", Description: "Helps with things.", Model: m,
		Instruction: "Be brief.\n", GlobalInstruction: "Speak English."})
	newFixture(t, a, nil, nil).run(t, "hi", nil)
	want := "Speak English.\n\nBe brief.\n\n\nYou are an agent. Your internal name is \"helper\". The description about you is \"Helps with things.\"."
	if got := systemTexts(m.Requests()[0]); len(got) != 1 || got[0] != want {
		t.Errorf("system instruction = %q, want %q", got, want)
	}

	// Without a description or an instruction, the identity is all.
	m2 := scripted.NewSequence("m", scripted.Text("ok"))
	newFixture(t, mustAgent(t, llmagent.Config{Name: "bare", Model: m2}), nil, nil).run(t, "hi", nil)
	want = `You are an agent. Your internal name is "bare".`
	if got := systemTexts(m2.Requests()[0]); len(got) != 1 || got[0] != want {
		t.Errorf("system instruction = %q, want %q", got, want)
	}
}

// TestA15TransferInstruction pins ADK's transfer text and the
// transfer_to_agent declaration, for a sub-agent that may go back to its
// parent and to a peer (CONFORMANCE A15).
func TestA15TransferInstruction(t *testing.T) {
	rootModel := scripted.NewSequence("root-m", scripted.Call("transfer_to_agent", map[string]any{"agent_name": "math"}))
	mathModel := scripted.NewSequence("math-m", scripted.Text("4"))
	math := mustAgent(t, llmagent.Config{Name: "math", Description: "Does sums.", Model: mathModel, Instruction: "Add."})
	art := mustAgent(t, llmagent.Config{Name: "art", Description: "Draws.", Model: scripted.NewSequence("art-m")})
	root := mustAgent(t, llmagent.Config{Name: "root", Description: "Routes.", Model: rootModel, SubAgents: []agent.Agent{math, art}})
	f := newFixture(t, root, nil, nil)
	evs := f.run(t, "2+2?", nil)

	wantRoot := "You are an agent. Your internal name is \"root\". The description about you is \"Routes.\".\n\n" +
		"\nYou have a list of other agents to transfer to:\n\n" +
		"\nAgent name: math\nAgent description: Does sums.\n\n" +
		"\nAgent name: art\nAgent description: Draws.\n\n\n" +
		"If you are the best to answer the question according to your description,\nyou can answer it.\n\n" +
		"If another agent is better for answering the question according to its\n" +
		"description, call `transfer_to_agent` function to transfer the question to that\n" +
		"agent. When transferring, do not generate any text other than the function\ncall.\n\n" +
		"**NOTE**: the only available agents for `transfer_to_agent` function are\n`art`, `math`.\n"
	if got := systemTexts(rootModel.Requests()[0]); len(got) != 1 || got[0] != wantRoot {
		t.Errorf("root system instruction:\n got %q\nwant %q", got, wantRoot)
	}
	wantMath := "Add.\n\nYou are an agent. Your internal name is \"math\". The description about you is \"Does sums.\".\n\n" +
		"\nYou have a list of other agents to transfer to:\n\n" +
		"\nAgent name: root\nAgent description: Routes.\n\n" +
		"\nAgent name: art\nAgent description: Draws.\n\n\n" +
		"If you are the best to answer the question according to your description,\nyou can answer it.\n\n" +
		"If another agent is better for answering the question according to its\n" +
		"description, call `transfer_to_agent` function to transfer the question to that\n" +
		"agent. When transferring, do not generate any text other than the function\ncall.\n\n" +
		"**NOTE**: the only available agents for `transfer_to_agent` function are\n`art`, `root`.\n\n" +
		"If neither you nor the other agents are best for the question, transfer to your parent agent root.\n"
	if got := systemTexts(mathModel.Requests()[0]); len(got) != 1 || got[0] != wantMath {
		t.Errorf("sub-agent system instruction:\n got %q\nwant %q", got, wantMath)
	}

	tools := rootModel.Requests()[0].Config.Tools
	if len(tools) != 1 || len(tools[0].FunctionDeclarations) != 1 {
		t.Fatalf("tools = %+v", tools)
	}
	got, _ := json.Marshal(tools[0].FunctionDeclarations[0])
	want := `{"description":"Transfer the question to another agent.\n\n  This tool hands off control to another agent when it's more suitable to\n  answer the user's question according to the agent's description.\n\n  Note:\n    For most use cases, you should use TransferToAgentTool instead of this\n    function directly. TransferToAgentTool provides additional enum constraints\n    that prevent LLMs from hallucinating invalid agent names.\n\n  Args:\n    agent_name: the agent name to transfer to.\n  ","name":"transfer_to_agent","parameters":{"properties":{"agent_name":{"enum":["math","art"],"type":"STRING"}},"required":["agent_name"],"type":"OBJECT"},"response":{"type":"NULL"}}`
	if string(got) != want {
		t.Errorf("declaration:\n got %s\nwant %s", got, want)
	}

	// The transfer returns ADK's null result, which the sub-agent reads
	// as the parent's call and result rendered as Python writes them.
	if r := evs[1].FunctionResponses(); len(r) != 1 || len(r[0].Response) != 1 || r[0].Response["result"] != nil {
		t.Errorf("transfer result = %+v", r)
	}
	var texts []string
	for _, c := range mathModel.Requests()[0].Contents {
		for _, p := range c.Parts {
			texts = append(texts, p.Text)
		}
	}
	wantTexts := []string{"2+2?",
		"For context:", "[root] called tool `transfer_to_agent` with parameters: {'agent_name': 'math'}",
		"For context:", "[root] `transfer_to_agent` tool returned result: {'result': None}"}
	if !slices.Equal(texts, wantTexts) {
		t.Errorf("sub-agent contents = %q, want %q", texts, wantTexts)
	}
}

// TestA15ToolOrder checks that declarations keep the order the agent lists
// its tools in, after the transfer tool, as ADK sends them.
func TestA15ToolOrder(t *testing.T) {
	m := scripted.NewSequence("m", scripted.Text("ok"))
	sub := mustAgent(t, llmagent.Config{Name: "sub", Model: scripted.NewSequence("s")})
	a := mustAgent(t, llmagent.Config{Name: "a", Model: m, SubAgents: []agent.Agent{sub},
		Tools: []tool.Tool{fnTool{name: "zeta"}, fnTool{name: "alpha"}, fnTool{name: "mid"}}})
	newFixture(t, a, nil, nil).run(t, "hi", nil)
	var names []string
	for _, d := range m.Requests()[0].Config.Tools[0].FunctionDeclarations {
		names = append(names, d.Name)
	}
	if want := []string{"transfer_to_agent", "zeta", "alpha", "mid"}; !slices.Equal(names, want) {
		t.Errorf("declarations = %q, want %q", names, want)
	}
}
