package temporal_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"iter"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"go.temporal.io/api/enums/v1"
	"google.golang.org/genai"

	"github.com/loomkit/loom/agent/llmagent"
	"github.com/loomkit/loom/durable/temporal"
	"github.com/loomkit/loom/model"
	"github.com/loomkit/loom/runner"
	"github.com/loomkit/loom/server"
	"github.com/loomkit/loom/session"
	"github.com/loomkit/loom/session/memsession"
	"github.com/loomkit/loom/storage"
)

// gatedModel streams the partial text "hel", then waits for its gate to
// open (for at most a minute), counts the store's reads since the partial,
// waits a little more and answers "hello".
type gatedModel struct {
	gate  chan struct{}
	store *countingStore
	// reads is the number of store reads made between the partial and the
	// answer, while the turn waited.
	reads chan int64
}

func (m *gatedModel) Name() string { return "gated" }

func (m *gatedModel) Generate(ctx context.Context, _ *model.Request, stream bool) iter.Seq2[*model.Response, error] {
	return func(yield func(*model.Response, error) bool) {
		if !stream {
			yield(nil, errors.New("gated: the test asks for streaming"))
			return
		}
		if !yield(&model.Response{Content: genai.NewContentFromText("hel", genai.RoleModel), Partial: true}, nil) {
			return
		}
		select {
		case <-m.gate:
		case <-time.After(time.Minute):
			yield(nil, errors.New("gated: the partial text never reached the client"))
			return
		case <-ctx.Done():
			yield(nil, ctx.Err())
			return
		}
		before := m.store.reads.Load()
		time.Sleep(300 * time.Millisecond) // a client polling the log would read it meanwhile
		m.reads <- m.store.reads.Load() - before
		yield(&model.Response{Content: genai.NewContentFromText("hello", genai.RoleModel), FinishReason: genai.FinishReasonStop}, nil)
	}
}

// TestD4D5PartialsReachSSEClient: through Loom's HTTP API with invocations
// on Temporal and a worker in the server's process, a /run_sse request
// asking for streaming receives the model's partial text while the turn
// runs (the model waits until the client has it), then the final event;
// the session log holds the message and the final event only. While the
// turn runs nothing reads the session log: the client is not polling it.
//
// (CONFORMANCE D4, D5)
func TestD4D5PartialsReachSSEClient(t *testing.T) {
	c := dial(t)
	ctx := context.Background()
	store := &countingStore{Store: memsession.New()}
	svc := session.NewService(store, nil)
	m := &gatedModel{gate: make(chan struct{}), store: store, reads: make(chan int64, 1)}
	root, err := llmagent.New(llmagent.Config{Name: "greeter", Model: m})
	if err != nil {
		t.Fatal(err)
	}
	app, err := runner.New(runner.Config{AppName: appName, Agent: root, Sessions: svc, Resumable: true})
	if err != nil {
		t.Fatal(err)
	}
	cl := inProcessClient(t, c, app, temporal.Options{})
	srv, err := server.New(server.Config{Apps: []*runner.Runner{app}, Invoker: cl})
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(srv)
	defer hs.Close()
	k := session.Key{AppName: appName, UserID: user, SessionID: "stream-" + newQueue()}
	if _, err := svc.Create(ctx, k, nil); err != nil {
		t.Fatal(err)
	}
	body, err := json.Marshal(map[string]any{"appName": appName, "userId": user, "sessionId": k.SessionID, "newMessage": text("hi"), "streaming": true})
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.Post(hs.URL+"/run_sse", "application/json", bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("run_sse: status %d", resp.StatusCode)
	}
	got := streamedText(t, resp.Body, func(_ string, partial bool) {
		if partial {
			select {
			case <-m.gate:
			default:
				close(m.gate) // the client has the partial text: the turn goes on
			}
		}
	})
	if strings.Join(got, ",") != "partial:hel,hello" {
		t.Fatalf("streamed %q, want the partial text, then the answer", got)
	}
	select {
	case n := <-m.reads:
		if n != 0 {
			t.Fatalf("the session log was read %d times while the turn ran, want none", n)
		}
	default:
		t.Fatal("the model did not answer")
	}
	sess, err := svc.Get(ctx, k, nil)
	if err != nil {
		t.Fatal(err)
	}
	if sess.Len() != 2 || sess.At(1).Partial || sess.At(1).Text() != "hello" {
		t.Fatalf("the log holds %d events (last %+v), want the message and the answer", sess.Len(), sess.At(sess.Len()-1))
	}
}

// TestD3OneWorkflowTaskPerTurn: on a real server, each message's turn (a
// model call, a tool call and the answer) costs the session's workflow one
// workflow task and one local activity, and schedules no activity task;
// the first message starts the workflow with it.
//
// (CONFORMANCE D3)
func TestD3OneWorkflowTaskPerTurn(t *testing.T) {
	ctx := context.Background()
	app, k, cl, dir := serverApp(t, sessionsIn(t), "tasks-")
	const turns = 3
	for i := range turns {
		res := <-collect(cl.Run(ctx, app, user, k.SessionID, text("slow"), nil))
		if res.err != nil {
			t.Fatalf("message %d: %v", i+1, res.err)
		}
		if len(res.events) < 3 {
			t.Fatalf("message %d streamed %d events, want the call, its response and the answers", i+1, len(res.events))
		}
	}
	if n := lines(t, dir, "slow.count"); n != turns {
		t.Fatalf("the tool ran %d times, want %d", n, turns)
	}
	counts := map[enums.EventType]int{}
	markers := 0
	h := dial(t).GetWorkflowHistory(ctx, cl.WorkflowID(appName, user, k.SessionID), "", false, enums.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
	for h.HasNext() {
		ev, err := h.Next()
		if err != nil {
			t.Fatal(err)
		}
		counts[ev.EventType]++
		if ev.GetMarkerRecordedEventAttributes().GetMarkerName() == "LocalActivity" {
			markers++
		}
	}
	if got := counts[enums.EVENT_TYPE_WORKFLOW_TASK_COMPLETED]; got != turns {
		t.Errorf("%d workflow tasks completed for %d turns, want one each", got, turns)
	}
	if got := counts[enums.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED]; got != 0 {
		t.Errorf("%d activity tasks scheduled, want none", got)
	}
	if markers != turns {
		t.Errorf("%d local activities for %d turns, want one each", markers, turns)
	}
	if got := counts[enums.EVENT_TYPE_WORKFLOW_EXECUTION_UPDATE_COMPLETED]; got != turns {
		t.Errorf("%d run updates completed for %d turns, want one each", got, turns)
	}
}

// TestPollStreamsAcrossProcesses: with the worker in another process, a
// client with ClientConfig.Poll set yields the turn's committed events as
// they are committed (the tool call before the slow tool has completed),
// and the stream ends with every committed event of the message once, in
// log order.
func TestPollStreamsAcrossProcesses(t *testing.T) {
	c := dial(t)
	dir := t.TempDir()
	db := "sqlite://" + dir + "/sessions.db"
	ctx := context.Background()
	svc, err := storage.OpenSessions(ctx, db)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { svc.Close() })
	app, err := newApp(dir, 0, svc) // the client's copy of the app: its tree, never its tools
	if err != nil {
		t.Fatal(err)
	}
	k := session.Key{AppName: appName, UserID: user, SessionID: "poll-" + newQueue()}
	if _, err := svc.Create(ctx, k, nil); err != nil {
		t.Fatal(err)
	}
	queue := newQueue()
	startWorker(t, queue, dir, db, 2*time.Second)
	cl, err := temporal.NewClient(temporal.ClientConfig{Client: c, TaskQueue: queue, Poll: 50 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	var streamed []string
	early := false
	for ev, err := range cl.Run(ctx, app, user, k.SessionID, text("slow"), nil) {
		if err != nil {
			t.Fatal(err)
		}
		if len(ev.FunctionCalls()) > 0 && lines(t, dir, "slow.count") == 0 {
			early = true
		}
		streamed = append(streamed, ev.ID)
	}
	if !early {
		t.Fatal("the tool call reached the client only after the tool completed")
	}
	sess, err := svc.Get(ctx, k, nil)
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, ev := range sess.Events()[1:] {
		ids = append(ids, ev.ID)
	}
	if strings.Join(streamed, ",") != strings.Join(ids, ",") {
		t.Fatalf("streamed events %v, want the log's %v", streamed, ids)
	}
}
