package runner_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"

	"github.com/loomkit/loom/agent"
	"github.com/loomkit/loom/agent/llmagent"
	"github.com/loomkit/loom/model"
	"github.com/loomkit/loom/model/scripted"
	"github.com/loomkit/loom/runner"
)

// TestResumeOfStoredMessageOnlyPicksAgent: an invocation of which only the
// message was stored (its first model call failed; a process that died
// there is the same) resumes with the agent a run of the message picks, the
// one the conversation was transferred to, not with the root.
//
// (CONFORMANCE D10)
func TestResumeOfStoredMessageOnlyPicksAgent(t *testing.T) {
	var fail atomic.Bool
	respond := func(name string) scripted.Responder {
		return func(_ context.Context, req *model.Request) (scripted.Turn, error) {
			text := scripted.LastUserText(req)
			if fail.CompareAndSwap(true, false) {
				return scripted.Turn{}, errors.New("the model is unreachable")
			}
			if name == "root" && text == "I need help" && len(scripted.LastFunctionResponse(req)) == 0 {
				return scripted.Call("transfer_to_agent", map[string]any{"agent_name": "helper"}), nil
			}
			return scripted.Text(name + ": " + text), nil
		}
	}
	helper, err := llmagent.New(llmagent.Config{Name: "helper", Model: scripted.New("helper-m", respond("helper"))})
	if err != nil {
		t.Fatal(err)
	}
	root, err := llmagent.New(llmagent.Config{Name: "root", Model: scripted.New("root-m", respond("root")), SubAgents: []agent.Agent{helper}})
	if err != nil {
		t.Fatal(err)
	}
	r, svc, key := setup(t, root, runner.Config{Resumable: true})
	ctx := context.Background()
	if _, err := r.RunSync(ctx, user, "s1", userText("I need help"), nil); err != nil {
		t.Fatal(err)
	}
	fail.Store(true)
	if _, err := r.RunSync(ctx, user, "s1", userText("again"), nil); err == nil {
		t.Fatal("the failing model call did not fail the run")
	}
	s := stored(t, svc, key)
	msg := s.At(s.Len() - 1)
	if msg.Text() != "again" {
		t.Fatalf("last event %s %q, want the stored message", msg.Author, msg.Text())
	}
	var got []string
	for ev, err := range r.Resume(ctx, user, "s1", msg.InvocationID, nil) {
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, ev.Author+": "+ev.Text())
	}
	if len(got) != 1 || got[0] != "helper: helper: again" {
		t.Fatalf("resumed invocation yielded %q, want helper's answer", got)
	}
}
