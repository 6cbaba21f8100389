package agent_test

import (
	"context"
	"testing"

	"google.golang.org/genai"

	"github.com/loomkit/loom/agent"
	"github.com/loomkit/loom/event"
	"github.com/loomkit/loom/session"
	"github.com/loomkit/loom/session/memsession"
)

func newInvocation(t *testing.T) (*agent.Invocation, *session.Service, *session.Session) {
	t.Helper()
	svc := memsession.NewService()
	sess, err := svc.Create(context.Background(), session.Key{AppName: "a", UserID: "u", SessionID: "s"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	return agent.NewInvocation(agent.InvocationConfig{Session: sess}), svc, sess
}

// TestT3CheckpointScansOnlyFromResumePoint checks that Checkpoint sees only
// this invocation's checkpoints at or after the resume point, and nothing
// outside resume mode.
func TestT3CheckpointScansOnlyFromResumePoint(t *testing.T) {
	inv, svc, sess := newInvocation(t)
	ctx := context.Background()
	add := func(ev *event.Event) {
		t.Helper()
		if err := svc.AppendEvent(ctx, sess, ev); err != nil {
			t.Fatal(err)
		}
	}
	other := event.New("e-other", "wf")
	other.Actions.AgentState = map[string]any{"current_sub_agent": "x"}
	add(other)
	add(event.NewUserText(inv.ID(), "go"))
	old := event.New(inv.ID(), "wf")
	old.Actions.AgentState = map[string]any{"current_sub_agent": "a"}
	add(old)
	cur := event.New(inv.ID(), "wf")
	cur.Actions.AgentState = map[string]any{"current_sub_agent": "b", "times_looped": 1.0}
	add(cur)

	if st, ended := agent.Checkpoint(inv, "wf"); st != nil || ended || inv.Resuming() {
		t.Fatalf("outside resume mode: %v %v", st, ended)
	}
	r := inv.ResumeFrom(1)
	st, ended := agent.Checkpoint(r, "wf")
	if st["current_sub_agent"] != "b" || ended {
		t.Fatalf("checkpoint %v (ended %v), want the latest, b", st, ended)
	}
	if n, ok := agent.StateInt(st, "times_looped"); !ok || n != 1 {
		t.Errorf("times_looped = %d, %v", n, ok)
	}
	if st, _ := agent.Checkpoint(inv.ResumeFrom(4), "wf"); st != nil {
		t.Errorf("a checkpoint before the resume point was seen: %v", st)
	}
	if n := len(agent.ResumeEvents(r)); n != 3 {
		t.Errorf("ResumeEvents = %d events, want the 3 of this invocation", n)
	}
	if r.Fresh().Resuming() {
		t.Error("Fresh kept resume mode")
	}
	add(agent.NewEndOfAgent(r))
	if _, ended := agent.Checkpoint(r, ""); !ended {
		t.Error("end of agent not seen")
	}
}

// TestEndScope checks that End within a scope stops that scope only.
func TestEndScope(t *testing.T) {
	inv, _, _ := newInvocation(t)
	a, b := inv.WithEndScope(), inv.WithEndScope()
	inner := a.WithEndScope()
	a.End()
	if !a.Ended() || !inner.Ended() || b.Ended() || inv.Ended() {
		t.Fatalf("ended: a %v inner %v b %v inv %v", a.Ended(), inner.Ended(), b.Ended(), inv.Ended())
	}
	inv.End()
	if !b.Ended() {
		t.Error("ending the invocation did not end its scopes")
	}
}

func TestIsCheckpoint(t *testing.T) {
	ev := event.New("e-1", "wf")
	if agent.IsCheckpoint(ev) {
		t.Error("an empty event is not a checkpoint")
	}
	ev.Actions.EndOfAgent = true
	if !agent.IsCheckpoint(ev) {
		t.Error("end of agent is a checkpoint")
	}
	ev.Content = genai.NewContentFromText("x", genai.RoleModel)
	if agent.IsCheckpoint(ev) {
		t.Error("an event with content is not only a checkpoint")
	}
}
