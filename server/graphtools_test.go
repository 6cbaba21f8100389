package server_test

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/loomkit/loom/agent"
	"github.com/loomkit/loom/agent/llmagent"
	"github.com/loomkit/loom/model/scripted"
	"github.com/loomkit/loom/runner"
	"github.com/loomkit/loom/server"
	"github.com/loomkit/loom/session/memsession"
	"github.com/loomkit/loom/tool"
	"github.com/loomkit/loom/tool/agenttool"
	"github.com/loomkit/loom/tool/functiontool"
)

// namedToolset is a toolset the graph names without listing its tools.
type namedToolset struct{}

func (namedToolset) Name() string { return "remote_tools" }
func (namedToolset) Tools(context.Context) ([]tool.Tool, error) {
	panic("the graph must not list a toolset's tools")
}

// TestBuildGraphTools checks that an LLM agent's tools are in the graph as
// ADK draws them: build_graph lists them under the agent's "tools" (name,
// type "tool"; a toolset by its name), and the DOT drawing has a node for
// each, labelled with its kind, and an edge from the agent to it.
func TestBuildGraphTools(t *testing.T) {
	lookup, err := functiontool.New(functiontool.Config{Name: "lookup_order", Description: "Finds an order."},
		func(context.Context, tool.Context, struct{}) (map[string]any, error) { return nil, nil })
	if err != nil {
		t.Fatal(err)
	}
	helper, err := llmagent.New(llmagent.Config{Name: "summarizer", Model: scripted.NewSequence("m")})
	if err != nil {
		t.Fatal(err)
	}
	asHelper, err := agenttool.New(helper, nil)
	if err != nil {
		t.Fatal(err)
	}
	billing, err := llmagent.New(llmagent.Config{Name: "billing", Description: "bills", Model: scripted.NewSequence("m")})
	if err != nil {
		t.Fatal(err)
	}
	root, err := llmagent.New(llmagent.Config{Name: "assistant", Model: scripted.NewSequence("m"),
		Tools: []tool.Tool{lookup, asHelper}, Toolsets: []tool.Toolset{namedToolset{}}, SubAgents: []agent.Agent{billing}})
	if err != nil {
		t.Fatal(err)
	}
	r, err := runner.New(runner.Config{AppName: "assistant", Agent: root, Sessions: memsession.NewService()})
	if err != nil {
		t.Fatal(err)
	}
	f := newFixture(t, server.Config{Apps: []*runner.Runner{r}})

	rec := f.do(t, "GET", "/dev/apps/assistant/build_graph", "")
	var info struct {
		RootAgent struct {
			Tools     []map[string]any `json:"tools"`
			SubAgents []map[string]any `json:"sub_agents"`
		} `json:"root_agent"`
	}
	if err := json.Unmarshal(rec.Body.Bytes(), &info); err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, tl := range info.RootAgent.Tools {
		got = append(got, tl["name"].(string)+":"+tl["type"].(string))
	}
	if want := []string{"lookup_order:tool", "summarizer:tool", "remote_tools:tool"}; !slices.Equal(got, want) {
		t.Errorf("build_graph tools %v, want %v", got, want)
	}
	if len(info.RootAgent.SubAgents) != 1 || info.RootAgent.SubAgents[0]["tools"] != nil {
		t.Errorf("sub-agents %v: billing has no tools", info.RootAgent.SubAgents)
	}

	rec = f.do(t, "GET", "/dev/apps/assistant/build_graph_image", "")
	var drawings map[string]map[string]string
	if err := json.Unmarshal(rec.Body.Bytes(), &drawings); err != nil {
		t.Fatal(err)
	}
	dot := drawings[""]["dotSrc"]
	for _, want := range []string{
		`"lookup_order" [label="🔧 lookup_order" shape=box];`,
		`"summarizer" [label="🤖 summarizer" shape=box];`,
		`"remote_tools" [label="🔧 remote_tools" shape=box];`,
		`"assistant" -> "lookup_order";`,
		`"assistant" -> "summarizer";`,
		`"assistant" -> "remote_tools";`,
		`"assistant" -> "billing";`,
	} {
		if !strings.Contains(dot, want) {
			t.Errorf("drawing lacks %s:\n%s", want, dot)
		}
	}
}
