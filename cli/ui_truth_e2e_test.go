package cli_test

import (
	"context"
	"fmt"
	"iter"
	"net"
	"path/filepath"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/loomkit/loom/agent"
	"github.com/loomkit/loom/cli"
	"github.com/loomkit/loom/event"
	"github.com/loomkit/loom/examples/assistant"
	"github.com/loomkit/loom/examples/loop"
)

// webServer is a "loom web" on a fixed port that a test can stop and start
// again, over the same SQLite file.
type webServer struct {
	t    *testing.T
	dir  string
	port string
	apps []cli.App
	stop func()
}

func newWebServer(t *testing.T, dir string, apps ...cli.App) *webServer {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	_, port, _ := net.SplitHostPort(l.Addr().String())
	l.Close()
	w := &webServer{t: t, dir: dir, port: port, apps: apps}
	w.start()
	t.Cleanup(func() {
		if w.stop != nil {
			w.stop()
		}
	})
	return w
}

func (w *webServer) base() string { return "http://127.0.0.1:" + w.port }

func (w *webServer) start() {
	w.t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	ready := make(chan string, 1)
	done := make(chan int, 1)
	var out syncBuffer
	args := []string{"web", "--host", "127.0.0.1", "--port", w.port,
		"--sessions", "sqlite://" + filepath.Join(w.dir, "sessions.db"), "--artifacts", "memory://"}
	go func() {
		done <- cli.Run(ctx, args, cli.Env{Stdout: &out, Stderr: &out, Getenv: func(string) string { return "" },
			Listening: func(u string) { ready <- u }}, w.apps...)
	}()
	select {
	case <-ready:
	case code := <-done:
		cancel()
		w.t.Fatalf("loom web exited with %d:\n%s", code, out.String())
	}
	w.stop = func() {
		cancel()
		if code := <-done; code != 0 {
			w.t.Errorf("loom web exited with %d:\n%s", code, out.String())
		}
		w.stop = nil
	}
}

// TestDevUIKeepsUnsentMessage: a message sent while the server is down is
// not lost: it stays in the input, the chat says it was not sent, and Retry
// sends it once the server is back.
func TestDevUIKeepsUnsentMessage(t *testing.T) {
	dir := t.TempDir()
	srv := newWebServer(t, dir, cli.App{Name: "assistant", New: assistant.New, Offline: assistant.Offline})
	b := newBrowser(t, dir, "unsent-")

	b.do("open the UI", chromedp.Navigate(srv.base()+"/dev-ui/"))
	b.waitFor("page ready", `document.body.dataset.ready === "true"`)
	b.do("create a session", chromedp.Click("#new-session"))
	b.waitFor("session selected", `document.querySelector("#session-list li.session.active") !== null`)

	srv.stop()
	b.do("type and send", chromedp.SendKeys("#message", "hello there"), chromedp.Click("#send"))
	b.waitFor("not-sent notice", `document.querySelector("#messages .msg.error .retry") !== null`)
	b.screenshot("down")
	if v := b.eval(`document.querySelector("#message").value`); v != "hello there" {
		t.Errorf("input = %q after a failed send, want the message kept", v)
	}
	if notice := b.eval(`document.querySelector("#messages .msg.error").textContent`); !strings.Contains(notice, "not sent") {
		t.Errorf("notice = %q", notice)
	}
	if n := b.eval(`String([...document.querySelectorAll("#messages .msg.user")].filter(m => m.textContent === "hello there").length)`); n != "0" {
		t.Errorf("the unsent message shows as sent (%s bubbles)", n)
	}

	srv.start()
	b.do("retry", chromedp.Click("#messages .msg.error .retry"))
	b.waitFor("answer", `[...document.querySelectorAll("#messages .msg.agent .bubble")].some(m => m.textContent.startsWith("Hello!"))`)
	b.waitFor("input cleared", `document.querySelector("#message").value === ""`)
	b.waitFor("sent once", `[...document.querySelectorAll("#messages .msg.user")].filter(m => m.textContent === "hello there").length === 1 && document.querySelector("#messages .msg.error") === null`)
}

// stateOnly answers with an event that carries only a state delta.
func stateOnly(t *testing.T) agent.Agent {
	a, err := agent.New(agent.Config{Name: "mood", Run: func(ctx context.Context, inv *agent.Invocation) iter.Seq2[*event.Event, error] {
		return func(yield func(*event.Event, error) bool) {
			ev := inv.NewEvent()
			ev.Actions.StateDelta = map[string]any{"mood": "happy"}
			yield(ev, nil)
		}
	}})
	if err != nil {
		t.Fatal(err)
	}
	return a
}

// TestDevUIShowsWhatHappened: checkpoints and end-of-agent events are
// labelled and hidden until asked for, a confirmation request is labelled
// with the call it asks about, exit_loop's null result shows as ADK's
// {"result":null}, a state-only reply shows what it set, names in the
// inspector are not cut, and a clicked span's details are in view.
func TestDevUIShowsWhatHappened(t *testing.T) {
	dir := t.TempDir()
	base := startWeb(t, dir,
		cli.App{Name: "loop", New: loop.New, Offline: loop.Offline},
		cli.App{Name: "assistant", New: assistant.New, Offline: assistant.Offline},
		cli.App{Name: "mood", Agent: stateOnly(t)})
	b := newBrowser(t, dir, "labels-")
	pick := func(app string) {
		t.Helper()
		b.do("choose "+app, chromedp.Evaluate[chromedp.Void](fmt.Sprintf(`(() => { const s = document.querySelector("#app-select"); s.value = %q; s.dispatchEvent(new Event("change")); })()`, app)))
		b.waitFor("no session selected", `document.querySelector("#session-id").textContent === ""`)
	}
	send := func(text string) {
		t.Helper()
		b.do("send "+text, chromedp.SendKeys("#message", text), chromedp.Click("#send"))
		b.waitFor("run started", `document.querySelector("#message").value === ""`)
		b.waitFor("run finished", `!document.querySelector("#send").disabled && document.querySelector("#status").textContent === "Ready"`)
	}
	b.do("open the UI", chromedp.Navigate(base+"/dev-ui/"))
	b.waitFor("page ready", `document.body.dataset.ready === "true"`)

	// The loop: checkpoints are hidden by default, labelled when shown.
	pick("loop")
	send("kites")
	b.waitFor("loop answer", `document.querySelectorAll("#timeline .ev").length > 4`)
	if n := b.eval(`String([...document.querySelectorAll("#timeline .ev")].filter(li => li.querySelector(".kind").textContent === "event").length)`); n != "0" {
		t.Errorf("%s timeline rows are unlabelled EVENT rows", n)
	}
	counts := `(() => { const all = [...document.querySelectorAll("#timeline .ev.bookkeeping")]; return all.length + "/" + all.filter(li => li.offsetParent !== null).length; })()`
	hidden := b.eval(counts)
	if strings.HasPrefix(hidden, "0/") || !strings.HasSuffix(hidden, "/0") {
		t.Errorf("bookkeeping events (all/visible) = %s, want some, none visible", hidden)
	}
	b.do("show checkpoints", chromedp.Click("#show-bookkeeping"))
	if shown := b.eval(counts); shown != strings.Split(hidden, "/")[0]+"/"+strings.Split(hidden, "/")[0] {
		t.Errorf("bookkeeping events (all/visible) after ticking = %s", shown)
	}
	labels := b.eval(`[...document.querySelectorAll("#timeline .ev.bookkeeping .label")].map(l => l.textContent).join("|")`)
	if !strings.Contains(labels, "checkpoint") || !strings.Contains(labels, "end of agent") {
		t.Errorf("bookkeeping labels = %q", labels)
	}
	b.screenshot("checkpoints")
	if got := b.eval(`[...document.querySelectorAll("#messages .tool.response")].map(n => n.textContent).filter(t => t.includes("exit_loop")).join("|")`); got != `←exit_loop {"result":null}` {
		t.Errorf("exit_loop result in the chat = %q, want ←exit_loop {\"result\":null}", got)
	}

	// A confirmation request is labelled with the call it is about.
	pick("assistant")
	send("email bob@example.com: lunch at noon")
	if got := b.eval(`[...document.querySelectorAll("#timeline .ev.kind-approval .label")].map(l => l.textContent).join("|")`); !strings.Contains(got, `asks for approval: send_email(text: "lunch at noon", to: "bob@example.com")`) {
		t.Errorf("approval label = %q", got)
	}

	// A reply that only sets state says so.
	pick("mood")
	send("how do you feel?")
	b.waitFor("state note", `[...document.querySelectorAll("#messages .state-note")].some(n => n.textContent.includes("state updated: mood=happy"))`)

	// Several invocations make the span list long; a clicked span's details
	// are scrolled into view, and no name is cut.
	pick("assistant")
	for _, city := range []string{"Lisbon", "Porto", "Faro", "Braga", "Évora"} {
		send("What's the weather in " + city + "?")
	}
	b.do("open the trace tab", chromedp.Click(`.tab[data-tab="trace"]`))
	b.waitFor("spans listed", `document.querySelectorAll('#trace-view .span-row[data-name="execute_tool get_weather"]').length === 5`)
	if cut := b.eval(`[...document.querySelectorAll("#trace-view .span-name, #timeline .label")].filter(n => n.scrollWidth > n.clientWidth + 1).map(n => n.textContent).join("|")`); cut != "" {
		t.Errorf("names cut off: %s", cut)
	}
	b.do("select the last tool span", chromedp.Evaluate[chromedp.Void](`[...document.querySelectorAll('#trace-view .span-row[data-name="execute_tool get_weather"]')].pop().click()`))
	b.waitFor("span details", `document.querySelector("#span-detail tr") !== null`)
	b.screenshot("span")
	visible := b.eval(`(() => {
		const p = document.querySelector("#panel-trace").getBoundingClientRect();
		const d = document.querySelector("#span-detail .span-title").getBoundingClientRect();
		return String(d.top >= p.top && d.bottom <= p.bottom && d.bottom <= window.innerHeight);
	})()`)
	if visible != "true" {
		t.Errorf("the span details are off-screen")
	}

	// A reload of the trace (after a turn, or on opening the tab again)
	// keeps the span shown: the details of a span picked while a reload
	// was on its way used to vanish with the reload.
	picked := b.eval(`(() => { window.pickedRow = document.querySelector("#trace-view .span-row.selected"); return window.pickedRow.dataset.spanId; })()`)
	b.do("open the trace tab again", chromedp.Click(`.tab[data-tab="trace"]`))
	b.waitFor("the trace reloaded", `!document.contains(window.pickedRow)`)
	if got := b.eval(`(() => { const r = document.querySelector("#trace-view .span-row.selected"); return (r ? r.dataset.spanId : "none") + "|" + String(document.querySelector("#span-detail tr") !== null); })()`); got != picked+"|true" {
		t.Errorf("after a reload: selected span and details = %q, want %q", got, picked+"|true")
	}
}
