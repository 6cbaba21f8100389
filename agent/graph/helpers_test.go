package graph_test

import (
	"context"
	"strings"
	"testing"

	"google.golang.org/genai"

	"github.com/loomkit/loom/agent"
	"github.com/loomkit/loom/agent/graph"
	"github.com/loomkit/loom/agent/llmagent"
	"github.com/loomkit/loom/event"
	"github.com/loomkit/loom/model/scripted"
	"github.com/loomkit/loom/runner"
	"github.com/loomkit/loom/session"
	"github.com/loomkit/loom/session/memsession"
	"github.com/loomkit/loom/tool"
)

const (
	appName = "app"
	userID  = "u"
)

func mustNew(t testing.TB, cfg graph.Config) *graph.Workflow {
	t.Helper()
	w, err := graph.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return w
}

func setup(t testing.TB, root agent.Agent, svc *session.Service) (*runner.Runner, session.Key) {
	t.Helper()
	if svc == nil {
		svc = memsession.NewService()
	}
	r, err := runner.New(runner.Config{AppName: appName, Agent: root, Sessions: svc, Resumable: true})
	if err != nil {
		t.Fatal(err)
	}
	key := session.Key{AppName: appName, UserID: userID, SessionID: "s1"}
	if _, err := svc.Get(context.Background(), key, nil); err != nil {
		if _, err := svc.Create(context.Background(), key, nil); err != nil {
			t.Fatal(err)
		}
	}
	return r, key
}

func text(s string) *genai.Content { return genai.NewContentFromText(s, genai.RoleUser) }

// collect runs one invocation and returns its complete events.
func collect(t testing.TB, evs func(func(*event.Event, error) bool)) []*event.Event {
	t.Helper()
	var out []*event.Event
	for ev, err := range evs {
		if err != nil {
			t.Fatal(err)
		}
		if !ev.Partial {
			out = append(out, ev)
		}
	}
	return out
}

// outputOf returns the workflow's output: the Output of its end event.
func outputOf(t testing.TB, evs []*event.Event, name string) any {
	t.Helper()
	for _, ev := range evs {
		if ev.Author == name && ev.Actions.EndOfAgent && ev.NodeInfo != nil && ev.NodeInfo.Path == name {
			return ev.Output
		}
	}
	t.Fatalf("no end event of %s among %d events", name, len(evs))
	return nil
}

// paths returns the paths of the node runs that ended, in order.
func ended(evs []*event.Event) []string {
	var out []string
	for _, ev := range evs {
		if ev.Actions.EndOfAgent && ev.NodeInfo != nil && len(ev.NodeInfo.OutputFor) > 0 && strings.Contains(ev.NodeInfo.Path, "@") {
			out = append(out, ev.NodeInfo.Path)
		}
	}
	return out
}

// inputCall returns the adk_request_input call of evs.
func inputCall(t testing.TB, evs []*event.Event) (*event.Event, *genai.FunctionCall) {
	t.Helper()
	for _, ev := range evs {
		for _, fc := range ev.FunctionCalls() {
			if fc.Name == graph.FunctionRequestInput {
				return ev, fc
			}
		}
	}
	t.Fatalf("no %s call among %d events", graph.FunctionRequestInput, len(evs))
	return nil, nil
}

func errorEvent(evs []*event.Event) *event.Event {
	for _, ev := range evs {
		if ev.ErrorCode != "" {
			return ev
		}
	}
	return nil
}

func llm(t testing.TB, name string, m *scripted.Model, tools ...tool.Tool) *llmagent.Agent {
	t.Helper()
	a, err := llmagent.New(llmagent.Config{Name: name, Model: m, Tools: tools})
	if err != nil {
		t.Fatal(err)
	}
	return a
}

func upper(name string) *graph.Node {
	return graph.Func(name, func(_ context.Context, _ *graph.Context, in string) (string, error) {
		return strings.ToUpper(in), nil
	})
}

func keyOf(sid string) session.Key {
	return session.Key{AppName: appName, UserID: userID, SessionID: sid}
}

type agentType = agent.Agent
