package runner_test

import (
	"context"
	"errors"
	"path/filepath"
	"sync/atomic"
	"testing"

	"github.com/loomkit/loom/agent"
	"github.com/loomkit/loom/event"
	"github.com/loomkit/loom/model"
	"github.com/loomkit/loom/model/scripted"
	"github.com/loomkit/loom/runner"
	"github.com/loomkit/loom/session"
	"github.com/loomkit/loom/session/memsession"
	"github.com/loomkit/loom/session/sqlsession"
	"github.com/loomkit/loom/tool"
	"github.com/loomkit/loom/tool/functiontool"
)

// callsForever returns a model that calls the tool named name on every
// turn, and the number of times it was called.
func callsForever(name string) (*scripted.Model, *atomic.Int64) {
	var n atomic.Int64
	m := scripted.New("forever", func(context.Context, *model.Request) (scripted.Turn, error) {
		n.Add(1)
		return scripted.Call(name, nil), nil
	})
	return m, &n
}

// TestR7LimitCountsCallsAcrossPauses: an agent whose model always calls a
// long-running tool pauses after each call; each answer resumes the same
// invocation. With MaxLLMCalls 3 the third answer ends the invocation with
// ErrLLMCallLimit, before a fourth model call.
func TestR7LimitCountsCallsAcrossPauses(t *testing.T) {
	m, calls := callsForever("wait")
	r, _, key := setup(t, llm(t, "asker", m, waitTool(t)), runner.Config{})
	ctx := context.Background()
	opts := &runner.RunOptions{MaxLLMCalls: 3}
	invID, callID, name := pending(t, runAll(t, r.Run(ctx, user, key.SessionID, userText("go"), opts)))
	for answered := 1; answered <= 10; answered++ {
		var evs []*event.Event
		var err error
		for ev, e := range r.Run(ctx, user, key.SessionID, answer(callID, name, map[string]any{"ok": true}), opts) {
			if e != nil {
				err = e
				break
			}
			evs = append(evs, ev)
		}
		if err != nil {
			if !errors.Is(err, agent.ErrLLMCallLimit) {
				t.Fatalf("answer %d: %v, want ErrLLMCallLimit", answered, err)
			}
			if answered != 3 || calls.Load() != 3 {
				t.Fatalf("ErrLLMCallLimit after answer %d and %d model calls, want after answer 3 and 3 calls", answered, calls.Load())
			}
			return
		}
		var id string
		id, callID, name = pending(t, evs)
		if id != invID {
			t.Fatalf("answer %d continued invocation %s, want %s", answered, id, invID)
		}
	}
	t.Fatalf("no ErrLLMCallLimit after 10 answers and %d model calls (limit 3)", calls.Load())
}

// TestR7LimitCountsCallsAcrossResume: an invocation whose model always
// calls a tool is interrupted after each tool round and continued with
// Runner.Resume. With MaxLLMCalls 3 it ends with ErrLLMCallLimit after
// exactly 3 model calls in all, as an uninterrupted run does, in memory
// and on SQLite (where events are read back from their JSON).
func TestR7LimitCountsCallsAcrossResume(t *testing.T) {
	t.Run("memory", func(t *testing.T) { limitAcrossResume(t, memsession.NewService()) })
	t.Run("sqlite", func(t *testing.T) {
		store, err := sqlsession.Open(context.Background(), "sqlite://"+filepath.Join(t.TempDir(), "sessions.db"), nil)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { store.Close() })
		limitAcrossResume(t, session.NewService(store, nil))
	})
}

func limitAcrossResume(t *testing.T, svc *session.Service) {
	var ran atomic.Int64
	work, err := functiontool.New(functiontool.Config{Name: "work"},
		func(context.Context, tool.Context, struct{}) (map[string]any, error) {
			ran.Add(1)
			return map[string]any{"done": true}, nil
		})
	if err != nil {
		t.Fatal(err)
	}
	m, calls := callsForever("work")
	r, err := runner.New(runner.Config{AppName: app, Agent: llm(t, "worker", m, work), Sessions: svc})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	key := session.Key{AppName: app, UserID: user, SessionID: "s1"}
	if _, err := svc.Create(ctx, key, nil); err != nil {
		t.Fatal(err)
	}
	opts := &runner.RunOptions{MaxLLMCalls: 3}
	// run ranges over evs until the first tool round is committed.
	run := func(evs func(func(*event.Event, error) bool)) (invID string, err error) {
		for ev, err := range evs {
			if err != nil {
				return "", err
			}
			invID = ev.InvocationID
			if len(ev.FunctionResponses()) > 0 {
				break // the process stops here
			}
		}
		return invID, nil
	}
	invID, err := run(r.Run(ctx, user, key.SessionID, userText("go"), opts))
	if err != nil || invID == "" {
		t.Fatalf("first run: %q, %v", invID, err)
	}
	for resumes := 1; resumes <= 10; resumes++ {
		_, err := run(r.Resume(ctx, user, key.SessionID, invID, opts))
		if err != nil {
			if !errors.Is(err, agent.ErrLLMCallLimit) {
				t.Fatalf("resume %d: %v, want ErrLLMCallLimit", resumes, err)
			}
			if resumes != 3 || calls.Load() != 3 || ran.Load() != 3 {
				t.Fatalf("ErrLLMCallLimit at resume %d after %d model calls and %d tool runs, want resume 3, 3 and 3",
					resumes, calls.Load(), ran.Load())
			}
			return
		}
	}
	t.Fatalf("no ErrLLMCallLimit after 10 resumes and %d model calls (limit 3)", calls.Load())
}

// TestR7UninterruptedLimit: the same agent run without interruption stops
// after the same 3 calls, the reference of the tests above.
func TestR7UninterruptedLimit(t *testing.T) {
	work, err := functiontool.New(functiontool.Config{Name: "work"},
		func(context.Context, tool.Context, struct{}) (map[string]any, error) {
			return map[string]any{"done": true}, nil
		})
	if err != nil {
		t.Fatal(err)
	}
	m, calls := callsForever("work")
	r, _, key := setup(t, llm(t, "worker", m, work), runner.Config{})
	_, err = r.RunSync(context.Background(), user, key.SessionID, userText("go"), &runner.RunOptions{MaxLLMCalls: 3})
	if !errors.Is(err, agent.ErrLLMCallLimit) || calls.Load() != 3 {
		t.Fatalf("err = %v after %d model calls, want ErrLLMCallLimit after 3", err, calls.Load())
	}
}
