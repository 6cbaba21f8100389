package agent_test

import (
	"context"
	"iter"
	"strings"
	"testing"

	"github.com/loomkit/loom/agent"
	"github.com/loomkit/loom/event"
)

// ptrAgent is an agent whose methods dereference their receiver, as most
// agents' do: calling them on a nil pointer panics.
type ptrAgent struct {
	name string
	subs []agent.Agent
}

func (a *ptrAgent) Name() string             { return a.name }
func (a *ptrAgent) Description() string      { return "" }
func (a *ptrAgent) SubAgents() []agent.Agent { return a.subs }
func (a *ptrAgent) Run(context.Context, *agent.Invocation) iter.Seq2[*event.Event, error] {
	return func(func(*event.Event, error) bool) {}
}

// TestNewTreeNilPointer checks that an interface holding a nil pointer, as
// the root or as a sub-agent, is refused with an error instead of crashing
// when the tree is walked or later run.
func TestNewTreeNilPointer(t *testing.T) {
	var nilRoot *ptrAgent
	if _, err := agent.NewTree(nilRoot); err == nil || !strings.Contains(err.Error(), "nil") {
		t.Errorf("nil pointer root: err = %v, want an error naming nil", err)
	}
	var nilSub *ptrAgent
	root := &ptrAgent{name: "root", subs: []agent.Agent{&ptrAgent{name: "ok"}, nilSub}}
	if _, err := agent.NewTree(root); err == nil || !strings.Contains(err.Error(), "root has a nil sub-agent") {
		t.Errorf("nil pointer sub-agent: err = %v, want \"root has a nil sub-agent\"", err)
	}
	if _, err := agent.NewTree(&ptrAgent{name: "root", subs: []agent.Agent{&ptrAgent{name: "ok"}}}); err != nil {
		t.Errorf("valid tree: %v", err)
	}
}
