package runner_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"google.golang.org/genai"

	"github.com/loomkit/loom/agent"
	"github.com/loomkit/loom/event"
	"github.com/loomkit/loom/model"
	"github.com/loomkit/loom/model/scripted"
	"github.com/loomkit/loom/runner"
	"github.com/loomkit/loom/tool"
	"github.com/loomkit/loom/tool/functiontool"
)

// blockingTool returns a tool that signals started and then waits for its
// context to end.
func blockingTool(t *testing.T, started chan<- struct{}) tool.Tool {
	t.Helper()
	tl, err := functiontool.New(functiontool.Config{Name: "slow", Description: "Takes its time."},
		func(ctx context.Context, _ tool.Context, _ struct{}) (map[string]any, error) {
			close(started)
			<-ctx.Done()
			return nil, ctx.Err()
		})
	if err != nil {
		t.Fatal(err)
	}
	return tl
}

// checkPaired fails unless every function call of the request's history is
// answered, by id, in the content that follows it: what the model APIs
// (Anthropic's tool_use/tool_result, OpenAI's tool_calls/tool messages)
// require of a history.
func checkPaired(t *testing.T, req *model.Request) {
	t.Helper()
	for i, c := range req.Contents {
		for _, p := range c.Parts {
			if p == nil || p.FunctionCall == nil {
				continue
			}
			found := false
			if i+1 < len(req.Contents) {
				for _, q := range req.Contents[i+1].Parts {
					if q != nil && q.FunctionResponse != nil && q.FunctionResponse.ID == p.FunctionCall.ID {
						found = true
					}
				}
			}
			if !found {
				t.Errorf("call %s (%s) of content %d has no response in the next content", p.FunctionCall.ID, p.FunctionCall.Name, i)
			}
		}
	}
}

// TestR13CancelMidToolSealsCall checks that cancelling an invocation while
// a tool runs leaves a history whose next turn works: the call gets ADK's
// synthetic error response, in an event marked INVOCATION_ABORTED authored
// by the agent that made the call, and the next model request pairs every
// call with its response (CONFORMANCE R13).
func TestR13CancelMidToolSealsCall(t *testing.T) {
	started := make(chan struct{})
	m := scripted.NewSequence("m", scripted.Call("slow", nil), scripted.Text("hello again")).Recording()
	r, svc, key := setup(t, llm(t, "A", m, blockingTool(t, started)), runner.Config{})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan []*event.Event, 1)
	var runErr error
	go func() {
		evs, err := r.RunSync(ctx, user, key.SessionID, userText("go"), nil)
		runErr = err
		done <- evs
	}()
	<-started
	cancel()
	var evs []*event.Event
	select {
	case evs = <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("invocation did not stop after cancel")
	}
	if !errors.Is(runErr, context.Canceled) {
		t.Fatalf("err = %v, want context.Canceled", runErr)
	}
	sess := stored(t, svc, key)
	last := sess.At(sess.Len() - 1)
	if last.ErrorCode != event.ErrorCodeAborted || last.ErrorMessage != event.AbortMessage {
		t.Fatalf("last event: errorCode %q errorMessage %q, want %q %q", last.ErrorCode, last.ErrorMessage, event.ErrorCodeAborted, event.AbortMessage)
	}
	if last.Author != "A" || last.Content == nil || last.Content.Role != genai.RoleUser {
		t.Fatalf("last event: author %q content %+v, want A's, role user", last.Author, last.Content)
	}
	frs := last.FunctionResponses()
	call := sess.At(sess.Len() - 2).FunctionCalls()
	if len(frs) != 1 || len(call) != 1 || frs[0].ID != call[0].ID || frs[0].Name != "slow" {
		t.Fatalf("responses %+v do not answer calls %+v", frs, call)
	}
	if got := frs[0].Response["error"]; got != "Invocation was aborted by client." {
		t.Errorf("response = %v", frs[0].Response)
	}
	if len(evs) == 0 || evs[len(evs)-1].ErrorCode != event.ErrorCodeAborted {
		t.Errorf("the caller did not get the abort event: %d events", len(evs))
	}

	// The next turn runs, and its model request is a valid history.
	out, err := r.RunSync(context.Background(), user, key.SessionID, userText("again"), nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(out) == 0 || model.Text(out[len(out)-1].Content, "") != "hello again" {
		t.Fatalf("next turn: %d events", len(out))
	}
	reqs := m.Requests()
	checkPaired(t, reqs[len(reqs)-1])
}

// TestR13CancelWithNothingPendingRecordsAbort checks that an invocation
// cancelled with no call left open ends with one content-less abort event
// of the root agent (CONFORMANCE R13).
func TestR13CancelWithNothingPendingRecordsAbort(t *testing.T) {
	started := make(chan struct{})
	root := custom(t, "root", func(ctx context.Context, inv *agent.Invocation, yield func(*event.Event, error) bool) {
		close(started)
		<-ctx.Done()
		yield(nil, ctx.Err())
	})
	r, svc, key := setup(t, root, runner.Config{})
	ctx, cancel := context.WithCancel(context.Background())
	go func() { <-started; cancel() }()
	if _, err := r.RunSync(ctx, user, key.SessionID, userText("go"), nil); !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v", err)
	}
	sess := stored(t, svc, key)
	if sess.Len() != 2 {
		t.Fatalf("%d events stored, want the message and the abort", sess.Len())
	}
	ab := sess.At(1)
	if ab.Author != "root" || ab.Content != nil || ab.ErrorCode != event.ErrorCodeAborted || ab.InvocationID != sess.At(0).InvocationID {
		t.Fatalf("abort event %+v", ab)
	}
}

// TestR13BreakLeavesInvocationResumable checks that a caller that stops
// reading without cancelling seals nothing: the invocation stays as a
// crash leaves it, for Resume (CONFORMANCE R13).
func TestR13BreakLeavesInvocationResumable(t *testing.T) {
	m := scripted.NewSequence("m", scripted.Call("wait", nil))
	r, svc, key := setup(t, llm(t, "A", m, waitTool(t)), runner.Config{})
	for range r.Run(context.Background(), user, key.SessionID, userText("go"), nil) {
		break
	}
	for i, ev := range stored(t, svc, key).Events() {
		if ev.ErrorCode == event.ErrorCodeAborted {
			t.Fatalf("event %d is an abort event", i)
		}
	}
}
