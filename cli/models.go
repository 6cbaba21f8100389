package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/loomkit/loom/agent"
	"github.com/loomkit/loom/conformance"
	"github.com/loomkit/loom/event"
	"github.com/loomkit/loom/model"
	"github.com/loomkit/loom/model/provider"
	"github.com/loomkit/loom/model/retry"
	"github.com/loomkit/loom/model/scripted"
	"github.com/loomkit/loom/tool/exitlooptool"
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

// build returns the root agent of app under the model choice. A server
// honouring the conformance protocol wraps the model for replay, as it
// wraps those of config-file agents, so that a replayed invocation's
// model turns are answered, and checked, by the same rule.
func (c *modelChoice) build(app App, o *options) (agent.Agent, string, error) {
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
	ag, err := app.New(c.swap(o, llm))
	if err != nil {
		return nil, "", fmt.Errorf("app %s: %w", app.Name, err)
	}
	return ag, desc, nil
}

// resolver returns how the agents of config files get their models: with
// --model, that model for every agent; with an API key but no --model, the
// model each agent names (opened once per name), or the provider's default
// for agents naming none; with neither, the offline echo model.
func (c *modelChoice) resolver(ctx context.Context, env Env, o *options) func(name string) (model.LLM, error) {
	if c.llm == nil {
		offline := offlineModel()
		if o.namedOffline {
			return func(name string) (model.LLM, error) {
				return conformance.ReplayModel(renamed{offline, name}), nil
			}
		}
		return func(string) (model.LLM, error) { return offline, nil }
	}
	if o.model != "" {
		return func(string) (model.LLM, error) { return c.swap(o, c.llm), nil }
	}
	var mu sync.Mutex
	opened := map[string]model.LLM{}
	return func(name string) (model.LLM, error) {
		if name == "" || name == c.desc {
			return c.swap(o, c.llm), nil
		}
		mu.Lock()
		defer mu.Unlock()
		if m := opened[name]; m != nil {
			return m, nil
		}
		m, err := openModel(ctx, name, env.Getenv, o.modelTimeout)
		if err != nil {
			return nil, fmt.Errorf("model %s: %w", name, err)
		}
		opened[name] = c.swap(o, m)
		return opened[name], nil
	}
}

// swap wraps m for conformance replay when the server honours the
// protocol (--conformance).
func (c *modelChoice) swap(o *options, m model.LLM) model.LLM {
	if o.namedOffline {
		return conformance.ReplayModel(m)
	}
	return m
}

// fileDesc says which models the agents of config files get.
func (c *modelChoice) fileDesc() string {
	if c.llm == nil {
		return "offline echo model"
	}
	return "models as named, default " + c.desc
}

// offlineName is the name of the offline model of config-file apps.
const offlineName = "offline-echo"

// offlineModel is the model every agent of a config-file app gets when no
// model is named and no API key is set, so that an app runs as soon as it
// is written: it repeats the user's latest message, reports the result of
// a tool call, and calls exit_loop when the agent has it (so that loops end
// after one pass). It calls no other tool.
func offlineModel() model.LLM {
	return scripted.New(offlineName, func(_ context.Context, req *model.Request) (scripted.Turn, error) {
		if frs := scripted.LastFunctionResponse(req); len(frs) > 0 {
			var b strings.Builder
			for _, fr := range frs {
				res, _ := json.Marshal(fr.Response)
				fmt.Fprintf(&b, "%s returned %s. ", fr.Name, res)
			}
			return scripted.Text(strings.TrimSpace(b.String())), nil
		}
		if declares(req, exitlooptool.Name) {
			return scripted.Call(exitlooptool.Name, nil), nil
		}
		text := typedText(req)
		if text == "" {
			text = "(nothing)"
		}
		return scripted.Text("[offline echo] " + text), nil
	})
}

// declares reports whether the request declares the function name.
func declares(req *model.Request, name string) bool {
	if req.Config == nil {
		return false
	}
	for _, t := range req.Config.Tools {
		for _, fd := range t.FunctionDeclarations {
			if fd != nil && fd.Name == name {
				return true
			}
		}
	}
	return false
}

// typedText is the latest text the user typed: user-role contents that
// relay other agents' turns ("For context: ...") are skipped.
func typedText(req *model.Request) string { return event.TypedText(req.Contents) }

// renamed is a model reporting another name.
type renamed struct {
	model.LLM
	name string
}

func (r renamed) Name() string {
	if r.name == "" {
		return r.LLM.Name()
	}
	return r.name
}
