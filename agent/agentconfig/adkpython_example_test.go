package agentconfig_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/loomkit/loom/agent/agentconfig"
	"github.com/loomkit/loom/model"
	"github.com/loomkit/loom/model/scripted"
	"github.com/loomkit/loom/tool"
	"github.com/loomkit/loom/tool/functiontool"
)

// An Agent Config file written for ADK Python names its Python functions
// by module path (tools: - name: ma_llm.check_prime). It loads unchanged
// once a Go function is registered under that name.
func ExampleRegistry_comingFromADKPython() {
	dir, _ := os.MkdirTemp("", "ma_llm")
	defer os.RemoveAll(dir)
	_ = os.WriteFile(filepath.Join(dir, "root_agent.yaml"), []byte(`
agent_class: LlmAgent
model: gemini-2.5-flash
name: prime_agent
instruction: Call check_prime with a list of integers.
tools:
  - name: ma_llm.check_prime
`), 0o644)

	type primes struct {
		Nums []int `json:"nums"`
	}
	checkPrime, _ := functiontool.New(functiontool.Config{Name: "check_prime", Description: "Checks which numbers are prime."},
		func(_ context.Context, _ tool.Context, in primes) (map[string]any, error) {
			var out []int
			for _, n := range in.Nums {
				prime := n > 1
				for d := 2; d*d <= n; d++ {
					prime = prime && n%d != 0
				}
				if prime {
					out = append(out, n)
				}
			}
			return map[string]any{"primes": out}, nil
		})
	reg := agentconfig.NewRegistry().Tool("ma_llm.check_prime", checkPrime)

	app, err := agentconfig.Load(dir, &agentconfig.Options{
		Registry: reg,
		Model: func(name string) (model.LLM, error) {
			return scripted.New(name, func(context.Context, *model.Request) (scripted.Turn, error) { return scripted.Text("ok"), nil }), nil
		},
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer app.Close()
	fmt.Println(app.Root.Name())

	// Without the registration, the error names the reference to supply.
	_, err = agentconfig.Load(dir, &agentconfig.Options{Model: func(string) (model.LLM, error) { return nil, nil }})
	fmt.Println(err.(*agentconfig.Error).Field)
	// Output:
	// prime_agent
	// tools[0].name
}
