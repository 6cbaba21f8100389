package cli_test

import (
	"context"
	"encoding/json"
	"iter"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"google.golang.org/genai"

	"github.com/loomkit/loom/agent/llmagent"
	"github.com/loomkit/loom/cli"
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
