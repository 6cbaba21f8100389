package cli_test

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/loomkit/loom/agent"
	"github.com/loomkit/loom/agent/llmagent"
	"github.com/loomkit/loom/cli"
	"github.com/loomkit/loom/examples/assistant"
	"github.com/loomkit/loom/model"
	"github.com/loomkit/loom/model/scripted"
	"github.com/loomkit/loom/tool"
	"github.com/loomkit/loom/tool/functiontool"
)

// chromiumPath returns the Chromium to drive: $LOOM_CHROMIUM, else Debian's
// /usr/bin/chromium. Without one the test is skipped, except in CI, where a
// missing browser is a failure.
func chromiumPath(t *testing.T) string {
	t.Helper()
	if p := os.Getenv("LOOM_CHROMIUM"); p != "" {
		return p
	}
	for _, p := range []string{"/usr/bin/chromium", "/usr/bin/chromium-browser"} {
		if _, err := os.Stat(p); err == nil {
			return p
		}
	}
	if p, err := exec.LookPath("chromium"); err == nil {
		return p
	}
	if os.Getenv("CI") != "" {
		t.Fatal("chromium not found: install it with scripts/chromium.sh or set LOOM_CHROMIUM")
	}
	t.Skip("chromium not found: install it with scripts/chromium.sh or set LOOM_CHROMIUM")
	return ""
}

// gatekeeper is an LLM agent on a scripted model with a tool that needs the
// user's approval (delete_files) and a long-running tool (order_parts).
func gatekeeper(t *testing.T) agent.Agent {
	t.Helper()
	type deleteArgs struct {
		Path string `json:"path"`
	}
	del, err := functiontool.New(functiontool.Config{Name: "delete_files", Description: "Deletes files.",
		RequireConfirmation: true, ConfirmationHint: "Delete everything under /tmp/old?"},
		func(ctx context.Context, tc tool.Context, args deleteArgs) (map[string]any, error) {
			return map[string]any{"deleted": args.Path}, nil
		})
	if err != nil {
		t.Fatal(err)
	}
	order, err := functiontool.New(functiontool.Config{Name: "order_parts", Description: "Orders parts; a person completes it later.", LongRunning: true},
		func(ctx context.Context, tc tool.Context, args map[string]any) (map[string]any, error) {
			return nil, nil
		})
	if err != nil {
		t.Fatal(err)
	}
	llm := scripted.New("gatekeeper-model", func(ctx context.Context, req *model.Request) (scripted.Turn, error) {
		if res := scripted.LastFunctionResponse(req); len(res) > 0 {
			if _, ok := res[0].Response["deleted"]; ok {
				return scripted.Text("Approved: the files are gone."), nil
			}
			return scripted.Text("Rejected: nothing was deleted."), nil
		}
		if strings.Contains(scripted.LastUserText(req), "order") {
			return scripted.Call("order_parts", map[string]any{"part": "gear"}), nil
		}
		return scripted.Call("delete_files", map[string]any{"path": "/tmp/old"}), nil
	})
	a, err := llmagent.New(llmagent.Config{Name: "gatekeeper", Description: "Asks for confirmation before acting.",
		Model: llm, Tools: []tool.Tool{del, order}})
	if err != nil {
		t.Fatal(err)
	}
	return a
}

// syncBuffer is a bytes.Buffer safe for the server's goroutines.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// startWeb runs "loom web" in-process on a random port over a SQLite file
// and returns its base URL; the server stops when the test ends.
func startWeb(t *testing.T, dir string, apps ...cli.App) string {
	t.Helper()
	return startWebArgs(t, dir, nil, apps...)
}

// startWebArgs is startWeb with more flags.
func startWebArgs(t *testing.T, dir string, extra []string, apps ...cli.App) string {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	urls := make(chan string, 1)
	done := make(chan int, 1)
	var stderr syncBuffer
	// Resumable, so that workflow agents write the checkpoints the UI
	// labels (and hides by default).
	args := []string{"web", "--resumable", "--host", "127.0.0.1", "--port", "0",
		"--sessions", "sqlite://" + filepath.Join(dir, "sessions.db"),
		"--artifacts", "file://" + filepath.Join(dir, "artifacts"),
		"--evals", filepath.Join(dir, "evals")}
	args = append(args, extra...)
	go func() {
		done <- cli.Run(ctx, args, cli.Env{Stdout: &stderr, Stderr: &stderr, Getenv: func(string) string { return "" },
			Listening: func(u string) { urls <- u }}, apps...)
	}()
	t.Cleanup(func() {
		cancel()
		if code := <-done; code != 0 {
			t.Errorf("loom web exited with %d:\n%s", code, stderr.String())
		}
	})
	select {
	case u := <-urls:
		return u
	case code := <-done:
		t.Fatalf("loom web exited with %d:\n%s", code, stderr.String())
	}
	return ""
}

// TestDevUIEndToEnd drives the dev UI in a real Chromium against the full
// CLI server (API + UI, SQLite sessions, the offline assistant example):
// create a session, chat with streaming, see the tool call in the timeline
// and the state and artifacts panels, reload and find the session
// persisted, and answer a tool confirmation with the Approve button.
func TestDevUIEndToEnd(t *testing.T) {
	dir := t.TempDir()
	base := startWeb(t, dir,
		cli.App{Name: "assistant", New: assistant.New, Offline: assistant.Offline},
		cli.App{Name: "gatekeeper", Agent: gatekeeper(t)})

	b := newBrowser(t, dir, "")
	screenshot, do, waitFor := b.screenshot, b.do, b.waitFor
	eval := b.eval
	send := func(text string) {
		t.Helper()
		do("type a message", chromedp.SendKeys("#message", text), chromedp.Click("#send"))
	}

	// "/" redirects to the UI, which lists the apps.
	do("open the UI", chromedp.Navigate(base+"/"))
	waitFor("page ready", `document.body.dataset.ready === "true"`)
	if loc := eval(`location.pathname`); loc != "/dev-ui/" {
		t.Errorf("location = %s, want /dev-ui/", loc)
	}
	if apps := eval(`[...document.querySelectorAll("#app-select option")].map(o => o.value).join(",")`); apps != "assistant,gatekeeper" {
		t.Errorf("apps = %s", apps)
	}

	// Create a session and chat: the tool call shows up, the answer streams in.
	do("create a session", chromedp.Click("#new-session"))
	waitFor("session selected", `document.querySelector("#session-list li.session.active") !== null`)
	sid := eval(`document.querySelector("#session-list li.session.active").dataset.id`)
	if sid == "" {
		t.Fatal("no session id")
	}
	send("What's the weather in Lisbon?")
	w := assistant.Forecast("Lisbon")
	answer := fmt.Sprintf("It is %d°C and %s in Lisbon.", w.TemperatureC, w.Conditions)
	waitFor("streamed answer", fmt.Sprintf(`[...document.querySelectorAll("#messages .msg.agent .bubble")].some(b => b.textContent === %q)`, answer))
	waitFor("run finished", `!document.querySelector("#send").disabled && document.querySelector("#status").textContent === "Ready"`)
	waitFor("tool call in the chat", `[...document.querySelectorAll("#messages .tool.call")].some(n => n.textContent.includes('get_weather(city: "Lisbon")'))`)
	waitFor("tool call in the timeline", `[...document.querySelectorAll("#timeline .ev.kind-call .label")].some(n => n.textContent === "get_weather")`)
	if n := eval(`String(document.querySelectorAll("#timeline .ev").length)`); n != "4" {
		t.Errorf("timeline has %s events, want 4 (user, call, response, answer)", n)
	}
	do("open the state tab", chromedp.Click(`.tab[data-tab="state"]`))
	waitFor("state shows last_city", `[...document.querySelectorAll("#state-view tr")].some(r => r.textContent.includes("last_city") && r.textContent.includes("Lisbon"))`)

	// A tool that saves an artifact: view it in the artifacts tab.
	send("save a note: buy milk")
	waitFor("note saved", `[...document.querySelectorAll("#messages .msg.agent .bubble")].some(b => b.textContent.startsWith("Saved your note as note.txt"))`)
	waitFor("run finished", `!document.querySelector("#send").disabled`)
	do("open the artifacts tab", chromedp.Click(`.tab[data-tab="artifacts"]`))
	waitFor("artifact listed", `document.querySelector('#artifact-list li[data-name="note.txt"] button') !== null`)
	do("view the artifact", chromedp.Click(`#artifact-list li[data-name="note.txt"] button`))
	waitFor("artifact shown", `document.querySelector("#artifact-view pre")?.textContent === "buy milk"`)
	screenshot("chat")

	// Reload without the session in the URL, select it: it was persisted.
	do("reload", chromedp.Navigate(base+"/dev-ui/"))
	waitFor("page ready again", `document.body.dataset.ready === "true"`)
	if n := eval(`String(document.querySelectorAll("#timeline .ev").length)`); n != "0" {
		t.Errorf("timeline has %s events before a session is selected", n)
	}
	do("select the session", chromedp.Click(fmt.Sprintf(`#session-list li[data-id=%q]`, sid)))
	waitFor("persisted events", `document.querySelectorAll("#timeline .ev").length === 8`)
	waitFor("persisted answer", fmt.Sprintf(`[...document.querySelectorAll("#messages .msg.agent .bubble")].some(b => b.textContent === %q)`, answer))
	waitFor("persisted tool call", `[...document.querySelectorAll("#timeline .ev.kind-call .label")].some(n => n.textContent === "get_weather")`)

	// Tool confirmation: the gatekeeper asks, the Approve button answers.
	do("choose the gatekeeper", chromedp.Evaluate[chromedp.Void](`(() => { const s = document.querySelector("#app-select"); s.value = "gatekeeper"; s.dispatchEvent(new Event("change")); })()`))
	waitFor("no session selected", `document.querySelector("#session-list li.session.active") === null && document.querySelector("#session-id").textContent === ""`)
	send("clean up /tmp/old")
	waitFor("confirmation card", `document.querySelector("#messages .confirm button.primary") !== null`)
	if hint := eval(`document.querySelector("#messages .confirm").textContent`); !strings.Contains(hint, "Delete everything under /tmp/old?") || !strings.Contains(hint, "delete_files") {
		t.Errorf("confirmation card = %q", hint)
	}
	screenshot("confirm")
	do("approve", chromedp.Click("#messages .confirm button.primary"))
	waitFor("approved answer", `[...document.querySelectorAll("#messages .msg.agent .bubble")].some(b => b.textContent === "Approved: the files are gone.")`)
	waitFor("card answered", `document.querySelector("#messages .confirm .note")?.textContent === "Approved"`)
	waitFor("response in the timeline", `[...document.querySelectorAll("#timeline .ev.kind-approval .label")].some(n => n.textContent === "approved (adk_request_confirmation)")`)
	screenshot("approved")

	// A long-running call pauses the invocation; the chat says so.
	send("order a gear")
	waitFor("paused note", `[...document.querySelectorAll("#messages .note.paused")].some(n => n.textContent.includes("waiting for the result of order_parts"))`)
	screenshot("paused")
}
