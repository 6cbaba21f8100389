package a2aserver_test

import (
	"context"
	"fmt"
	"iter"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"

	"github.com/loomkit/loom/agent/llmagent"
	"github.com/loomkit/loom/examples/assistant"
	"github.com/loomkit/loom/model"
	"github.com/loomkit/loom/model/scripted"
	"github.com/loomkit/loom/runner"
	"github.com/loomkit/loom/server/a2aserver"
	"github.com/loomkit/loom/session"
	"github.com/loomkit/loom/session/memsession"
	"github.com/loomkit/loom/tool"
	"github.com/loomkit/loom/tool/functiontool"
)

// testModel answers like the offline assistant, and calls slow_job when
// asked for a slow job.
type testModel struct{ offline, slow model.LLM }

func (m testModel) Name() string { return "test" }

func (m testModel) Generate(ctx context.Context, req *model.Request, stream bool) iter.Seq2[*model.Response, error] {
	res := scripted.LastFunctionResponse(req)
	text := scripted.LastUserText(req)
	switch {
	case len(res) == 0 && strings.Contains(text, "slow"):
		return m.slow.Generate(ctx, req, stream)
	case len(res) == 0 && strings.Contains(text, "ticket"):
		return scripted.NewSequence("ticket", scripted.Call("open_ticket", map[string]any{"title": text})).Generate(ctx, req, stream)
	case len(res) > 0 && res[0].Name == "open_ticket":
		return scripted.NewSequence("ticket", scripted.Text(fmt.Sprintf("Ticket %v.", res[0].Response["status"]))).Generate(ctx, req, stream)
	}
	return m.offline.Generate(ctx, req, stream)
}

type ticketArgs struct {
	Title string `json:"title"`
}

// openTicket is a long-running tool: it opens a ticket that a person
// closes later, answering the call.
func openTicket() (tool.Tool, error) {
	return functiontool.New(functiontool.Config{Name: "open_ticket", Description: "Opens a ticket for a person to handle.", LongRunning: true},
		func(ctx context.Context, _ tool.Context, args ticketArgs) (map[string]any, error) {
			return map[string]any{"status": "pending", "title": args.Title}, nil
		})
}

type noArgs struct{}

// slowJob blocks until its invocation is cancelled.
func slowJob() (tool.Tool, error) {
	return functiontool.New(functiontool.Config{Name: "slow_job", Description: "Runs a job that takes a while."},
		func(ctx context.Context, _ tool.Context, _ noArgs) (map[string]any, error) {
			<-ctx.Done()
			return nil, ctx.Err()
		})
}

// newRunner returns a runner of the test app: the offline assistant's
// tools plus slow_job.
func newRunner(t testing.TB) *runner.Runner {
	t.Helper()
	tools, err := assistant.Tools()
	if err != nil {
		t.Fatal(err)
	}
	slow, err := slowJob()
	if err != nil {
		t.Fatal(err)
	}
	ticket, err := openTicket()
	if err != nil {
		t.Fatal(err)
	}
	root, err := llmagent.New(llmagent.Config{
		Name:        "assistant",
		Description: assistant.Description,
		Model: testModel{offline: assistant.Offline(), slow: scripted.New("slow", func(context.Context, *model.Request) (scripted.Turn, error) {
			return scripted.Call("slow_job", map[string]any{}), nil
		})},
		Tools: append(tools, slow, ticket),
	})
	if err != nil {
		t.Fatal(err)
	}
	r, err := runner.New(runner.Config{AppName: "assistant", Agent: root, Sessions: session.NewService(memsession.New(), nil), AutoCreateSession: true, Resumable: true})
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// serve serves the test app over A2A under /a2a/assistant, as loom api
// --a2a does, and returns the base URL of the agent.
func serve(t testing.TB, r *runner.Runner) (*a2aserver.Handler, string) {
	t.Helper()
	h, err := a2aserver.New(a2aserver.Config{Runner: r})
	if err != nil {
		t.Fatal(err)
	}
	mux := http.NewServeMux()
	mux.Handle("/a2a/assistant/", http.StripPrefix("/a2a/assistant", h))
	mux.Handle("/a2a/assistant", http.StripPrefix("/a2a/assistant", h))
	srv := httptest.NewServer(mux)
	t.Cleanup(func() {
		h.Close()
		srv.Close()
	})
	return h, srv.URL + "/a2a/assistant"
}

// serveNoCleanup serves the test app until stop is called, for tests that
// check what is left after that.
func serveNoCleanup(t testing.TB) (stop func(), base string) {
	t.Helper()
	h, err := a2aserver.New(a2aserver.Config{Runner: newRunner(t)})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(h)
	return func() {
		h.Close()
		srv.Close()
	}, srv.URL
}

// a2aJS returns the node_modules directory holding the A2A JavaScript SDK,
// installed by scripts/a2a-js.sh; it skips the test (fails it under CI)
// when it is not installed.
func a2aJS(t *testing.T) string {
	t.Helper()
	p := os.Getenv("LOOM_A2A_JS")
	if p == "" {
		if os.Getenv("CI") != "" {
			t.Fatal("LOOM_A2A_JS is not set; run scripts/a2a-js.sh")
		}
		t.Skip("LOOM_A2A_JS is not set; run scripts/a2a-js.sh to install the A2A JavaScript SDK")
	}
	return p
}
