package provider_test

import (
	"context"
	"fmt"

	"github.com/loomkit/loom/model/provider"
)

func ExampleOpen() {
	env := map[string]string{"ANTHROPIC_API_KEY": "sk-ant-example"}
	llm, err := provider.Open(context.Background(), "claude-sonnet-4-5", &provider.Options{
		Getenv: func(k string) string { return env[k] },
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(llm.Name())

	// Local servers need no key.
	local, _ := provider.Open(context.Background(), "ollama/llama3.2", nil)
	fmt.Println(local.Name())
	// Output:
	// claude-sonnet-4-5
	// llama3.2
}

func ExampleDefaultModel() {
	env := map[string]string{"OPENAI_API_KEY": "sk-example"}
	name, ok := provider.DefaultModel(func(k string) string { return env[k] })
	fmt.Println(name, ok)
	// Output: openai/gpt-4o-mini true
}
