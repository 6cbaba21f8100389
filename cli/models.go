package cli

import (
	"context"
	"fmt"
	"strings"

	"github.com/loomkit/loom/agent"
	"github.com/loomkit/loom/model"
	"github.com/loomkit/loom/model/openai"
)

// modelChoice is the model the applications built from constructors get:
// llm, or each application's offline model when llm is nil.
type modelChoice struct {
	llm  model.LLM
	desc string
}

// chooseModel applies --model, then API keys in the environment, then the
// offline models.
func chooseModel(ctx context.Context, env Env, name string) (*modelChoice, error) {
	if name == "" {
		name = defaultModel(env.Getenv)
	}
	if name == "" {
		return &modelChoice{desc: "offline scripted models (no API key set; pass --model to choose one)"}, nil
	}
	llm, err := openModel(ctx, name, env.Getenv)
	if err != nil {
		return nil, fmt.Errorf("model %s: %w", name, err)
	}
	return &modelChoice{llm: llm, desc: name}, nil
}

// defaultModel returns the default model of the provider whose API key is
// set, or "". OpenAI (and servers speaking its API, through
// OPENAI_BASE_URL) is the provider this build knows.
func defaultModel(getenv func(string) string) string {
	if getenv("OPENAI_API_KEY") != "" {
		return "gpt-4o-mini"
	}
	return ""
}

// openModel opens the named model; an "openai/" prefix is optional.
func openModel(_ context.Context, name string, getenv func(string) string) (model.LLM, error) {
	return openai.New(strings.TrimPrefix(name, "openai/"), &openai.Options{APIKey: getenv("OPENAI_API_KEY"), BaseURL: getenv("OPENAI_BASE_URL")})
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
