package agentconfig_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"google.golang.org/genai"

	"github.com/loomkit/loom/agent/agentconfig"
	"github.com/loomkit/loom/agent/graph"
	"github.com/loomkit/loom/model"
	"github.com/loomkit/loom/model/scripted"
	"github.com/loomkit/loom/runner"
	"github.com/loomkit/loom/session/memsession"
	"github.com/loomkit/loom/tool"
	"github.com/loomkit/loom/tool/functiontool"
)

// A graph workflow in ADK's YAML form: chains of node references from
// START, node files, and a node registered from Go code.
func ExampleLoad_workflow() {
	dir, _ := os.MkdirTemp("", "app")
	defer os.RemoveAll(dir)
	files := map[string]string{
		"root_agent.yaml": `
agent_class: Workflow
name: support
edges:
  - [START, classify, {refund: refunds.yaml, default: faq.yaml}]
  - [refunds.yaml, done.yaml]
  - [faq.yaml, done.yaml]
`,
		"refunds.yaml": "name: refunds\nmodel: m\ninstruction: You handle refunds.\n",
		"faq.yaml":     "agent_class: ToolNode\nname: faq\ntool_code: faq\nretry_config: {max_attempts: 3, initial_delay: 0.5}\ntimeout: 10\n",
		"done.yaml":    "agent_class: JoinNode\nname: done\n",
	}
	for name, text := range files {
		_ = os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644)
	}

	classify := graph.Func("classify", func(_ context.Context, nc *graph.Context, in string) (map[string]any, error) {
		if strings.Contains(in, "refund") {
			nc.SetRoute("refund")
		}
		return map[string]any{"question": in}, nil
	})
	type question struct {
		Question string `json:"question"`
	}
	faq, _ := functiontool.New(functiontool.Config{Name: "faq", Description: "Answers questions."},
		func(_ context.Context, _ tool.Context, q question) (map[string]any, error) {
			return map[string]any{"answer": "We open at nine."}, nil
		})
	app, err := agentconfig.Load(dir, &agentconfig.Options{
		Registry: agentconfig.NewRegistry().Node(classify).Tool("faq", faq),
		Model: func(name string) (model.LLM, error) {
			return scripted.New(name, func(context.Context, *model.Request) (scripted.Turn, error) {
				return scripted.Text("Your refund is on its way."), nil
			}), nil
		},
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer app.Close()

	r, _ := runner.New(runner.Config{AppName: "support", Agent: app.Root, Sessions: memsession.NewService(), AutoCreateSession: true})
	for _, text := range []string{"when do you open?", "I want a refund"} {
		events, err := r.RunSync(context.Background(), "u", text, genai.NewContentFromText(text, genai.RoleUser), nil)
		if err != nil {
			fmt.Println(err)
			return
		}
		fmt.Println(events[len(events)-1].Output)
	}

	// A mistake is reported at its file, line and field.
	_ = os.WriteFile(filepath.Join(dir, "root_agent.yaml"), []byte("agent_class: Workflow\nname: support\nedges:\n  - [START, clasify]\n"), 0o644)
	_, err = agentconfig.Load(dir, &agentconfig.Options{Registry: agentconfig.NewRegistry().Node(classify)})
	e := err.(*agentconfig.Error)
	fmt.Println(filepath.Base(e.File), e.Line, e.Field)
	// Output:
	// map[faq:map[answer:We open at nine.]]
	// map[refunds:Your refund is on its way.]
	// root_agent.yaml 4 edges[0][1]
}
