package a2aserver_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"iter"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/a2aproject/a2a-go/a2a"

	"github.com/loomkit/loom/agent"
	"github.com/loomkit/loom/event"
	"github.com/loomkit/loom/runner"
	"github.com/loomkit/loom/server/a2aserver"
	"github.com/loomkit/loom/session/memsession"
)

// floodRunner's agent answers with 4 events of 128 KiB each, more than a
// client that reads nothing can buffer over a connection with small socket
// buffers.
func floodRunner(t testing.TB) *runner.Runner {
	t.Helper()
	big := strings.Repeat("x", 128<<10)
	root, err := agent.New(agent.Config{Name: "flood", Run: func(ctx context.Context, inv *agent.Invocation) iter.Seq2[*event.Event, error] {
		return func(yield func(*event.Event, error) bool) {
			for range 4 {
				ev := inv.NewEvent()
				ev.Content = genaiText(big)
				if !yield(ev, nil) {
					return
				}
			}
		}
	}})
	if err != nil {
		t.Fatal(err)
	}
	r, err := runner.New(runner.Config{AppName: "assistant", Agent: root, Sessions: memsession.NewService(), AutoCreateSession: true})
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// TestStalledStreamIsCutOff: a message/stream client that stops reading
// is cut off once a write has waited Config.StreamWriteTimeout, so its
// request ends and frees what it held; the task runs on to completion.
func TestStalledStreamIsCutOff(t *testing.T) {
	h, err := a2aserver.New(a2aserver.Config{Runner: floodRunner(t), StreamWriteTimeout: 300 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	var active atomic.Int64
	ended := make(chan struct{}, 1)
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		active.Add(1)
		defer func() {
			active.Add(-1)
			select {
			case ended <- struct{}{}:
			default:
			}
		}()
		h.ServeHTTP(w, r)
	}))
	var conns atomic.Int64
	srv.Config.ConnState = func(c net.Conn, s http.ConnState) {
		if s == http.StateNew && conns.Add(1) == 1 { // the stalled client's
			_ = c.(*net.TCPConn).SetWriteBuffer(4096)
		}
	}
	srv.Start()
	t.Cleanup(func() {
		h.Close()
		srv.Close()
	})

	conn, err := net.Dial("tcp", srv.Listener.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	_ = conn.(*net.TCPConn).SetReadBuffer(4096)
	body := `{"jsonrpc":"2.0","id":1,"method":"message/stream","params":{"message":{"kind":"message","messageId":"m1","contextId":"c1","role":"user","parts":[{"kind":"text","text":"go"}]}}}`
	fmt.Fprintf(conn, "POST / HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s", len(body), body)
	start := time.Now()
	// The client reads the first event, the task, then nothing more.
	rd := bufio.NewReaderSize(conn, 4096)
	var id a2a.TaskID
	for id == "" {
		line, err := rd.ReadString('\n')
		if err != nil {
			t.Fatal(err)
		}
		if data, ok := strings.CutPrefix(line, "data: "); ok {
			var resp struct {
				Result struct {
					ID a2a.TaskID `json:"id"`
				} `json:"result"`
			}
			if err := json.Unmarshal([]byte(data), &resp); err != nil || resp.Result.ID == "" {
				t.Fatalf("first event %.200s: %v", data, err)
			}
			id = resp.Result.ID
		}
	}
	select {
	case <-ended:
	case <-time.After(15 * time.Second):
		t.Fatalf("the stalled stream's request still runs (%d active)", active.Load())
	}

	t.Logf("cut after %v", time.Since(start))
	c := goClient(t, srv.URL)
	var task *a2a.Task
	for deadline := time.Now().Add(60 * time.Second); time.Now().Before(deadline); time.Sleep(200 * time.Millisecond) {
		res, err := c.GetTask(context.Background(), &a2a.TaskQueryParams{ID: id})
		if err != nil {
			t.Fatal(err)
		}
		if task = res; task.Status.State.Terminal() {
			break
		}
	}
	t.Logf("done after %v", time.Since(start))
	if task.Status.State != a2a.TaskStateCompleted || len(task.Artifacts) != 1 || len(task.Artifacts[0].Parts) != 4 {
		t.Errorf("the task after its stream was cut: %s, %d artifacts, want completed with the 4 answers", task.Status.State, len(task.Artifacts))
	}
}
