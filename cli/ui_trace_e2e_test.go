package cli_test

import (
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/loomkit/loom/cli"
	"github.com/loomkit/loom/examples/assistant"
)

// TestDevUITrace drives the dev UI's Trace tab in a real Chromium against
// the full CLI server: after a chat that calls a tool, the tab shows the
// invocation's span tree (invocation, agent, call_llm, execute_tool) with
// durations, a clicked span shows its attributes, and an opened timeline
// event shows the span that produced it.
func TestDevUITrace(t *testing.T) {
	dir := t.TempDir()
	base := startWeb(t, dir, cli.App{Name: "assistant", New: assistant.New, Offline: assistant.Offline})

	b := newBrowser(t, dir, "trace-")
	screenshot, do, waitFor := b.screenshot, b.do, b.waitFor

	do("open the UI", chromedp.Navigate(base+"/dev-ui/"))
	waitFor("page ready", `document.body.dataset.ready === "true"`)
	do("create a session", chromedp.Click("#new-session"))
	waitFor("session selected", `document.querySelector("#session-list li.session.active") !== null`)
	do("send a message", chromedp.SendKeys("#message", "What's the weather in Porto?"), chromedp.Click("#send"))
	waitFor("tool call in the timeline", `[...document.querySelectorAll("#timeline .ev.kind-call .label")].some(n => n.textContent === "get_weather")`)
	waitFor("run finished", `!document.querySelector("#send").disabled && document.querySelector("#status").textContent === "Ready"`)

	// The Trace tab: the span tree of the invocation.
	do("open the trace tab", chromedp.Click(`.tab[data-tab="trace"]`))
	waitFor("call_llm listed", `document.querySelector('#trace-view .span-row[data-name="call_llm"]') !== null`)
	waitFor("tool span listed", `document.querySelector('#trace-view .span-row[data-name="execute_tool get_weather"]') !== null`)
	waitFor("spans nested and timed", `(() => {
		const rows = [...document.querySelectorAll("#trace-view .span-row")];
		const indent = (name) => parseInt(rows.find(r => r.dataset.name === name)?.querySelector(".span-name").style.paddingLeft || "-1");
		return rows[0]?.dataset.name === "invocation" && indent("invocation") === 0 &&
			indent("call_llm") > indent("invocation") && rows.every(r => r.querySelector(".span-dur").textContent !== "");
	})()`)
	// Clicked from the page, in one step: the tab reloads its spans when it
	// opens and may redraw the rows between a lookup and a click.
	do("select call_llm", chromedp.Evaluate[chromedp.Void](`document.querySelector('#trace-view .span-row[data-name="call_llm"]').click()`))
	waitFor("span attributes", `[...document.querySelectorAll("#span-detail tr")].some(r => r.dataset.key === "gen_ai.system" && r.textContent.includes("gcp.vertex.agent"))`)
	screenshot("trace")

	// An opened event shows the span that produced it.
	do("open the events tab", chromedp.Click(`.tab[data-tab="events"]`))
	do("open the call event", chromedp.Click(`#timeline .ev.kind-call summary`))
	waitFor("event span", `[...document.querySelectorAll("#timeline .ev.kind-call .ev-trace tr")].some(r => r.dataset.key === "gen_ai.operation.name" && r.textContent.includes("generate_content"))`)
	do("open the response event", chromedp.Click(`#timeline .ev.kind-response summary`))
	screenshot("trace-event")
	waitFor("tool span", `[...document.querySelectorAll("#timeline .ev.kind-response .ev-trace tr")].some(r => r.dataset.key === "gen_ai.tool.name" && r.textContent.includes("get_weather"))`)
}
