package temporal_test

// Tests of the push path: a worker in another process (the test binary,
// see TestMain) sends a turn's events to the feed listener of the client
// in this process.

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"iter"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"go.temporal.io/sdk/client"
	"google.golang.org/genai"

	"github.com/loomkit/loom/agent/llmagent"
	"github.com/loomkit/loom/durable/temporal"
	"github.com/loomkit/loom/event"
	"github.com/loomkit/loom/model"
	"github.com/loomkit/loom/runner"
	"github.com/loomkit/loom/server"
	"github.com/loomkit/loom/session"
	"github.com/loomkit/loom/storage"
)

// fileGatedModel answers "hi", when asked to stream, with the partial
// text "hel", then waits (for at most a minute) for the file "gate" in its
// directory, then answers "hello"; it answers anything else with "echo "
// and the text.
type fileGatedModel struct{ dir string }

func (m *fileGatedModel) Name() string { return "file-gated" }

func (m *fileGatedModel) Generate(ctx context.Context, req *model.Request, stream bool) iter.Seq2[*model.Response, error] {
	return func(yield func(*model.Response, error) bool) {
		last := ""
		if n := len(req.Contents); n > 0 && req.Contents[n-1] != nil && len(req.Contents[n-1].Parts) > 0 {
			last = req.Contents[n-1].Parts[0].Text
		}
		if last != "hi" {
			yield(&model.Response{Content: genai.NewContentFromText("echo "+last, genai.RoleModel), FinishReason: genai.FinishReasonStop}, nil)
			return
		}
		if stream && !yield(&model.Response{Content: genai.NewContentFromText("hel", genai.RoleModel), Partial: true}, nil) {
			return
		}
		deadline := time.Now().Add(time.Minute)
		for {
			if _, err := os.Stat(filepath.Join(m.dir, "gate")); err == nil {
				break
			}
			if time.Now().After(deadline) {
				yield(nil, errors.New("file-gated: the gate never opened"))
				return
			}
			select {
			case <-time.After(10 * time.Millisecond):
			case <-ctx.Done():
				yield(nil, ctx.Err())
				return
			}
		}
		yield(&model.Response{Content: genai.NewContentFromText("hello", genai.RoleModel), FinishReason: genai.FinishReasonStop}, nil)
	}
}

// streamApp returns the streaming app over svc: one agent whose model is
// a fileGatedModel of dir.
func streamApp(dir string, svc *session.Service) (*runner.Runner, error) {
	root, err := llmagent.New(llmagent.Config{Name: "greeter", Model: &fileGatedModel{dir: dir}})
	if err != nil {
		return nil, err
	}
	return runner.New(runner.Config{AppName: appName, Agent: root, Sessions: svc, Resumable: true})
}

// openGate lets the fileGatedModels of dir answer.
func openGate(t *testing.T, dir string) {
	t.Helper()
	if err := os.WriteFile(filepath.Join(dir, "gate"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
}

// crossProcess is a client in this process, with a feed listener, of a
// worker in another process that shares its SQLite session store.
type crossProcess struct {
	dir   string
	store *countingStore // the client's reads
	svc   *session.Service
	app   *runner.Runner // the client's copy of the app: its tree
	key   session.Key
	cl    *temporal.Client
	queue string // the worker's task queue
}

// startCrossProcess starts a worker process of the streaming app (stream)
// or of the test app, and returns a client of its queue configured by
// cfg (its TaskQueue is filled in, its Client if nil) and a new session.
func startCrossProcess(t *testing.T, stream bool, cfg temporal.ClientConfig) *crossProcess {
	t.Helper()
	c := dial(t)
	x := &crossProcess{dir: t.TempDir()}
	db := "sqlite://" + x.dir + "/sessions.db"
	ctx := context.Background()
	base, err := storage.OpenSessions(ctx, db)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { base.Close() })
	x.store = &countingStore{Store: base.Store()}
	x.svc = session.NewService(x.store, nil)
	var env []string
	if stream {
		env = append(env, envStream+"=1")
		x.app, err = streamApp(x.dir, x.svc)
	} else {
		x.app, err = newApp(x.dir, 0, x.svc)
	}
	if err != nil {
		t.Fatal(err)
	}
	x.key = session.Key{AppName: appName, UserID: user, SessionID: "push-" + newQueue()}
	if _, err := x.svc.Create(ctx, x.key, nil); err != nil {
		t.Fatal(err)
	}
	queue := newQueue()
	startWorker(t, queue, x.dir, db, 200*time.Millisecond, env...)
	if cfg.Client == nil {
		cfg.Client = c
	}
	cfg.TaskQueue, x.queue = queue, queue
	if x.cl, err = temporal.NewClient(cfg); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { x.cl.Close() })
	return x
}

// logIDs returns the ids of the session's events after the first message.
func (x *crossProcess) logIDs(t *testing.T) []string {
	t.Helper()
	sess, err := x.svc.Get(context.Background(), x.key, nil)
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, ev := range sess.Events()[1:] {
		ids = append(ids, ev.ID)
	}
	return ids
}

// pushForged posts a stream of one committed event to the feed listener
// of request id with token, and returns the status it was answered with.
func pushForged(t *testing.T, feedURL, id, token string) int {
	t.Helper()
	ev := event.New("forged-invocation", "greeter")
	ev.Content = genai.NewContentFromText("forged", genai.RoleModel)
	b, err := ev.MarshalStored()
	if err != nil {
		t.Fatal(err)
	}
	req, err := http.NewRequest(http.MethodPost, feedURL+"/loom/feed/"+id, bytes.NewReader(append(b, "\nend\n"...)))
	if err != nil {
		t.Fatal(err)
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp.StatusCode
}

// TestD7PartialsReachSSEClientAcrossProcesses: with the worker in another
// process and the client's server holding a feed listener, a /run_sse
// request asking for streaming receives the model's partial text while
// the turn runs (the model waits until the client has it), then the final
// event, and the client reads the session log neither while the turn runs
// nor when it ends: no polling. Meanwhile, streams to the listener with a
// forged token, or none, are refused and reach no client.
//
// (CONFORMANCE D7, D8)
func TestD7PartialsReachSSEClientAcrossProcesses(t *testing.T) {
	x := startCrossProcess(t, true, temporal.ClientConfig{FeedAddr: "127.0.0.1:0"})
	srv, err := server.New(server.Config{Apps: []*runner.Runner{x.app}, Invoker: x.cl})
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(srv)
	defer hs.Close()
	body, err := json.Marshal(map[string]any{"appName": appName, "userId": user, "sessionId": x.key.SessionID, "newMessage": text("hi"), "streaming": true})
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
	var readsAtPartial, readsAtAnswer int64 = -1, -1
	got := streamedText(t, resp.Body, func(_ string, partial bool) {
		switch {
		case partial && readsAtPartial < 0:
			readsAtPartial = x.store.reads.Load()
			ids := temporal.Subscribed()
			if len(ids) != 1 {
				t.Fatalf("%d clients wait in this process, want 1", len(ids))
			}
			for _, token := range []string{"", strings.Repeat("0", 64)} {
				if code := pushForged(t, x.cl.FeedURL(), ids[0], token); code != http.StatusForbidden {
					t.Errorf("a stream with token %q was answered %d, want 403", token, code)
				}
			}
			openGate(t, x.dir) // the client has the partial text: the turn goes on
		case !partial:
			readsAtAnswer = x.store.reads.Load()
		}
	})
	if strings.Join(got, ",") != "partial:hel,hello" {
		t.Fatalf("streamed %q, want the partial text, then the answer", got)
	}
	if readsAtAnswer != readsAtPartial {
		t.Fatalf("the client read the session log %d times between the partial text and the answer, want none", readsAtAnswer-readsAtPartial)
	}
	sess, err := x.svc.Get(context.Background(), x.key, nil)
	if err != nil {
		t.Fatal(err)
	}
	if sess.Len() != 2 || sess.At(1).Partial || sess.At(1).Text() != "hello" {
		t.Fatalf("the log holds %d events (last %+v), want the message and the answer", sess.Len(), sess.At(sess.Len()-1))
	}
}

// TestD9ClientLeftDoesNotBlockWorker: a client that stops reading after
// the partial text leaves; its listener cuts the turn's stream, the turn
// goes on, and the session's next message is answered at once: the
// worker did not wait for the client that left.
//
// (CONFORMANCE D9)
func TestD9ClientLeftDoesNotBlockWorker(t *testing.T) {
	x := startCrossProcess(t, true, temporal.ClientConfig{FeedAddr: "127.0.0.1:0"})
	ctx := context.Background()
	partial := false
	for ev, err := range x.cl.Run(ctx, x.app, user, x.key.SessionID, text("hi"), &runner.RunOptions{Streaming: true}) {
		if err != nil {
			t.Fatal(err)
		}
		if !ev.Partial || ev.Text() != "hel" {
			t.Fatalf("the first event is %+v, want the partial text", ev)
		}
		partial = true
		break // the client leaves
	}
	if !partial {
		t.Fatal("no partial text reached the client")
	}
	if ids := temporal.Subscribed(); len(ids) != 0 {
		t.Fatalf("clients %v still wait in this process", ids)
	}
	openGate(t, x.dir)
	start := time.Now()
	res := <-collect(x.cl.Run(ctx, x.app, user, x.key.SessionID, text("again"), nil))
	if res.err != nil {
		t.Fatal(res.err)
	}
	// A worker that waited for the client would take pushWait (5 s).
	if d := time.Since(start); d > 4*time.Second {
		t.Fatalf("the next message took %v after the gate opened", d)
	}
	if len(res.events) != 1 || res.events[0].Text() != "echo again" {
		t.Fatalf("the next message streamed %d events, want its answer", len(res.events))
	}
	var texts []string
	sess, err := x.svc.Get(ctx, x.key, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, ev := range sess.Events() {
		texts = append(texts, ev.Text())
	}
	if strings.Join(texts, ",") != "hi,hello,again,echo again" {
		t.Fatalf("the log holds %q", texts)
	}
}

// TestD9UnreachableFeedFallsBackToLog: a client whose feed listener the
// worker cannot reach (its advertised address is closed) still receives
// every committed event of the message once, in log order, read from the
// log when the turn ends.
//
// (CONFORMANCE D9)
func TestD9UnreachableFeedFallsBackToLog(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closed := "http://" + ln.Addr().String()
	ln.Close()
	x := startCrossProcess(t, false, temporal.ClientConfig{FeedAddr: "127.0.0.1:0", FeedURL: closed})
	res := <-collect(x.cl.Run(context.Background(), x.app, user, x.key.SessionID, text("slow"), nil))
	if res.err != nil {
		t.Fatal(res.err)
	}
	var streamed []string
	for _, ev := range res.events {
		streamed = append(streamed, ev.ID)
	}
	if want := x.logIDs(t); len(want) < 3 || !slices.Equal(streamed, want) {
		t.Fatalf("streamed events %v, want the log's %v", streamed, want)
	}
}

// TestD9WorkerKilledMidStream: the worker pushing a turn's events is
// killed (SIGKILL) during its slow tool, after the call reached the
// client through the listener; a second worker finishes the turn. The
// client receives every committed event of the message exactly once, in
// log order: the pushed call, then the rest from the log.
//
// (CONFORMANCE D9)
func TestD9WorkerKilledMidStream(t *testing.T) {
	c := dial(t)
	dir := t.TempDir()
	db := "sqlite://" + dir + "/sessions.db"
	ctx := context.Background()
	svc, err := storage.OpenSessions(ctx, db)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { svc.Close() })
	app, err := newApp(dir, 0, svc)
	if err != nil {
		t.Fatal(err)
	}
	k := session.Key{AppName: appName, UserID: user, SessionID: "pushkill-" + newQueue()}
	if _, err := svc.Create(ctx, k, nil); err != nil {
		t.Fatal(err)
	}
	queue := newQueue()
	first := startWorker(t, queue, dir, db, time.Minute)
	cl, err := temporal.NewClient(temporal.ClientConfig{Client: c, TaskQueue: queue, FeedAddr: "127.0.0.1:0",
		Options: temporal.Options{HeartbeatTimeout: 2 * time.Second}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cl.Close() })
	var streamed []string
	killed := false
	for ev, err := range cl.Run(ctx, app, user, k.SessionID, text("slow"), nil) {
		if err != nil {
			t.Fatal(err)
		}
		streamed = append(streamed, ev.ID)
		if killed || len(ev.FunctionCalls()) == 0 {
			continue
		}
		if n := lines(t, dir, "slow.count"); n != 0 {
			t.Fatalf("the call reached the client after the tool completed %d times", n)
		}
		waitFor(t, time.Minute, "the slow tool to start", func() bool { return lines(t, dir, "slow.started") == 1 })
		if err := first.Process.Signal(syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
		_ = first.Wait()
		killed = true
		startWorker(t, queue, dir, db, 200*time.Millisecond)
	}
	if !killed {
		t.Fatal("the call never reached the client")
	}
	if n := lines(t, dir, "slow.count"); n != 1 {
		t.Fatalf("the tool completed %d times, want 1", n)
	}
	sess, err := svc.Get(ctx, k, nil)
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, ev := range sess.Events()[1:] {
		ids = append(ids, ev.ID)
	}
	if !slices.Equal(streamed, ids) {
		t.Fatalf("streamed events %v, want the log's %v", streamed, ids)
	}
}

// TestFeedConfigRefused: a feed listener on every interface without the
// address workers reach it at, or at an address that is not HTTP, is
// refused with an error that says what to set; a client without one has
// no feed address.
func TestFeedConfigRefused(t *testing.T) {
	tc, err := client.NewLazyClient(client.Options{HostPort: "127.0.0.1:7233", Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	defer tc.Close()
	for _, c := range []struct {
		addr, url, want string
	}{
		{"0.0.0.0:0", "", "set ClientConfig.FeedURL"},
		{"127.0.0.1:0", "ftp://host:21", "want http:// or https://"},
		{"127.0.0.1:-1", "", "feed listener"},
	} {
		cl, err := temporal.NewClient(temporal.ClientConfig{Client: tc, FeedAddr: c.addr, FeedURL: c.url})
		if err == nil || !strings.Contains(err.Error(), c.want) {
			if cl != nil {
				cl.Close()
			}
			t.Errorf("feed %q at %q: error %v, want one saying %q", c.addr, c.url, err, c.want)
		}
	}
	cl, err := temporal.NewClient(temporal.ClientConfig{Client: tc})
	if err != nil {
		t.Fatal(err)
	}
	if u := cl.FeedURL(); u != "" || cl.Close() != nil {
		t.Fatalf("a client without a feed listener has the feed address %q", u)
	}
}
