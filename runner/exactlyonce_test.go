package runner_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"google.golang.org/genai"

	"github.com/loomkit/loom/agent"
	"github.com/loomkit/loom/agent/llmagent"
	"github.com/loomkit/loom/agent/workflowagent"
	"github.com/loomkit/loom/event"
	"github.com/loomkit/loom/internal/sqldb/sqldbtest"
	"github.com/loomkit/loom/model/scripted"
	"github.com/loomkit/loom/runner"
	"github.com/loomkit/loom/session"
	"github.com/loomkit/loom/session/memsession"
	"github.com/loomkit/loom/session/sqlsession"
	"github.com/loomkit/loom/tool"
	"github.com/loomkit/loom/tool/functiontool"
)

// Exactly-once delivery of answers to paused calls (CONFORMANCE T2, T3):
// whatever the tree, the pause kind and the store, one answer runs the
// paused tool once, is seen by the agent that asked only, and is never
// taken for new by a later loop pass, another agent or a new runner.

// pauseKind is one way a tool call pauses its invocation.
type pauseKind struct {
	name string
	// tool returns the charge tool, counting real executions in runs.
	tool func(t *testing.T, runs *atomic.Int32) tool.Tool
	// answer returns the client's answer to the paused call.
	answer func(callID, callName string) *genai.Content
}

var pauseKinds = []pauseKind{
	{
		name: "confirmation",
		tool: func(t *testing.T, runs *atomic.Int32) tool.Tool {
			return chargeTool(t, functiontool.Config{RequireConfirmation: true}, func(tc tool.Context) (map[string]any, error) {
				runs.Add(1)
				return map[string]any{"charged": true}, nil
			})
		},
		answer: func(id, name string) *genai.Content {
			return answer(id, name, map[string]any{"confirmed": true})
		},
	},
	{
		name: "credential",
		tool: func(t *testing.T, runs *atomic.Int32) tool.Tool {
			return chargeTool(t, functiontool.Config{}, func(tc tool.Context) (map[string]any, error) {
				if tc.Credential() == nil {
					tc.RequestCredential(map[string]any{"authScheme": "apiKey"})
					return nil, nil
				}
				runs.Add(1)
				return map[string]any{"charged": true}, nil
			})
		},
		answer: func(id, name string) *genai.Content {
			return answer(id, name, map[string]any{"apiKey": "k"})
		},
	},
	{
		// A long-running tool that answers at once with an interim result;
		// the client later sends the final result with the same call id.
		name: "interim",
		tool: func(t *testing.T, runs *atomic.Int32) tool.Tool {
			return chargeTool(t, functiontool.Config{LongRunning: true}, func(tc tool.Context) (map[string]any, error) {
				runs.Add(1)
				return map[string]any{"status": "pending", "ticket": "T-1"}, nil
			})
		},
		answer: func(id, name string) *genai.Content {
			return answer(id, name, map[string]any{"status": "done", "ticket": "T-1"})
		},
	},
}

func chargeTool(t *testing.T, cfg functiontool.Config, run func(tool.Context) (map[string]any, error)) tool.Tool {
	t.Helper()
	cfg.Name, cfg.Description = "charge_card", "Charges the card."
	tl, err := functiontool.New(cfg, func(_ context.Context, tc tool.Context, _ struct{}) (map[string]any, error) { return run(tc) })
	if err != nil {
		t.Fatal(err)
	}
	return tl
}

// treeShape builds an agent tree in which agent A calls charge_card once.
// want is the texts the resumed invocation ends with, in order.
type treeShape struct {
	name  string
	build func(t *testing.T, charge tool.Tool) agent.Agent
	want  string
}

func chargeModel(name string, after ...string) *scripted.Model {
	turns := []scripted.Turn{scripted.Call("charge_card", nil)}
	for _, s := range after {
		turns = append(turns, scripted.Text(s))
	}
	return scripted.NewSequence(name, turns...)
}

var treeShapes = []treeShape{
	{
		name: "sequential-both-have-tool",
		build: func(t *testing.T, charge tool.Tool) agent.Agent {
			return seq(t, "root", llm(t, "A", chargeModel("mA", "A done"), charge),
				llm(t, "B", scripted.NewSequence("mB", scripted.Text("B done")), charge))
		},
		want: "A:A done,B:B done",
	},
	{
		name: "sequential-other-lacks-tool",
		build: func(t *testing.T, charge tool.Tool) agent.Agent {
			return seq(t, "root", llm(t, "A", chargeModel("mA", "A done"), charge),
				llm(t, "B", scripted.NewSequence("mB", scripted.Text("B done"))))
		},
		want: "A:A done,B:B done",
	},
	{
		name: "loop-3",
		build: func(t *testing.T, charge tool.Tool) agent.Agent {
			return loop(t, "root", 3, llm(t, "A", chargeModel("mA", "A done", "A pass 2", "A pass 3"), charge))
		},
		want: "A:A done,A:A pass 2,A:A pass 3",
	},
	{
		name: "parallel",
		build: func(t *testing.T, charge tool.Tool) agent.Agent {
			p, err := workflowagent.NewParallel(workflowagent.Config{Name: "root", SubAgents: []agent.Agent{
				llm(t, "A", chargeModel("mA", "A done"), charge),
				llm(t, "B", scripted.NewSequence("mB", scripted.Text("B done")), charge),
			}})
			if err != nil {
				t.Fatal(err)
			}
			return p
		},
		want: "A:A done",
	},
	{
		name: "nested-loop-in-sequence",
		build: func(t *testing.T, charge tool.Tool) agent.Agent {
			return seq(t, "root",
				loop(t, "twice", 2, llm(t, "A", chargeModel("mA", "A done", "A pass 2"), charge)),
				llm(t, "B", scripted.NewSequence("mB", scripted.Text("B done"), scripted.Text("B again")), charge))
		},
		want: "A:A done,A:A pass 2,B:B done",
	},
}

// storeKind opens a session service; a second call with the same dir opens
// another service over the same data, as a restarted process would.
type storeKind struct {
	name string
	open func(t *testing.T, dir string) *session.Service
}

func storeKinds(t *testing.T) []storeKind {
	mem := map[string]*session.Service{}
	kinds := []storeKind{
		{"memory", func(t *testing.T, dir string) *session.Service {
			if s := mem[dir]; s != nil {
				return s
			}
			mem[dir] = memsession.NewService()
			return mem[dir]
		}},
		{"sqlite", func(t *testing.T, dir string) *session.Service {
			return openSQL(t, "sqlite://"+filepath.Join(dir, "sessions.db"))
		}},
	}
	if os.Getenv(sqldbtest.EnvPostgres) != "" || os.Getenv("CI") != "" {
		// A schema of its own per dir, so that no run, this one or an
		// earlier one on the same server, shares a session with another.
		schemas := map[string]string{}
		kinds = append(kinds, storeKind{"postgres", func(t *testing.T, dir string) *session.Service {
			if schemas[dir] == "" {
				schemas[dir] = sqldbtest.PostgresURL(t)
			}
			return openSQL(t, schemas[dir])
		}})
	}
	return kinds
}

func openSQL(t *testing.T, url string) *session.Service {
	t.Helper()
	store, err := sqlsession.Open(context.Background(), url, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { store.Close() })
	return session.NewService(store, nil)
}

var sessionSeq atomic.Int64

// TestT2T3AnswerRunsOnce runs every pause kind in every tree shape on every
// store, answering through the same runner and through a new runner over
// the same store (a restarted process): one answer, one execution, one
// owner, and the invocation completes (CONFORMANCE T6).
func TestT2T3AnswerRunsOnce(t *testing.T) {
	for _, sk := range storeKinds(t) {
		for _, pk := range pauseKinds {
			for _, shape := range treeShapes {
				for _, restart := range []bool{false, true} {
					name := fmt.Sprintf("%s/%s/%s/restart=%v", sk.name, pk.name, shape.name, restart)
					t.Run(name, func(t *testing.T) {
						testAnswerRunsOnce(t, sk, pk, shape, restart)
					})
				}
			}
		}
	}
}

func testAnswerRunsOnce(t *testing.T, sk storeKind, pk pauseKind, shape treeShape, restart bool) {
	ctx := context.Background()
	dir := t.TempDir()
	var runs atomic.Int32
	// The agents (and their scripted models) outlive a restart; the runner
	// and the session service are new.
	root := shape.build(t, pk.tool(t, &runs))
	newRunner := func() (*runner.Runner, *session.Service) {
		svc := sk.open(t, dir)
		r, err := runner.New(runner.Config{AppName: app, Agent: root, Sessions: svc, AutoCreateSession: true, Resumable: true})
		if err != nil {
			t.Fatal(err)
		}
		return r, svc
	}
	r, svc := newRunner()
	sid := fmt.Sprintf("once-%d-%d", os.Getpid(), sessionSeq.Add(1))
	key := session.Key{AppName: app, UserID: user, SessionID: sid}

	first := runAll(t, r.Run(ctx, user, sid, userText("charge my card"), nil))
	_, callID, callName := pending(t, first)
	before := runs.Load()
	if pk.name != "interim" && before != 0 {
		t.Fatalf("the tool ran %d times before the answer", before)
	}
	if restart {
		r, svc = newRunner()
	}
	evs := runAll(t, r.Run(ctx, user, sid, pk.answer(callID, callName), nil))
	if got := runs.Load(); got != 1 {
		t.Errorf("the tool ran %d times in all, want exactly 1", got)
	}
	if got := strings.Join(answers(evs), ","); got != shape.want {
		t.Errorf("answers after resuming: %q, want %q", got, shape.want)
	}
	s := stored(t, svc, key)
	checkOneInvocation(t, s)
	// Only A ever answers charge_card, and never with an error (but the
	// interim one of a call waiting for approval, as ADK answers it).
	for _, ev := range s.Events() {
		for _, fr := range ev.FunctionResponses() {
			if fr.Name == "charge_card" && ev.Author != "A" && ev.Author != event.AuthorUser {
				t.Errorf("%s answered A's call: %v", ev.Author, fr.Response)
			}
			if msg, bad := fr.Response["error"]; bad && msg != llmagent.PendingConfirmationMessage {
				t.Errorf("%s: error response %v", ev.Author, fr.Response)
			}
		}
	}
	// The same answer again is refused and stores nothing.
	n := s.Len()
	for _, err := range r.Run(ctx, user, sid, pk.answer(callID, callName), nil) {
		if err == nil {
			t.Fatal("a second answer to the same call was accepted")
		}
	}
	if got := stored(t, svc, key).Len(); got != n {
		t.Errorf("a refused answer changed the log: %d events, want %d", got, n)
	}
	if got := runs.Load(); got != 1 {
		t.Errorf("after a second answer the tool ran %d times, want 1", got)
	}
}

// TestT3InterimThenFinalAnswerModelView: after a long-running tool's interim
// result and the client's final answer, the model sees the call followed by
// exactly one response, the final one (CONFORMANCE T7).
func TestT3InterimThenFinalAnswerModelView(t *testing.T) {
	var runs atomic.Int32
	m := scripted.NewSequence("m", scripted.Call("charge_card", nil), scripted.Text("charged")).Recording()
	r, _, key := setup(t, llm(t, "A", m, pauseKinds[2].tool(t, &runs)), runner.Config{Resumable: true})
	ctx := context.Background()
	_, id, name := pending(t, runAll(t, r.Run(ctx, user, key.SessionID, userText("charge"), nil)))
	runAll(t, r.Run(ctx, user, key.SessionID, pauseKinds[2].answer(id, name), nil))
	reqs := m.Requests()
	last := reqs[len(reqs)-1].Contents
	var responses []*genai.FunctionResponse
	for _, c := range last {
		for _, p := range c.Parts {
			if p.FunctionResponse != nil {
				responses = append(responses, p.FunctionResponse)
			}
		}
	}
	if len(responses) != 1 || responses[0].Response["status"] != "done" {
		t.Fatalf("the model saw responses %v, want only the final one", responses)
	}
	if fc := last[len(last)-2].Parts[0].FunctionCall; fc == nil || fc.Name != "charge_card" {
		t.Fatalf("the response does not follow its call: %v", last[len(last)-2])
	}
}

// TestT3CustomAgentAnswers: a custom agent that pauses on a call of its own
// gets the client's answer through Invocation.Answers, once: not in a
// later loop pass, and never in another agent (CONFORMANCE T6).
func TestT3CustomAgentAnswers(t *testing.T) {
	var got []string
	asker := custom(t, "asker", func(ctx context.Context, inv *agent.Invocation, yield func(*event.Event, error) bool) {
		ev := inv.NewEvent()
		if ans := inv.Answers(); len(ans) > 0 {
			got = append(got, fmt.Sprintf("asker:%v", ans[0].Response.Response["value"]))
			ev.Content = genai.NewContentFromText("thanks", genai.RoleModel)
			yield(ev, nil)
			return
		}
		got = append(got, "asker:asks")
		ev.Content = &genai.Content{Role: genai.RoleModel, Parts: []*genai.Part{{FunctionCall: &genai.FunctionCall{ID: fmt.Sprintf("ask-%d", len(got)), Name: "ask_user"}}}}
		ev.LongRunningToolIDs = []string{ev.Content.Parts[0].FunctionCall.ID}
		if yield(ev, nil) {
			inv.End() // paused until the client answers
		}
	})
	other := custom(t, "other", func(ctx context.Context, inv *agent.Invocation, yield func(*event.Event, error) bool) {
		got = append(got, fmt.Sprintf("other:%d", len(inv.Answers())))
		ev := inv.NewEvent()
		ev.Content = genai.NewContentFromText("other ran", genai.RoleModel)
		yield(ev, nil)
	})
	r, _, key := setup(t, loop(t, "root", 2, asker, other), runner.Config{Resumable: true})
	ctx := context.Background()
	_, id, name := pending(t, runAll(t, r.Run(ctx, user, key.SessionID, userText("go"), nil)))
	evs := runAll(t, r.Run(ctx, user, key.SessionID, answer(id, name, map[string]any{"value": 42}), nil))
	want := "asker:asks,asker:42,other:0,asker:asks"
	if s := strings.Join(got, ","); s != want {
		t.Fatalf("runs %s, want %s", s, want)
	}
	if _, id2, _ := pending(t, evs); id2 == id {
		t.Fatal("the second pass paused on the answered call")
	}
}

// TestT7InterimResultAndResumability: a long-running tool's interim result
// goes back to the model at once in an application that is not resumable,
// as in ADK (the model can tell the user the request is under way), and the
// call still waits for the client's final answer, which the model then
// gets; a resumable application pauses at the interim result instead, as
// ADK's resumable apps do. Either way the tool runs once (CONFORMANCE T7).
func TestT7InterimResultAndResumability(t *testing.T) {
	for _, resumable := range []bool{false, true} {
		var runs atomic.Int32
		turns := []scripted.Turn{scripted.Call("charge_card", nil), scripted.Text("submitted"), scripted.Text("charged")}
		if resumable {
			turns = []scripted.Turn{scripted.Call("charge_card", nil), scripted.Text("charged")}
		}
		m := scripted.NewSequence("m", turns...).Recording()
		r, _, key := setup(t, llm(t, "A", m, pauseKinds[2].tool(t, &runs)), runner.Config{Resumable: resumable})
		ctx := context.Background()
		first := runAll(t, r.Run(ctx, user, key.SessionID, userText("charge"), nil))
		wantFirst := 1
		if !resumable {
			wantFirst = 2 // the call, then the model with the interim result
			if last := first[len(first)-1]; last.Text() != "submitted" {
				t.Fatalf("resumable=%v: the turn ended with %q, want the model's answer to the interim result", resumable, last.Text())
			}
		}
		if n := len(m.Requests()); n != wantFirst {
			t.Fatalf("resumable=%v: the model was called %d times in the first turn, want %d", resumable, n, wantFirst)
		}
		_, id, name := pending(t, first)
		evs := runAll(t, r.Run(ctx, user, key.SessionID, pauseKinds[2].answer(id, name), nil))
		if last := evs[len(evs)-1]; last.Text() != "charged" {
			t.Fatalf("resumable=%v: the answer ended with %q, want the model's answer to it", resumable, last.Text())
		}
		reqs := m.Requests()
		if n := len(reqs); n != wantFirst+1 {
			t.Fatalf("resumable=%v: the model was called %d times, want %d", resumable, n, wantFirst+1)
		}
		last := reqs[len(reqs)-1].Contents
		if fr := last[len(last)-1].Parts[0].FunctionResponse; fr == nil || fr.Response["status"] != "done" {
			t.Fatalf("resumable=%v: the model's last request ends with %v, want the final answer", resumable, last[len(last)-1])
		}
		if n := runs.Load(); n != 1 {
			t.Fatalf("resumable=%v: the tool ran %d times, want 1", resumable, n)
		}
	}
}
