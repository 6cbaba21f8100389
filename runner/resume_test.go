package runner_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"google.golang.org/genai"

	"github.com/loomkit/loom/agent"
	"github.com/loomkit/loom/agent/llmagent"
	"github.com/loomkit/loom/agent/workflowagent"
	"github.com/loomkit/loom/event"
	"github.com/loomkit/loom/model/scripted"
	"github.com/loomkit/loom/runner"
	"github.com/loomkit/loom/session"
	"github.com/loomkit/loom/session/memsession"
	"github.com/loomkit/loom/session/sqlsession"
	"github.com/loomkit/loom/tool"
	"github.com/loomkit/loom/tool/functiontool"
)

// waitTool is a long-running tool: the client sends its result later.
func waitTool(t testing.TB) tool.Tool {
	t.Helper()
	w, err := functiontool.New(functiontool.Config{Name: "wait", LongRunning: true},
		func(context.Context, tool.Context, struct{}) (map[string]any, error) { return nil, nil })
	if err != nil {
		t.Fatal(err)
	}
	return w
}

func llm(t testing.TB, name string, m *scripted.Model, tools ...tool.Tool) agent.Agent {
	t.Helper()
	a, err := llmagent.New(llmagent.Config{Name: name, Model: m, Tools: tools})
	if err != nil {
		t.Fatal(err)
	}
	return a
}

func seq(t testing.TB, name string, subs ...agent.Agent) agent.Agent {
	t.Helper()
	a, err := workflowagent.NewSequential(workflowagent.Config{Name: name, SubAgents: subs})
	if err != nil {
		t.Fatal(err)
	}
	return a
}

func loop(t testing.TB, name string, max int, subs ...agent.Agent) agent.Agent {
	t.Helper()
	a, err := workflowagent.NewLoop(workflowagent.LoopConfig{Config: workflowagent.Config{Name: name, SubAgents: subs}, MaxIterations: max})
	if err != nil {
		t.Fatal(err)
	}
	return a
}

// runAll runs one invocation and returns its events without checkpoints.
func runAll(t *testing.T, evs func(func(*event.Event, error) bool)) []*event.Event {
	t.Helper()
	var out []*event.Event
	for ev, err := range evs {
		if err != nil {
			t.Fatal(err)
		}
		if !ev.Partial && !agent.IsCheckpoint(ev) {
			out = append(out, ev)
		}
	}
	return out
}

// pending returns the single long-running call id of evs.
func pending(t *testing.T, evs []*event.Event) (invocationID, callID, name string) {
	t.Helper()
	for _, ev := range evs {
		if len(ev.LongRunningToolIDs) > 0 {
			id := ev.LongRunningToolIDs[0]
			for _, fc := range ev.FunctionCalls() {
				if fc.ID == id {
					return ev.InvocationID, id, fc.Name
				}
			}
		}
	}
	t.Fatalf("no paused call among %d events", len(evs))
	return "", "", ""
}

func answer(id, name string, resp map[string]any) *genai.Content {
	return &genai.Content{Role: genai.RoleUser, Parts: []*genai.Part{{FunctionResponse: &genai.FunctionResponse{ID: id, Name: name, Response: resp}}}}
}

func answers(evs []*event.Event) []string {
	var out []string
	for _, ev := range evs {
		if s := ev.Text(); s != "" {
			out = append(out, ev.Author+":"+s)
		}
	}
	return out
}

// checkOneInvocation checks that every event of the session after the first
// has the same invocation id, and that no event is stored twice.
func checkOneInvocation(t *testing.T, s *session.Session) {
	t.Helper()
	ids := map[string]bool{}
	inv := s.At(0).InvocationID
	for _, ev := range s.Events() {
		if ids[ev.ID] {
			t.Errorf("event %s stored twice", ev.ID)
		}
		ids[ev.ID] = true
		if ev.InvocationID != inv {
			t.Errorf("event of %s in invocation %s, want the resumed %s", ev.Author, ev.InvocationID, inv)
		}
	}
}

// TestT3SequentialResumesAfterPause: a sequence [A (long-running tool), B]
// pauses after A's call; the answer resumes A in the same invocation, and
// then B runs.
func TestT3SequentialResumesAfterPause(t *testing.T) {
	mA := scripted.NewSequence("mA", scripted.Call("wait", nil), scripted.Text("A done"))
	mB := scripted.NewSequence("mB", scripted.Text("B done"))
	r, svc, key := setup(t, seq(t, "pipeline", llm(t, "A", mA, waitTool(t)), llm(t, "B", mB)), runner.Config{Resumable: true})
	ctx := context.Background()

	evs := runAll(t, r.Run(ctx, user, key.SessionID, userText("go"), nil))
	invID, callID, name := pending(t, evs)
	if len(mB.Requests()) != 0 {
		t.Fatal("B ran before the pause was answered")
	}
	evs = runAll(t, r.Run(ctx, user, key.SessionID, answer(callID, name, map[string]any{"ok": true}), nil))
	if got := strings.Join(answers(evs), ","); got != "A:A done,B:B done" {
		t.Fatalf("resumed answers %q, want A then B", got)
	}
	for _, ev := range evs {
		if ev.InvocationID != invID {
			t.Errorf("resumed event of %s in invocation %s, want %s", ev.Author, ev.InvocationID, invID)
		}
	}
	// A's model saw its call and the client's answer.
	last := mA.Requests()[1].Contents
	if fr := last[len(last)-1].Parts[0].FunctionResponse; fr == nil || fr.Response["ok"] != true {
		t.Errorf("A's history does not end with the answer: %+v", last[len(last)-1])
	}
	s := stored(t, svc, key)
	checkOneInvocation(t, s)
	if end := s.At(s.Len() - 1); end.Author != "pipeline" || !end.Actions.EndOfAgent {
		t.Errorf("the sequence did not record its end")
	}
	// A finished invocation resumes to nothing.
	if evs := runAll(t, r.Resume(ctx, user, key.SessionID, invID, nil)); len(evs) != 0 {
		t.Errorf("resuming a finished invocation yielded %d events", len(evs))
	}
}

// TestT3LoopResumesRemainingIterations: a loop of 2 passes pausing in pass 1
// resumes and completes exactly both passes.
func TestT3LoopResumesRemainingIterations(t *testing.T) {
	mA := scripted.NewSequence("mA", scripted.Call("wait", nil), scripted.Text("A1"), scripted.Text("A2"))
	mB := scripted.NewSequence("mB", scripted.Text("B1"), scripted.Text("B2"))
	r, svc, key := setup(t, loop(t, "loop", 2, llm(t, "A", mA, waitTool(t)), llm(t, "B", mB)), runner.Config{Resumable: true})
	ctx := context.Background()

	_, callID, name := pending(t, runAll(t, r.Run(ctx, user, key.SessionID, userText("go"), nil)))
	evs := runAll(t, r.Run(ctx, user, key.SessionID, answer(callID, name, map[string]any{"ok": true}), nil))
	if got := strings.Join(answers(evs), ","); got != "A:A1,B:B1,A:A2,B:B2" {
		t.Fatalf("resumed answers %q, want both passes exactly", got)
	}
	if len(mA.Requests()) != 3 || len(mB.Requests()) != 2 {
		t.Errorf("A called %d times, B %d; want 3 and 2", len(mA.Requests()), len(mB.Requests()))
	}
	checkOneInvocation(t, stored(t, svc, key))
}

// TestT3ParallelResumesOnlyPausedBranch: a parallel agent whose branch A
// pauses lets branch B finish in the first run; resuming runs only A.
func TestT3ParallelResumesOnlyPausedBranch(t *testing.T) {
	mA := scripted.NewSequence("mA", scripted.Call("wait", nil), scripted.Text("A done"))
	echo, err := functiontool.New(functiontool.Config{Name: "echo"},
		func(_ context.Context, _ tool.Context, args map[string]any) (map[string]any, error) { return args, nil })
	if err != nil {
		t.Fatal(err)
	}
	mB := scripted.NewSequence("mB", scripted.Call("echo", map[string]any{"x": 1.0}), scripted.Text("B done"))
	par, err := workflowagent.NewParallel(workflowagent.Config{Name: "par", SubAgents: []agent.Agent{llm(t, "A", mA, waitTool(t)), llm(t, "B", mB, echo)}})
	if err != nil {
		t.Fatal(err)
	}
	mC := scripted.NewSequence("mC", scripted.Text("C done"))
	r, svc, key := setup(t, seq(t, "root", par, llm(t, "C", mC)), runner.Config{Resumable: true})
	ctx := context.Background()

	evs := runAll(t, r.Run(ctx, user, key.SessionID, userText("go"), nil))
	if got := strings.Join(answers(evs), ","); got != "B:B done" {
		t.Fatalf("first run answers %q, want B to finish while A waits", got)
	}
	if len(mC.Requests()) != 0 {
		t.Fatal("the step after the parallel agent ran while a branch was paused")
	}
	_, callID, name := pending(t, evs)
	evs = runAll(t, r.Run(ctx, user, key.SessionID, answer(callID, name, map[string]any{"ok": true}), nil))
	if got := strings.Join(answers(evs), ","); got != "A:A done,C:C done" {
		t.Fatalf("resumed answers %q, want A then C", got)
	}
	if len(mB.Requests()) != 2 {
		t.Errorf("B's model called %d times, want 2 (not re-run)", len(mB.Requests()))
	}
	s := stored(t, svc, key)
	checkOneInvocation(t, s)
	for _, ev := range s.Events() {
		if len(ev.FunctionResponses()) > 0 && ev.Author == event.AuthorUser && ev.Branch != "par.A" {
			t.Errorf("the answer is on branch %q, want its call's branch par.A", ev.Branch)
		}
	}
}

// TestT3NestedSequentialInLoop: the pause happens in the second pass of a
// loop over a sequence; resuming finishes that pass only.
func TestT3NestedSequentialInLoop(t *testing.T) {
	mA := scripted.NewSequence("mA", scripted.Text("A1"), scripted.Call("wait", nil), scripted.Text("A2"))
	mB := scripted.NewSequence("mB", scripted.Text("B1"), scripted.Text("B2"))
	root := loop(t, "loop", 2, seq(t, "steps", llm(t, "A", mA, waitTool(t)), llm(t, "B", mB)))
	r, svc, key := setup(t, root, runner.Config{Resumable: true})
	ctx := context.Background()

	evs := runAll(t, r.Run(ctx, user, key.SessionID, userText("go"), nil))
	if got := strings.Join(answers(evs), ","); got != "A:A1,B:B1" {
		t.Fatalf("first run answers %q", got)
	}
	_, callID, name := pending(t, evs)
	evs = runAll(t, r.Run(ctx, user, key.SessionID, answer(callID, name, map[string]any{"ok": true}), nil))
	if got := strings.Join(answers(evs), ","); got != "A:A2,B:B2" {
		t.Fatalf("resumed answers %q, want the rest of pass 2 only", got)
	}
	checkOneInvocation(t, stored(t, svc, key))
}

// TestT3ConfirmationResumesSequence: a tool that requires confirmation
// inside a sequence; after approval the tool runs once, its agent answers,
// and the sequence goes on.
func TestT3ConfirmationResumesSequence(t *testing.T) {
	runs := 0
	pay, err := functiontool.New(functiontool.Config{Name: "pay", RequireConfirmation: true},
		func(context.Context, tool.Context, struct{}) (map[string]any, error) {
			runs++
			return map[string]any{"paid": true}, nil
		})
	if err != nil {
		t.Fatal(err)
	}
	mA := scripted.NewSequence("mA", scripted.Call("pay", nil), scripted.Text("paid"))
	mB := scripted.NewSequence("mB", scripted.Text("receipt sent"))
	r, svc, key := setup(t, seq(t, "pipeline", llm(t, "A", mA, pay), llm(t, "B", mB)), runner.Config{Resumable: true})
	ctx := context.Background()

	_, reqID, name := pending(t, runAll(t, r.Run(ctx, user, key.SessionID, userText("pay"), nil)))
	if name != event.FunctionRequestConfirmation || runs != 0 {
		t.Fatalf("paused on %s after %d runs, want a confirmation request before any run", name, runs)
	}
	evs := runAll(t, r.Run(ctx, user, key.SessionID, answer(reqID, name, map[string]any{"confirmed": true}), nil))
	if got := strings.Join(answers(evs), ","); got != "A:paid,B:receipt sent" || runs != 1 {
		t.Fatalf("resumed answers %q after %d runs, want A then B and one run", got, runs)
	}
	checkOneInvocation(t, stored(t, svc, key))
}

// TestT3ResumeUnknownInvocation: resuming an invocation the session does
// not have fails and stores nothing, for Resume and RunOptions.InvocationID.
func TestT3ResumeUnknownInvocation(t *testing.T) {
	m := scripted.NewSequence("m", scripted.Text("hi"))
	r, svc, key := setup(t, llm(t, "a", m), runner.Config{Resumable: true})
	ctx := context.Background()
	for _, err := range r.Resume(ctx, user, key.SessionID, "e-nope", nil) {
		if !errors.Is(err, runner.ErrInvalid) {
			t.Errorf("Resume error = %v, want ErrInvalid", err)
		}
	}
	_, err := r.RunSync(ctx, user, key.SessionID, userText("x"), &runner.RunOptions{InvocationID: "e-nope"})
	if !errors.Is(err, runner.ErrInvalid) {
		t.Errorf("Run with an unknown invocation id: error = %v, want ErrInvalid", err)
	}
	if n := stored(t, svc, key).Len(); n != 0 {
		t.Errorf("stored %d events, want none", n)
	}
	if len(m.Requests()) != 0 {
		t.Error("the model was called")
	}
}

// TestT3ExplicitInvocationID: RunOptions.InvocationID resumes a paused
// invocation with the answer, and rejects an answer to another invocation.
func TestT3ExplicitInvocationID(t *testing.T) {
	mA := scripted.NewSequence("mA", scripted.Call("wait", nil), scripted.Text("A done"))
	r, _, key := setup(t, seq(t, "pipeline", llm(t, "A", mA, waitTool(t))), runner.Config{Resumable: true})
	ctx := context.Background()
	invID, callID, name := pending(t, runAll(t, r.Run(ctx, user, key.SessionID, userText("go"), nil)))
	msg := answer(callID, name, map[string]any{"ok": true})
	if _, err := r.RunSync(ctx, user, key.SessionID, msg, &runner.RunOptions{InvocationID: "e-other"}); !errors.Is(err, runner.ErrInvalid) {
		t.Fatalf("answer with a mismatched invocation id: error = %v, want ErrInvalid", err)
	}
	evs := runAll(t, r.Run(ctx, user, key.SessionID, msg, &runner.RunOptions{InvocationID: invID}))
	if len(evs) == 0 || evs[len(evs)-1].Text() != "A done" || evs[0].InvocationID != invID {
		t.Fatalf("explicit resume answered %v", answers(evs))
	}
}

// Kill and resume (T3 after a crash): a child process runs a sequence on a
// SQLite file and is killed (SIGKILL) inside step 2's tool; the parent
// resumes the invocation from the file.

const killEnv = "LOOM_T3_KILL_DIR"

// killApp builds the app of the kill test on the SQLite file in dir. step1
// counts its runs in a file; step2's tool kills the process the first time.
func killApp(t testing.TB, dir string, m1, m2 *scripted.Model) (*runner.Runner, *session.Service) {
	t.Helper()
	count, err := functiontool.New(functiontool.Config{Name: "count"},
		func(context.Context, tool.Context, struct{}) (map[string]any, error) {
			f, err := os.OpenFile(filepath.Join(dir, "count.log"), os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
			if err != nil {
				return nil, err
			}
			defer f.Close()
			_, err = f.WriteString("ran\n")
			return map[string]any{"counted": true}, err
		})
	if err != nil {
		t.Fatal(err)
	}
	crash, err := functiontool.New(functiontool.Config{Name: "crash"},
		func(context.Context, tool.Context, struct{}) (map[string]any, error) {
			marker := filepath.Join(dir, "crashed")
			if _, err := os.Stat(marker); errors.Is(err, os.ErrNotExist) {
				if err := os.WriteFile(marker, nil, 0o644); err != nil {
					return nil, err
				}
				_ = syscall.Kill(os.Getpid(), syscall.SIGKILL)
				select {} // the signal arrives
			}
			return map[string]any{"finished": true}, nil
		})
	if err != nil {
		t.Fatal(err)
	}
	store, err := sqlsession.Open(context.Background(), "sqlite://"+filepath.Join(dir, "sessions.db"), &sqlsession.Options{LeaseTTL: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { store.Close() })
	svc := session.NewService(store, nil)
	root := seq(t, "pipeline", llm(t, "step1", m1, count), llm(t, "step2", m2, crash))
	r, err := runner.New(runner.Config{AppName: app, Agent: root, Sessions: svc, AutoCreateSession: true, Resumable: true})
	if err != nil {
		t.Fatal(err)
	}
	return r, svc
}

// TestT3KillAndResume checks resuming after the process was killed: step 1's
// tool ran exactly once in all, step 2's interrupted call completes, the
// final answer arrives, and the log holds no duplicate.
func TestT3KillAndResume(t *testing.T) {
	if dir := os.Getenv(killEnv); dir != "" {
		// The child: run until the tool kills the process.
		m1 := scripted.NewSequence("m1", scripted.Call("count", nil), scripted.Text("counted"))
		m2 := scripted.NewSequence("m2", scripted.Call("crash", nil))
		r, _ := killApp(t, dir, m1, m2)
		for _, err := range r.Run(context.Background(), user, "s1", userText("go"), nil) {
			if err != nil {
				t.Fatal(err)
			}
		}
		t.Fatal("the child process was not killed")
	}
	dir := t.TempDir()
	cmd := exec.Command(os.Args[0], "-test.run=^TestT3KillAndResume$", "-test.count=1")
	cmd.Env = append(os.Environ(), killEnv+"="+dir)
	out, err := cmd.CombinedOutput()
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.Sys().(syscall.WaitStatus).Signal() != syscall.SIGKILL {
		t.Fatalf("child process: %v, want killed by SIGKILL\n%s", err, out)
	}

	// The parent: step 1's model must not be called again; step 2's model
	// answers once its call has a response.
	m1 := scripted.NewSequence("m1")
	m2 := scripted.NewSequence("m2", scripted.Text("all done"))
	r, svc := killApp(t, dir, m1, m2)
	ctx := context.Background()
	key := session.Key{AppName: app, UserID: user, SessionID: "s1"}
	before, err := svc.Get(ctx, key, nil)
	if err != nil {
		t.Fatal(err)
	}
	invID := before.At(0).InvocationID
	evs := runAll(t, r.Resume(ctx, user, "s1", invID, nil))
	if got := strings.Join(answers(evs), ","); got != "step2:all done" {
		t.Fatalf("resumed answers %q, want step 2's final answer", got)
	}
	if len(m1.Requests()) != 0 {
		t.Error("step 1 ran again")
	}
	counts, err := os.ReadFile(filepath.Join(dir, "count.log"))
	if err != nil || strings.Count(string(counts), "ran") != 1 {
		t.Errorf("step 1's tool ran %d times, want once (%v)", strings.Count(string(counts), "ran"), err)
	}
	s, err := svc.Get(ctx, key, nil)
	if err != nil {
		t.Fatal(err)
	}
	checkOneInvocation(t, s)
	responses := map[string]int{}
	for _, ev := range s.Events() {
		for _, fr := range ev.FunctionResponses() {
			responses[fr.Name]++
		}
	}
	if fmt.Sprint(responses) != "map[count:1 crash:1]" {
		t.Errorf("function responses %v, want one each", responses)
	}
	if end := s.At(s.Len() - 1); end.Author != "pipeline" || !end.Actions.EndOfAgent {
		t.Error("the sequence did not record its end")
	}
}

// A paused sequence resumes in the same invocation when the client answers
// the long-running call; Resume continues an invocation after a crash.
func ExampleRunner_Resume() {
	ctx := context.Background()
	wait, _ := functiontool.New(functiontool.Config{Name: "approve", LongRunning: true},
		func(context.Context, tool.Context, struct{}) (map[string]any, error) { return nil, nil })
	asker, _ := llmagent.New(llmagent.Config{Name: "asker", Tools: []tool.Tool{wait},
		Model: scripted.NewSequence("m1", scripted.Call("approve", nil), scripted.Text("approved"))})
	after, _ := llmagent.New(llmagent.Config{Name: "after", Model: scripted.NewSequence("m2", scripted.Text("shipped"))})
	pipeline, _ := workflowagent.NewSequential(workflowagent.Config{Name: "pipeline", SubAgents: []agent.Agent{asker, after}})
	r, _ := runner.New(runner.Config{AppName: "shop", Agent: pipeline, Sessions: memsession.NewService(), AutoCreateSession: true, Resumable: true})

	var invID, callID string
	for ev, err := range r.Run(ctx, "ada", "s1", genai.NewContentFromText("ship it", genai.RoleUser), nil) {
		if err != nil {
			fmt.Println(err)
			return
		}
		if len(ev.LongRunningToolIDs) > 0 {
			invID, callID = ev.InvocationID, ev.LongRunningToolIDs[0]
			fmt.Println("paused on", ev.FunctionCalls()[0].Name)
		}
	}
	msg := &genai.Content{Role: genai.RoleUser, Parts: []*genai.Part{{FunctionResponse: &genai.FunctionResponse{
		ID: callID, Name: "approve", Response: map[string]any{"ok": true}}}}}
	for ev, err := range r.Run(ctx, "ada", "s1", msg, nil) {
		if err != nil {
			fmt.Println(err)
			return
		}
		if ev.Text() != "" {
			fmt.Println(ev.Author+":", ev.Text(), ev.InvocationID == invID)
		}
	}
	// The invocation has finished: resuming it again yields nothing.
	n := 0
	for range r.Resume(ctx, "ada", "s1", invID, nil) {
		n++
	}
	fmt.Println("events after a second resume:", n)
	// Output:
	// paused on approve
	// asker: approved true
	// after: shipped true
	// events after a second resume: 0
}
