package cli

import (
	"context"
	"fmt"
	"time"

	"github.com/loomkit/loom/agent"
	"github.com/loomkit/loom/model"
	"github.com/loomkit/loom/model/provider"
	"github.com/loomkit/loom/model/retry"
)

// modelChoice is the model the applications built from constructors get:
// llm, or each application's offline model when llm is nil.
type modelChoice struct {
	llm  model.LLM
	desc string
}

// chooseModel applies --model, then API keys in the environment, then the
// offline models.
func chooseModel(ctx context.Context, env Env, name string, timeout time.Duration) (*modelChoice, error) {
	if name == "" {
		name = defaultModel(env.Getenv)
	}
	if name == "" {
		return &modelChoice{desc: "offline scripted models (no API key set; pass --model to choose one)"}, nil
	}
	llm, err := openModel(ctx, name, env.Getenv, timeout)
	if err != nil {
		return nil, fmt.Errorf("model %s: %w", name, err)
	}
	return &modelChoice{llm: llm, desc: name}, nil
}

// defaultModel returns the default model of the first provider whose API
// key is set (Gemini, then OpenAI, then Anthropic), or "".
func defaultModel(getenv func(string) string) string {
	name, _ := provider.DefaultModel(getenv)
	return name
}

// openModel opens a model by name (see provider.Open for the naming rules)
// whose attempts are bounded by timeout (--model-timeout).
func openModel(ctx context.Context, name string, getenv func(string) string, timeout time.Duration) (model.LLM, error) {
	return provider.Open(ctx, name, &provider.Options{Getenv: getenv, Retry: &retry.Policy{Timeout: timeout}})
}

// build returns the root agent of app under the model choice.
func (c *modelChoice) build(app App) (agent.Agent, string, error) {
	if app.Agent != nil {
		return app.Agent, "its own model", nil
	}
	if app.New == nil {
		return nil, "", fmt.Errorf("app %s: neither Agent nor New is set", app.Name)
	}
	llm, desc := c.llm, c.desc
	if llm == nil {
		if app.Offline == nil {
			return nil, "", fmt.Errorf("app %s needs a model: pass --model or set a provider's API key", app.Name)
		}
		llm = app.Offline()
		desc = llm.Name()
	}
	ag, err := app.New(llm)
	if err != nil {
		return nil, "", fmt.Errorf("app %s: %w", app.Name, err)
	}
	return ag, desc, nil
}
