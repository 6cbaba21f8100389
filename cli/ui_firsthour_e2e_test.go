package cli_test

import (
	"context"
	"encoding/json"
	"iter"
	"net/http"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/chromedp"
	"google.golang.org/genai"

	"github.com/loomkit/loom/agent/llmagent"
	"github.com/loomkit/loom/cli"
	workflowexample "github.com/loomkit/loom/examples/workflow"
	"github.com/loomkit/loom/model"
)

// keyedModel fails like a provider refusing an API key until fixed is set.
type keyedModel struct{ fixed atomic.Bool }

func (m *keyedModel) Name() string { return "keyed" }

func (m *keyedModel) Generate(ctx context.Context, req *model.Request, stream bool) iter.Seq2[*model.Response, error] {
	return func(yield func(*model.Response, error) bool) {
		if !m.fixed.Load() {
			yield(nil, &model.Error{Provider: "openai", StatusCode: 401, Code: "invalid_api_key", Message: "Incorrect API key provided: x"})
			return
		}
		yield(&model.Response{Content: genai.NewContentFromText("Hi, the key works now.", genai.RoleModel), TurnComplete: true}, nil)
	}
}

// slowModel waits for gate, streams one chunk, then waits until its
// context ends (the run is stopped), which it reports on stopped.
type slowModel struct {
	gate    chan struct{}
	stopped chan struct{}
}

func (m *slowModel) Name() string { return "slow" }

func (m *slowModel) Generate(ctx context.Context, req *model.Request, stream bool) iter.Seq2[*model.Response, error] {
	return func(yield func(*model.Response, error) bool) {
		select {
		case <-m.gate:
		case <-ctx.Done():
			return
		}
		if !yield(&model.Response{Content: genai.NewContentFromText("Once upon a time", genai.RoleModel), Partial: true}, nil) {
			return
		}
		<-ctx.Done()
		close(m.stopped)
		yield(nil, ctx.Err())
	}
}

// sessionUserMessages counts the user events the server stores for a
// session of the user "user".
func sessionUserMessages(t *testing.T, base, app, sid string) int {
	t.Helper()
	resp, err := http.Get(base + "/apps/" + app + "/users/user/sessions/" + sid)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var s struct {
		Events []struct{ Author string }
	}
	if err := json.NewDecoder(resp.Body).Decode(&s); err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, ev := range s.Events {
		if ev.Author == "user" {
			n++
		}
	}
	return n
}

// TestDevUIFailingModel: with a model that refuses its API key, the
// message the server stored shows as sent (not "not sent", not left in the
// input), the failure shows as the turn's error, and Retry runs the turn
// again without storing the message twice, also after a reload.
func TestDevUIFailingModel(t *testing.T) {
	dir := t.TempDir()
	m := &keyedModel{}
	a, err := llmagent.New(llmagent.Config{Name: "keyed", Model: m})
	if err != nil {
		t.Fatal(err)
	}
	base := startWeb(t, dir, cli.App{Name: "keyed", Agent: a})
	b := newBrowser(t, dir, "failing-")
	b.do("open the UI", chromedp.Navigate(base+"/dev-ui/"))
	b.waitFor("page ready", `document.body.dataset.ready === "true"`)
	b.do("send", chromedp.SendKeys("#message", "hello"), chromedp.Click("#send"))
	b.waitFor("turn error", `document.querySelector("#messages .msg.error") !== null && !document.querySelector("#send").disabled`)
	b.screenshot("error")
	notice := b.eval(`document.querySelector("#messages .msg.error").textContent`)
	if strings.Contains(notice, "not sent") || !strings.Contains(notice, "invalid_api_key") || !strings.Contains(notice, "turn failed") {
		t.Errorf("notice = %q, want the turn's failure with the provider's error", notice)
	}
	if v := b.eval(`document.querySelector("#message").value`); v != "" {
		t.Errorf("input = %q: the stored message was left to be sent again", v)
	}
	if n := b.eval(`String([...document.querySelectorAll("#messages .msg.user")].filter(m => m.textContent === "hello").length)`); n != "1" {
		t.Errorf("the stored message shows %s times, want once", n)
	}
	if st := b.eval(`document.querySelector("#status").className`); !strings.Contains(st, "error") {
		t.Errorf("status class = %q, want error", st)
	}
	sid := b.eval(`document.querySelector("#session-id").textContent`)

	m.fixed.Store(true)
	b.do("retry", chromedp.Click("#messages .msg.error .retry"))
	b.waitFor("answer", `[...document.querySelectorAll("#messages .msg.agent .bubble")].some(m => m.textContent === "Hi, the key works now.")`)
	b.waitFor("ready", `document.querySelector("#status").textContent === "Ready" && document.querySelector("#messages .msg.error") === null`)
	if n := sessionUserMessages(t, base, "keyed", sid); n != 1 {
		t.Errorf("the session stores %d user messages after the retry, want 1", n)
	}
	b.do("reload", chromedp.Navigate(base+"/dev-ui/#app=keyed&session="+sid), chromedp.Reload())
	b.waitFor("page ready again", `document.body.dataset.ready === "true" && document.querySelectorAll("#messages .msg.agent").length === 1`)
	if n := b.eval(`String([...document.querySelectorAll("#messages .msg.user")].filter(m => m.textContent === "hello").length)`); n != "1" {
		t.Errorf("after a reload the message shows %s times, want once", n)
	}
	b.screenshot("retried")
}

// TestDevUIStopMidStream: a thinking indicator shows before the first
// token; Stop while the answer streams stops the run on the server, the
// status follows (no "Running…" left), and what streamed stays, marked as
// stopped rather than as an error.
func TestDevUIStopMidStream(t *testing.T) {
	dir := t.TempDir()
	m := &slowModel{gate: make(chan struct{}), stopped: make(chan struct{})}
	a, err := llmagent.New(llmagent.Config{Name: "storyteller", Model: m})
	if err != nil {
		t.Fatal(err)
	}
	base := startWeb(t, dir, cli.App{Name: "story", Agent: a})
	b := newBrowser(t, dir, "stop-")
	b.do("open the UI", chromedp.Navigate(base+"/dev-ui/"))
	b.waitFor("page ready", `document.body.dataset.ready === "true"`)
	b.do("send", chromedp.SendKeys("#message", "tell me a story"), chromedp.Click("#send"))
	b.waitFor("thinking", `document.querySelector("#messages .msg.thinking") !== null`)
	b.screenshot("thinking")
	close(m.gate)
	b.waitFor("first chunk", `[...document.querySelectorAll("#messages .msg.agent .bubble")].some(m => m.textContent === "Once upon a time")`)
	if n := b.eval(`String(document.querySelectorAll("#messages .msg.thinking").length)`); n != "0" {
		t.Errorf("%s thinking indicators after the first token", n)
	}
	if st := b.eval(`document.querySelector("#status").textContent`); st != "Running…" {
		t.Errorf("status while streaming = %q", st)
	}
	b.do("stop", chromedp.Click("#stop"))
	b.waitFor("stopped", `document.querySelector("#status").textContent === "Stopped" && !document.querySelector("#send").disabled`)
	select {
	case <-m.stopped:
	case <-time.After(10 * time.Second):
		t.Error("the run went on on the server after Stop")
	}
	b.screenshot("stopped")
	if n := b.eval(`String(document.querySelectorAll("#messages .msg.error").length)`); n != "0" {
		t.Errorf("%s error notices after Stop, want none", n)
	}
	if kept := b.eval(`[...document.querySelectorAll("#messages .msg.agent.stopped .bubble")].map(b => b.textContent).join("|")`); kept != "Once upon a time" {
		t.Errorf("stopped answer = %q, want the partial text kept", kept)
	}
	// Some time later the status still says what happened.
	time.Sleep(300 * time.Millisecond)
	if st := b.eval(`document.querySelector("#status").textContent`); st != "Stopped" {
		t.Errorf("status after Stop = %q", st)
	}
}

// TestDevUIFirstHour drives the workflow example through what a person
// meets in the first hour: the workflow does not echo the question back as
// an agent message; the Events tab counts and numbers what it shows with
// checkpoints hidden; sessions are listed by their first message and empty
// ones are tucked away; the app description can be read whole; the layout
// works 800 px wide; and the theme follows the system's dark setting.
func TestDevUIFirstHour(t *testing.T) {
	dir := t.TempDir()
	base := startWeb(t, dir, cli.App{Name: "workflow", New: workflowexample.New, Offline: workflowexample.Offline})
	b := newBrowser(t, dir, "firsthour-")
	b.do("open the UI", chromedp.Navigate(base+"/dev-ui/"))
	b.waitFor("page ready", `document.body.dataset.ready === "true"`)

	b.do("ask", chromedp.SendKeys("#message", "when do you open?"), chromedp.Click("#send"))
	b.waitFor("answer", `[...document.querySelectorAll("#messages .msg.agent .bubble")].some(m => m.textContent.startsWith("Good question!")) && document.querySelector("#status").textContent === "Ready"`)
	if n := b.eval(`String([...document.querySelectorAll("#messages .msg.agent .bubble")].filter(m => m.textContent === "when do you open?").length)`); n != "0" {
		t.Errorf("the question is echoed back as %s agent messages", n)
	}
	if n := b.eval(`String(document.querySelectorAll("#messages .msg.user").length)`); n != "1" {
		t.Errorf("%s user messages, want 1", n)
	}

	// Count and numbering agree with the rows shown.
	shownRows := `(() => { const rows = [...document.querySelectorAll("#timeline .ev")].filter(li => li.offsetParent !== null); return rows.length + ":" + rows.map(li => li.querySelector(".idx").textContent).join(",") + ":" + document.querySelector("#event-count").textContent; })()`
	got := b.eval(shownRows)
	parts := strings.Split(got, ":")
	want := make([]string, 0)
	for i := 1; i <= len(strings.Split(parts[1], ",")); i++ {
		want = append(want, strconv.Itoa(i))
	}
	if parts[0] != parts[2] || parts[1] != strings.Join(want, ",") {
		t.Errorf("timeline shown rows:numbers:count = %s, want the count of the rows and numbers 1..n", got)
	}
	b.do("show checkpoints", chromedp.Click("#show-bookkeeping"))
	all := b.eval(shownRows)
	if all == got || strings.Split(all, ":")[0] != strings.Split(all, ":")[2] {
		t.Errorf("with checkpoints shown: %s (hidden: %s)", all, got)
	}
	b.do("hide checkpoints", chromedp.Click("#show-bookkeeping"))

	// Two empty sessions (as "+ New" and other clients leave behind), then
	// a reload: the conversation is listed by its first message, the empty
	// ones are behind a toggle.
	for i := 0; i < 2; i++ {
		resp, err := http.Post(base+"/apps/workflow/users/user/sessions", "application/json", strings.NewReader("{}"))
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
	}
	b.do("reload", chromedp.Navigate(base+"/dev-ui/#app=workflow"), chromedp.Reload())
	b.waitFor("page ready again", `document.body.dataset.ready === "true" && document.querySelector("#toggle-empty") !== null`)
	if labels := b.eval(`[...document.querySelectorAll("#session-list li.session")].map(li => li.querySelector(".session-label").textContent).join("|")`); labels != "when do you open?" {
		t.Errorf("session list = %q, want the conversation listed by its first message and no empty session", labels)
	}
	if toggle := b.eval(`document.querySelector("#toggle-empty").textContent`); toggle != "Show 2 empty sessions" {
		t.Errorf("toggle = %q", toggle)
	}
	b.do("show empty sessions", chromedp.Click("#toggle-empty"))
	if n := b.eval(`String(document.querySelectorAll("#session-list li.session.empty-session").length)`); n != "2" {
		t.Errorf("%s empty sessions listed after the toggle, want 2", n)
	}
	b.screenshot("sessions")

	// The description: cut to one line, readable whole on a click.
	desc := `(() => { const d = document.querySelector("#app-description"); return (d.scrollWidth > d.clientWidth + 1) + ":" + d.title; })()`
	if got := b.eval(desc); !strings.HasPrefix(got, "true:A support desk: routes questions") {
		t.Errorf("description cut:title = %q, want cut with the full text in its title", got)
	}
	b.do("expand the description", chromedp.Click("#app-description"))
	if got := b.eval(desc); !strings.HasPrefix(got, "false:") {
		t.Errorf("expanded description cut:title = %q", got)
	}

	// 800 px wide: nothing sticks out, the chat is usable.
	b.do("narrow the window", chromedp.EmulateViewport(800, 700))
	b.waitFor("layout settled", `document.documentElement.clientWidth === 800`)
	fits := b.eval(`(() => {
		const bad = [];
		if (document.documentElement.scrollWidth > 800) bad.push("page scrolls sideways: " + document.documentElement.scrollWidth);
		for (const id of ["messages", "message", "send", "session-list", "timeline", "status"]) {
			const r = document.getElementById(id).getBoundingClientRect();
			if (r.width === 0 || r.right > 800 || r.left < 0) bad.push(id + " at " + r.left + ".." + r.right);
		}
		const chat = document.getElementById("messages").getBoundingClientRect();
		if (chat.width < 380 || chat.height < 200) bad.push("chat is " + chat.width + "x" + chat.height);
		return bad.join("; ");
	})()`)
	if fits != "" {
		t.Errorf("at 800 px: %s", fits)
	}
	b.screenshot("800px")

	// The theme follows the system setting.
	b.do("prefer dark", chromedp.Func(func(ctx context.Context, tg *chromedp.Target) error {
		_, err := cdp.Call(ctx, tg, emulation.SetEmulatedMedia, emulation.SetEmulatedMediaParams{
			Features: []*emulation.MediaFeature{{Name: "prefers-color-scheme", Value: "dark"}}})
		return err
	}))
	if bg := b.eval(`getComputedStyle(document.body).backgroundColor + "/" + getComputedStyle(document.querySelector(".chat")).backgroundColor`); bg != "rgb(18, 20, 28)/rgb(26, 29, 40)" {
		t.Errorf("dark backgrounds = %s", bg)
	}
	b.screenshot("dark")
}
