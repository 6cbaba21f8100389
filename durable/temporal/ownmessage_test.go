package temporal_test

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/interceptor"

	"github.com/loomkit/loom/agent"
	"github.com/loomkit/loom/durable/temporal"
	"github.com/loomkit/loom/event"
	"github.com/loomkit/loom/runner"
)

// beforeUpdate is a Temporal client interceptor that calls its hook before
// the client sends a run update: after Client.Run admitted the message,
// before the workflow has it.
type beforeUpdate struct {
	interceptor.ClientInterceptorBase
	hook func()
}

func (b *beforeUpdate) InterceptClient(next interceptor.ClientOutboundInterceptor) interceptor.ClientOutboundInterceptor {
	return &beforeUpdateOutbound{ClientOutboundInterceptorBase: interceptor.ClientOutboundInterceptorBase{Next: next}, b: b}
}

type beforeUpdateOutbound struct {
	interceptor.ClientOutboundInterceptorBase
	b *beforeUpdate
}

func (o *beforeUpdateOutbound) UpdateWithStartWorkflow(ctx context.Context, in *interceptor.ClientUpdateWithStartWorkflowInput) (client.WorkflowUpdateHandle, error) {
	if h := o.b.hook; h != nil {
		o.b.hook = nil
		h()
	}
	return o.Next.UpdateWithStartWorkflow(ctx, in)
}

// TestD15PollingClientStreamsOnlyItsOwnMessage: a polling client (no feed
// listener, its worker in another process) admits its message; before the
// workflow has it, another client's message to the same session runs to its
// end and the session's state is changed. The client streams the events of
// its own message's invocation, all of them, in log order, and none of the
// other message's.
//
// (CONFORMANCE D15)
func TestD15PollingClientStreamsOnlyItsOwnMessage(t *testing.T) {
	hooked := &beforeUpdate{}
	c, err := client.Dial(testCodec.ClientOptions(client.Options{HostPort: temporalAddr(t), Logger: quiet, Interceptors: []interceptor.ClientInterceptor{hooked}}))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	x := startCrossProcess(t, false, temporal.ClientConfig{Client: c, Poll: 10 * time.Millisecond})
	other, err := temporal.NewClient(temporal.ClientConfig{Client: dial(t), TaskQueue: x.queue})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	var others []*event.Event
	hooked.hook = func() {
		for ev, err := range other.Run(ctx, x.app, user, x.key.SessionID, text("hello"), nil) {
			if err != nil {
				t.Errorf("the other client's message: %v", err)
				return
			}
			others = append(others, ev)
		}
		if _, err := x.app.UpdateState(ctx, user, x.key.SessionID, map[string]any{"mood": "busy"}); err != nil {
			t.Error(err)
		}
	}
	var res result
	select {
	case res = <-collect(x.cl.Run(ctx, x.app, user, x.key.SessionID, text("slow"), nil)):
	case <-time.After(time.Minute):
		t.Fatal("the turn did not end")
	}
	if res.err != nil {
		t.Fatalf("run: %v", res.err)
	}
	if len(others) == 0 {
		t.Fatal("the other client's message was not run before this one's")
	}
	log, err := x.svc.Get(ctx, x.key, nil)
	if err != nil {
		t.Fatal(err)
	}
	// The log: the other message and its events, the state change, then
	// this message and its events.
	var mine []string
	own := ""
	for _, ev := range log.Events() {
		if ev.Author == event.AuthorUser && ev.Text() == "slow" {
			own = ev.InvocationID
			continue
		}
		if own != "" && ev.InvocationID == own && ev.Author != event.AuthorUser {
			mine = append(mine, ev.ID)
		}
	}
	if own == "" || len(mine) == 0 {
		t.Fatalf("the message's invocation is not in the log (%d events)", log.Len())
	}
	var got []string
	for _, ev := range res.events {
		if ev.InvocationID != own {
			t.Errorf("streamed %q of invocation %s (the other client's is %s), not this message's %s", ev.Text(), ev.InvocationID, others[0].InvocationID, own)
		}
		got = append(got, ev.ID)
	}
	if !slices.Equal(got, mine) {
		t.Fatalf("streamed %v, want the message's events %v", got, mine)
	}
}

// TestD15FailedTurnStreamsOnlyItsOwnMessage: a client without feed
// listener or polling, whose worker is in another process, admits a
// message whose turn then fails (past its model-call limit); before the
// workflow has it, another client's message runs and the session's state
// is changed. When the turn ends, the client reads the log from where the
// failed turn may have stored the message: it yields the events its
// invocation committed, then the error, and no other event.
//
// (CONFORMANCE D15)
func TestD15FailedTurnStreamsOnlyItsOwnMessage(t *testing.T) {
	hooked := &beforeUpdate{}
	c, err := client.Dial(testCodec.ClientOptions(client.Options{HostPort: temporalAddr(t), Logger: quiet, Interceptors: []interceptor.ClientInterceptor{hooked}}))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	x := startCrossProcess(t, false, temporal.ClientConfig{Client: c})
	other, err := temporal.NewClient(temporal.ClientConfig{Client: dial(t), TaskQueue: x.queue})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	hooked.hook = func() {
		for _, err := range other.Run(ctx, x.app, user, x.key.SessionID, text("hello"), nil) {
			if err != nil {
				t.Errorf("the other client's message: %v", err)
				return
			}
		}
		if _, err := x.app.UpdateState(ctx, user, x.key.SessionID, map[string]any{"mood": "busy"}); err != nil {
			t.Error(err)
		}
	}
	var res result
	select {
	case res = <-collect(x.cl.Run(ctx, x.app, user, x.key.SessionID, text("loop"), &runner.RunOptions{MaxLLMCalls: 2})):
	case <-time.After(time.Minute):
		t.Fatal("the turn did not end")
	}
	if !errors.Is(res.err, agent.ErrLLMCallLimit) {
		t.Fatalf("run: %v, want the model-call limit", res.err)
	}
	log, err := x.svc.Get(ctx, x.key, nil)
	if err != nil {
		t.Fatal(err)
	}
	var mine []string
	own := ""
	for _, ev := range log.Events() {
		if ev.Author == event.AuthorUser && ev.Text() == "loop" {
			own = ev.InvocationID
			continue
		}
		if own != "" && ev.InvocationID == own && ev.Author != event.AuthorUser {
			mine = append(mine, ev.ID)
		}
	}
	if own == "" || len(mine) == 0 {
		t.Fatalf("the failed invocation committed nothing (%d events)", log.Len())
	}
	var got []string
	for _, ev := range res.events {
		got = append(got, ev.ID)
	}
	if !slices.Equal(got, mine) {
		t.Fatalf("streamed %v, want the failed invocation's events %v", got, mine)
	}
}
