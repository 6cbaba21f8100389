package temporal_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/log"
	"go.temporal.io/sdk/workflow"
	"google.golang.org/genai"

	"github.com/loomkit/loom/agent"
	"github.com/loomkit/loom/agent/llmagent"
	"github.com/loomkit/loom/agent/workflowagent"
	"github.com/loomkit/loom/durable/temporal"
	"github.com/loomkit/loom/model"
	"github.com/loomkit/loom/model/scripted"
	"github.com/loomkit/loom/runner"
	"github.com/loomkit/loom/session"
	"github.com/loomkit/loom/session/memsession"
	"github.com/loomkit/loom/tool"
	"github.com/loomkit/loom/tool/functiontool"
)

const (
	appName = "durable"
	user    = "u"
)

// fileMu serializes the appends of tools of one process.
var fileMu sync.Mutex

// appendLine appends a line to a file of dir: the tools' side effects,
// counted by the tests.
func appendLine(dir, name, line string) error {
	fileMu.Lock()
	defer fileMu.Unlock()
	f, err := os.OpenFile(filepath.Join(dir, name), os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
	if err != nil {
		return err
	}
	if _, err := fmt.Fprintln(f, line); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// lines counts the lines of a file of dir (0 if it is missing).
func lines(t *testing.T, dir, name string) int {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, name))
	if os.IsNotExist(err) {
		return 0
	}
	if err != nil {
		t.Fatal(err)
	}
	return strings.Count(string(b), "\n")
}

// newAgent returns the test app's tree: a sequence of an assistant, whose
// scripted model calls the tool the user message names ("slow" sleeps for
// slow and records its start and its completion in dir; "pay" requires a
// confirmation and records its runs) and then answers "<tool> done", and a
// reporter that answers "reported". For "loop", the model calls the tool
// "loop" on every turn (recording each call in loop.model), and gives up
// with a text after loopGiveUp calls.
func newAgent(dir string, slow time.Duration) (agent.Agent, error) {
	slowTool, err := functiontool.New(functiontool.Config{Name: "slow", Description: "Works for a while."},
		func(ctx context.Context, tc tool.Context, _ struct{}) (map[string]any, error) {
			if err := appendLine(dir, "slow.started", tc.FunctionCallID()); err != nil {
				return nil, err
			}
			select {
			case <-time.After(slow):
			case <-ctx.Done():
				return nil, ctx.Err()
			}
			if err := appendLine(dir, "slow.count", tc.FunctionCallID()); err != nil {
				return nil, err
			}
			return map[string]any{"worked": true}, nil
		})
	if err != nil {
		return nil, err
	}
	payTool, err := functiontool.New(functiontool.Config{Name: "pay", Description: "Pays.", RequireConfirmation: true},
		func(ctx context.Context, tc tool.Context, _ struct{}) (map[string]any, error) {
			if err := appendLine(dir, "pay.count", "paid"); err != nil {
				return nil, err
			}
			return map[string]any{"paid": true}, nil
		})
	if err != nil {
		return nil, err
	}
	loopTool, err := functiontool.New(functiontool.Config{Name: "loop", Description: "Asks to be called again."},
		func(context.Context, tool.Context, struct{}) (map[string]any, error) {
			return map[string]any{"again": true}, nil
		})
	if err != nil {
		return nil, err
	}
	m := scripted.New("assistant-model", func(ctx context.Context, req *model.Request) (scripted.Turn, error) {
		if scripted.LastUserText(req) == "loop" {
			if lines, err := os.ReadFile(filepath.Join(dir, "loop.model")); err == nil && strings.Count(string(lines), "\n") >= loopGiveUp {
				return scripted.Text("loop gave up"), nil
			}
			if err := appendLine(dir, "loop.model", "called"); err != nil {
				return scripted.Turn{}, err
			}
			return scripted.Call("loop", nil), nil
		}
		if frs := scripted.LastFunctionResponse(req); len(frs) > 0 {
			return scripted.Text(frs[0].Name + " done"), nil
		}
		switch text := scripted.LastUserText(req); text {
		case "slow", "pay":
			return scripted.Call(text, nil), nil
		default:
			return scripted.Text("echo " + text), nil
		}
	})
	assistant, err := llmagent.New(llmagent.Config{Name: "assistant", Model: m, Tools: []tool.Tool{slowTool, payTool, loopTool}})
	if err != nil {
		return nil, err
	}
	reporter, err := llmagent.New(llmagent.Config{Name: "reporter", Model: scripted.New("reporter-model",
		func(context.Context, *model.Request) (scripted.Turn, error) { return scripted.Text("reported"), nil })})
	if err != nil {
		return nil, err
	}
	return workflowagent.NewSequential(workflowagent.Config{Name: "pipeline", SubAgents: []agent.Agent{assistant, reporter}})
}

// loopGiveUp bounds the model calls of "loop", so that a run the call
// limit does not stop still ends.
const loopGiveUp = 10

// newApp returns the test app's runner over svc.
func newApp(dir string, slow time.Duration, svc *session.Service) (*runner.Runner, error) {
	root, err := newAgent(dir, slow)
	if err != nil {
		return nil, err
	}
	return runner.New(runner.Config{AppName: appName, Agent: root, Sessions: svc, Resumable: true})
}

func text(s string) *genai.Content { return genai.NewContentFromText(s, genai.RoleUser) }

// shape describes a session log without what differs between two runs of
// the same conversation: ids (of events, invocations and calls) and
// timestamps. Call ids are numbered in order of appearance.
func shape(t *testing.T, sess *session.Session) []string {
	t.Helper()
	calls := map[string]string{}
	callID := func(id string) string {
		if _, ok := calls[id]; !ok {
			calls[id] = fmt.Sprintf("call%d", len(calls)+1)
		}
		return calls[id]
	}
	invs := map[string]string{}
	var out []string
	for _, ev := range sess.Events() {
		if _, ok := invs[ev.InvocationID]; !ok {
			invs[ev.InvocationID] = fmt.Sprintf("inv%d", len(invs)+1)
		}
		var b strings.Builder
		fmt.Fprintf(&b, "%s %s [%s]", invs[ev.InvocationID], ev.Author, ev.Branch)
		if ev.Content != nil {
			for _, p := range ev.Content.Parts {
				switch {
				case p.Text != "":
					fmt.Fprintf(&b, " text=%q", p.Text)
				case p.FunctionCall != nil:
					args := map[string]any{}
					for k, v := range p.FunctionCall.Args {
						if k == "originalFunctionCall" || k == "interrupt_id" {
							v = "…" // holds the call id
						}
						args[k] = v
					}
					a, _ := json.Marshal(args)
					fmt.Fprintf(&b, " call=%s:%s%s", callID(p.FunctionCall.ID), p.FunctionCall.Name, a)
				case p.FunctionResponse != nil:
					r, _ := json.Marshal(p.FunctionResponse.Response)
					fmt.Fprintf(&b, " response=%s:%s%s", callID(p.FunctionResponse.ID), p.FunctionResponse.Name, r)
				}
			}
		}
		acts, _ := json.Marshal(struct {
			State    map[string]any `json:",omitempty"`
			Long     int            `json:",omitempty"`
			Escalate bool           `json:",omitempty"`
			Transfer string         `json:",omitempty"`
			EndAgent bool           `json:",omitempty"`
		}{ev.Actions.StateDelta, len(ev.LongRunningToolIDs), ev.Actions.Escalate, ev.Actions.TransferToAgent, ev.Actions.EndOfAgent})
		b.WriteString(" ")
		b.Write(acts)
		out = append(out, b.String())
	}
	return out
}

// confirmationCall returns the id and name of the last pausing call of a
// session.
func confirmationCall(t *testing.T, sess *session.Session) (id, name string) {
	t.Helper()
	for _, ev := range sess.Events() {
		calls, _ := agent.PausingCalls(ev)
		for _, fc := range calls {
			id, name = fc.ID, fc.Name
		}
	}
	if id == "" {
		t.Fatal("no pausing call in the session")
	}
	return id, name
}

// approve is the client's answer to a confirmation request.
func approve(id, name string) *genai.Content {
	return &genai.Content{Role: genai.RoleUser, Parts: []*genai.Part{{FunctionResponse: &genai.FunctionResponse{
		ID: id, Name: name, Response: map[string]any{"confirmed": true}}}}}
}

// inProcess runs msgs through an in-process runner of the app on a fresh
// memory session (answering each confirmation request) and returns the
// log's shape: what a run on Temporal must equal.
func inProcess(t *testing.T, svc *session.Service, msgs ...string) []string {
	t.Helper()
	r, err := newApp(t.TempDir(), 10*time.Millisecond, svc)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	k := session.Key{AppName: appName, UserID: user, SessionID: "reference"}
	sess, err := svc.Create(ctx, k, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range msgs {
		if _, err := r.RunSync(ctx, user, k.SessionID, text(m), nil); err != nil {
			t.Fatal(err)
		}
		if m == "pay" {
			if err := svc.Refresh(ctx, sess); err != nil {
				t.Fatal(err)
			}
			if _, err := r.RunSync(ctx, user, k.SessionID, approve(confirmationCall(t, sess)), nil); err != nil {
				t.Fatal(err)
			}
		}
	}
	if sess, err = svc.Get(ctx, k, nil); err != nil {
		t.Fatal(err)
	}
	return shape(t, sess)
}

// quiet is the Temporal SDK's logger in the tests: warnings and errors.
var quiet = log.NewStructuredLogger(slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn})))

// TestA16TemporalNeedsResumable: a worker refuses an app that is not
// resumable, whose workflow agents would write no checkpoints for its
// steps to continue from. (CONFORMANCE A16)
func TestA16TemporalNeedsResumable(t *testing.T) {
	m := scripted.NewSequence("m", scripted.Text("hi"))
	root, err := llmagent.New(llmagent.Config{Name: "a", Model: m})
	if err != nil {
		t.Fatal(err)
	}
	r, err := runner.New(runner.Config{AppName: "plain", Agent: root, Sessions: session.NewService(memsession.New(), nil)})
	if err != nil {
		t.Fatal(err)
	}
	var reg countingRegistry
	if err := temporal.Register(&reg, r); err == nil || !strings.Contains(err.Error(), "not resumable") {
		t.Fatalf("Register of an app that is not resumable: %v, want an error saying so", err)
	}
	if reg.n != 0 {
		t.Fatalf("%d registrations for a refused app", reg.n)
	}
}

// countingRegistry counts what is registered on it.
type countingRegistry struct{ n int }

func (c *countingRegistry) RegisterWorkflowWithOptions(any, workflow.RegisterOptions) { c.n++ }
func (c *countingRegistry) RegisterActivityWithOptions(any, activity.RegisterOptions) { c.n++ }
