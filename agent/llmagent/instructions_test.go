package llmagent_test

import (
	"context"
	"strings"
	"testing"

	"google.golang.org/genai"

	"github.com/loomkit/loom/agent"
	"github.com/loomkit/loom/agent/llmagent"
	"github.com/loomkit/loom/model"
	"github.com/loomkit/loom/model/scripted"
	"github.com/loomkit/loom/tool"
	"github.com/loomkit/loom/tool/functiontool"
)

func systemTexts(req *model.Request) []string {
	var out []string
	if req.Config == nil || req.Config.SystemInstruction == nil {
		return nil
	}
	for _, p := range req.Config.SystemInstruction.Parts {
		out = append(out, p.Text)
	}
	return out
}

// TestGlobalInstruction checks that the root agent's global instruction,
// templated with state, reaches every LLM agent in the tree, before each
// agent's own instruction, and that a sub-agent's global instruction is
// ignored.
func TestGlobalInstruction(t *testing.T) {
	childModel := scripted.NewSequence("m", scripted.Turn{Text: "child answer"})
	child := mustAgent(t, llmagent.Config{Name: "child", Model: childModel, Instruction: "You are the child.",
		GlobalInstruction: "not the root: ignored"})
	rootModel := scripted.NewSequence("m", scripted.Turn{Calls: []*genai.FunctionCall{{Name: "transfer_to_agent", Args: map[string]any{"agent_name": "child"}}}})
	root := mustAgent(t, llmagent.Config{Name: "root", Model: rootModel, Instruction: "You are the root.",
		GlobalInstruction: "Always answer in {lang}.", SubAgents: []agent.Agent{child}})
	f := newFixture(t, root, nil, map[string]any{"lang": "French"})
	f.run(t, "hi", nil)

	rootSys := systemTexts(rootModel.Requests()[0])
	if len(rootSys) != 1 || !strings.HasPrefix(rootSys[0], "Always answer in French.\n\nYou are the root.") {
		t.Errorf("root system instruction = %q", rootSys)
	}
	childSys := systemTexts(childModel.Requests()[0])
	if len(childSys) != 1 || !strings.HasPrefix(childSys[0], "Always answer in French.\n\nYou are the child.") {
		t.Errorf("child system instruction = %q", childSys)
	}
	if strings.Contains(childSys[0], "ignored") {
		t.Errorf("a sub-agent's global instruction was used: %q", childSys[0])
	}
}

// TestStaticInstruction checks that a static instruction is the start of
// the system instruction, sent as is and followed by the agent's identity,
// identical across calls, while the
// templated instruction moves to a user content before the latest user
// turn.
func TestStaticInstruction(t *testing.T) {
	m := scripted.NewSequence("m", scripted.Turn{Text: "one"}, scripted.Turn{Text: "two"})
	a := mustAgent(t, llmagent.Config{Name: "a", Model: m,
		StaticInstruction: genai.NewContentFromText("Static {not templated}.", genai.RoleUser),
		Instruction:       "Turn for {name}."})
	f := newFixture(t, a, nil, map[string]any{"name": "Ada"})
	f.run(t, "first", nil)
	f.run(t, "second", nil)
	reqs := m.Requests()
	for i, req := range reqs {
		sys := systemTexts(req)
		if len(sys) != 2 || sys[0] != "Static {not templated}." || sys[1] != `You are an agent. Your internal name is "a".` {
			t.Errorf("request %d: system instruction = %q, want the static text, then the identity", i, sys)
		}
	}
	c := reqs[1].Contents
	if n := len(c); n != 4 || c[n-2].Role != genai.RoleUser || c[n-2].Parts[0].Text != "Turn for Ada." ||
		c[n-1].Parts[0].Text != "second" || c[0].Parts[0].Text != "first" {
		for _, x := range c {
			t.Logf("%s: %q", x.Role, x.Parts[0].Text)
		}
		t.Fatalf("contents of the second request are not history, dynamic instruction, user turn")
	}
}

// TestStaticInstructionKeepsToolPairs: with a static instruction, the
// templated instruction goes before the user's message, not between a
// function call and its response in the next step of the tool loop.
func TestStaticInstructionKeepsToolPairs(t *testing.T) {
	m := scripted.NewSequence("m", scripted.Call("echo", map[string]any{"v": "x"}), scripted.Text("done"))
	echo, err := functiontool.New(functiontool.Config{Name: "echo", Description: "Echoes v."},
		func(_ context.Context, _ tool.Context, args struct {
			V string `json:"v"`
		}) (string, error) {
			return args.V, nil
		})
	if err != nil {
		t.Fatal(err)
	}
	a := mustAgent(t, llmagent.Config{Name: "a", Model: m, Tools: []tool.Tool{echo},
		StaticInstruction: genai.NewContentFromText("Static.", genai.RoleUser),
		Instruction:       "Be brief."})
	f := newFixture(t, a, nil, nil)
	f.run(t, "hi", nil)
	reqs := m.Requests()
	if len(reqs) != 2 {
		t.Fatalf("%d requests, want 2", len(reqs))
	}
	c := reqs[1].Contents
	var got []string
	for _, x := range c {
		switch p := x.Parts[0]; {
		case p.FunctionCall != nil:
			got = append(got, "call")
		case p.FunctionResponse != nil:
			got = append(got, "response")
		default:
			got = append(got, p.Text)
		}
	}
	if strings.Join(got, "|") != "Be brief.|hi|call|response" {
		t.Fatalf("second request contents %q, want the instruction before the user turn and the call next to its response", got)
	}
}
