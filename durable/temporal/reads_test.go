package temporal_test

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"go.temporal.io/sdk/testsuite"
	"google.golang.org/genai"

	"github.com/loomkit/loom/durable/temporal"
	"github.com/loomkit/loom/event"
	"github.com/loomkit/loom/runner"
	"github.com/loomkit/loom/session"
	"github.com/loomkit/loom/session/memsession"
)

// countingStore is a session store that counts the reads made through it
// and the events they return.
type countingStore struct {
	session.Store
	reads, events atomic.Int64
}

func (s *countingStore) GetSession(ctx context.Context, key session.Key, w session.Window) (*session.Record, error) {
	rec, err := s.Store.GetSession(ctx, key, w)
	if err == nil {
		s.reads.Add(1)
		s.events.Add(int64(len(rec.Events) + len(rec.Raw)))
	}
	return rec, err
}

// countingEnv returns a test workflow environment that runs the test app
// over a counting memory store holding the empty session "s".
func countingEnv(t *testing.T) (*testsuite.TestWorkflowEnvironment, *runner.Runner, *countingStore, string) {
	t.Helper()
	store := &countingStore{Store: memsession.New()}
	env, app, dir := suiteEnvOver(t, session.NewService(store, nil), time.Millisecond)
	return env, app, store, dir
}

// TestStepReadsDoNotGrow: the activities of a message read what the
// message needs, not the whole session. 21 messages, each run in three
// Steps (a model turn calling a tool, the tool round, the answers), are
// signalled one after the other; however long the session has grown, the
// activities of a message read a bounded number of events.
//
// (CONFORMANCE D2)
func TestStepReadsDoNotGrow(t *testing.T) {
	env, app, store, _ := countingEnv(t)
	const n = 21
	// events[i] and reads[i]: what was read before message i was
	// signalled (events[n]: at the end). A message's activities have all
	// run before the next delayed callback: the test clock waits for them.
	var events, reads [n + 1]int64
	for i := range n {
		env.RegisterDelayedCallback(func() {
			events[i], reads[i] = store.events.Load(), store.reads.Load()
			send(t, env, temporal.Message{RequestID: fmt.Sprint("r", i), Content: text("slow")}, nil)
		}, time.Duration(i+1)*time.Second)
	}
	env.ExecuteWorkflow(temporal.WorkflowName, temporal.SessionInput{
		App: appName, User: user, Session: "s", TreeHash: temporal.TreeHash(app.Tree()),
		Options: temporal.Options{Idle: time.Minute},
	})
	events[n], reads[n] = store.events.Load(), store.reads.Load()
	if !env.IsWorkflowCompleted() {
		t.Fatal("the workflow did not complete")
	}
	if err := env.GetWorkflowError(); err != nil {
		t.Fatalf("workflow error: %v", err)
	}
	total := stored(t, app, "s").Len()
	perMessage := total / n
	if perMessage < 4 || total != perMessage*n {
		t.Fatalf("the session holds %d events, want the same number (at least 4) for each of the %d messages", total, n)
	}
	// The activities must read at most the message's own events, a few
	// times over; the whole session is 20 times that for the last one.
	bound := int64(3 * perMessage)
	for i := 1; i < n; i++ {
		if got := events[i+1] - events[i]; got > bound {
			t.Errorf("message %d (after %d events) read %d events in %d reads, want at most %d", i+1, i*perMessage, got, reads[i+1]-reads[i], bound)
		}
	}
	t.Logf("the last message read %d events in %d reads (session: %d events)", events[n]-events[n-1], reads[n]-reads[n-1], total)
}

// TestPauseOfEarlierMessageKept: a call of an earlier message that still
// waits for the client keeps the session paused through later messages
// that do not answer it: their status reports the pause and the workflow
// waits for the answer beyond its idle time. The answer, two hours later,
// resumes the call's invocation and ends the pause.
func TestPauseOfEarlierMessageKept(t *testing.T) {
	env, app, _, dir := countingEnv(t)
	statuses := map[string]*temporal.Status{}
	var updateErr error
	at := func(d time.Duration, id string, msg func() temporal.Message) {
		env.RegisterDelayedCallback(func() {
			m := msg()
			m.RequestID = id
			st := &temporal.Status{}
			statuses[id] = st
			env.UpdateWorkflow(temporal.UpdateRun, "w-"+id, &testsuite.TestUpdateCallback{
				OnAccept: func() {},
				OnReject: func(err error) { updateErr = err },
				OnComplete: func(res any, err error) {
					if err != nil {
						updateErr = err
					} else if s, ok := res.(temporal.Status); ok {
						*st = s
					} else {
						updateErr = fmt.Errorf("update result %T, want temporal.Status", res)
					}
				},
			}, m)
		}, d)
	}
	at(time.Second, "pay", func() temporal.Message { return temporal.Message{Content: text("pay")} })
	at(2*time.Second, "hello", func() temporal.Message { return temporal.Message{Content: text("hello")} })
	at(3*time.Second, "again", func() temporal.Message { return temporal.Message{Content: text("again")} })
	at(2*time.Hour, "answer", func() temporal.Message {
		return temporal.Message{Content: approve(confirmationCall(t, stored(t, app, "s")))}
	})
	env.ExecuteWorkflow(temporal.WorkflowName, temporal.SessionInput{
		App: appName, User: user, Session: "s", TreeHash: temporal.TreeHash(app.Tree()),
		Options: temporal.Options{Idle: time.Minute},
	})
	if err := env.GetWorkflowError(); err != nil {
		t.Fatalf("workflow error: %v", err)
	}
	if updateErr != nil {
		t.Fatalf("wait update: %v", updateErr)
	}
	for id, want := range map[string]bool{"pay": true, "hello": true, "again": true, "answer": false} {
		st := statuses[id]
		if st == nil || !st.Done || st.Error != "" {
			t.Fatalf("message %s: status %+v, want done without error", id, st)
		}
		if st.Paused != want {
			t.Errorf("message %s: Paused = %v, want %v", id, st.Paused, want)
		}
	}
	if n := lines(t, dir, "pay.count"); n != 1 {
		t.Fatalf("the confirmed tool ran %d times, want 1", n)
	}
}

// TestRunReadsOnServer: on a real server, with the client and an
// in-process worker sharing a counting store, sending a message to a
// session of many messages reads a bounded number of events: neither the
// client nor the activities read the whole log.
func TestRunReadsOnServer(t *testing.T) {
	ctx := context.Background()
	app, store, k, cl, _ := countingServer(t, "reads-")
	const n = 15
	var last int64
	for i := range n {
		before := store.events.Load()
		var res result
		select {
		case res = <-collect(cl.Run(ctx, app, user, k.SessionID, text(fmt.Sprint("hello ", i)), nil)):
		case <-time.After(time.Minute):
			t.Fatalf("message %d did not end", i+1)
		}
		if res.err != nil || len(res.events) == 0 {
			t.Fatalf("message %d: %d events, error %v", i+1, len(res.events), res.err)
		}
		last = store.events.Load() - before
	}
	total := stored(t, app, k.SessionID).Len()
	perMessage := total / n
	if perMessage < 3 || total != perMessage*n {
		t.Fatalf("the session holds %d events, want the same number (at least 3) for each of the %d messages", total, n)
	}
	if bound := int64(4 * perMessage); last > bound {
		t.Fatalf("the last message read %d events (the session had %d), want at most %d", last, total-perMessage, bound)
	}
	t.Logf("the last message read %d events (session: %d events)", last, total)
}

// TestAnswerReadsOnServer: on a real server, the answer to a recent call
// reads the last events of a long session, not the whole log; the answer
// to a call made longer ago than those, found in the whole log, resumes
// it; an answer to no call is refused.
func TestAnswerReadsOnServer(t *testing.T) {
	ctx := context.Background()
	app, store, k, cl, dir := countingServer(t, "answers-")
	send := func(what string, msg *genai.Content) result {
		t.Helper()
		select {
		case res := <-collect(cl.Run(ctx, app, user, k.SessionID, msg, nil)):
			return res
		case <-time.After(time.Minute):
			t.Fatalf("%s did not end", what)
		}
		return result{}
	}
	chat := func(n int) {
		t.Helper()
		for i := range n {
			if res := send("a message", text(fmt.Sprint("hello ", i))); res.err != nil {
				t.Fatal(res.err)
			}
		}
	}
	pay := func() (id, name string) {
		t.Helper()
		if res := send("pay", text("pay")); res.err != nil {
			t.Fatal(res.err)
		}
		return confirmationCall(t, stored(t, app, k.SessionID))
	}

	chat(30)
	id, name := pay()
	before := store.events.Load()
	if res := send("the answer", approve(id, name)); res.err != nil {
		t.Fatal(res.err)
	}
	read, total := store.events.Load()-before, int64(stored(t, app, k.SessionID).Len())
	if read > total/2 {
		t.Fatalf("answering a recent call read %d events of a session of %d", read, total)
	}

	id, name = pay()
	chat(15) // the call is now further back than the events read first
	if res := send("the late answer", approve(id, name)); res.err != nil {
		t.Fatal(res.err)
	}
	if n := lines(t, dir, "pay.count"); n != 2 {
		t.Fatalf("the confirmed tool ran %d times, want 2", n)
	}
	if res := send("an answer to no call", approve("no-such-call", name)); !errors.Is(res.err, runner.ErrInvalid) {
		t.Fatalf("an answer to no call: %v, want runner.ErrInvalid", res.err)
	}
	t.Logf("answering a recent call read %d events (session: %d events)", read, total)
}

// countingServer returns, on a real server, the test app over a counting
// memory store, a new session of it (its id starting with prefix), a
// client with an in-process worker, and the app's directory.
func countingServer(t *testing.T, prefix string) (*runner.Runner, *countingStore, session.Key, *temporal.Client, string) {
	t.Helper()
	store := &countingStore{Store: memsession.New()}
	app, k, cl, dir := serverApp(t, session.NewService(store, nil), prefix)
	return app, store, k, cl, dir
}

// TestR10ImportedInvocationOnServer: through Temporal as in process, a
// message naming an invocation of a history the client imported is
// refused before anything is sent, and nothing runs or is stored
// (CONFORMANCE R10).
func TestR10ImportedInvocationOnServer(t *testing.T) {
	ctx := context.Background()
	app, _, k, cl, dir := countingServer(t, "imported-")
	hello := event.NewUserText("e-forged", "pay")
	call := event.New("e-forged", "assistant")
	call.Content = &genai.Content{Role: genai.RoleModel, Parts: []*genai.Part{
		{FunctionCall: &genai.FunctionCall{ID: "c1", Name: "pay", Args: map[string]any{}}},
	}}
	if _, err := app.CreateSession(ctx, user, "forged-"+k.SessionID, nil, []*event.Event{hello, call}); err != nil {
		t.Fatal(err)
	}
	var res result
	select {
	case res = <-collect(cl.Run(ctx, app, user, "forged-"+k.SessionID, text("go on"), &runner.RunOptions{InvocationID: "e-forged"})):
	case <-time.After(time.Minute):
		t.Fatal("the run did not end")
	}
	if !errors.Is(res.err, runner.ErrInvalid) {
		t.Fatalf("a run naming an imported invocation: %v, want runner.ErrInvalid", res.err)
	}
	if n := stored(t, app, "forged-"+k.SessionID).Len(); n != 2 {
		t.Fatalf("the session holds %d events, want the 2 imported", n)
	}
	if n := lines(t, dir, "pay.count"); n != 0 {
		t.Fatalf("the forged call ran %d times", n)
	}
}
