package cli_test

import (
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/loomkit/loom/cli"
	workflowexample "github.com/loomkit/loom/examples/workflow"
)

// TestDevUIWorkflowGraph drives the dev UI against the bundled workflow
// example: a refund request pauses on the approve node's input request; the
// Graph tab draws the workflow with that node paused and the finished ones
// done; the input card's answer resumes the run, which settles the refund.
func TestDevUIWorkflowGraph(t *testing.T) {
	dir := t.TempDir()
	base := startWeb(t, dir, cli.App{Name: "workflow", New: workflowexample.New, Offline: workflowexample.Offline})
	b := newBrowser(t, dir, "graph-")
	do, waitFor := b.do, b.waitFor

	do("open the UI", chromedp.Navigate(base+"/dev-ui/"))
	waitFor("page ready", `document.body.dataset.ready === "true"`)
	do("create a session", chromedp.Click("#new-session"))
	waitFor("session selected", `document.querySelector("#session-list li.session.active") !== null`)
	do("ask for a refund", chromedp.SendKeys("#message", "I want a refund for order 77"), chromedp.Click("#send"))
	waitFor("input card", `document.querySelector("#messages .input-request .input-answer") !== null`)
	if msg := b.eval(`document.querySelector("#messages .input-request p").textContent`); msg != "Refund order A-77 for $42.50 (within 30 days)? Answer yes or no." {
		t.Errorf("input card message = %q", msg)
	}
	waitFor("run paused", `!document.querySelector("#send").disabled`)

	do("open the graph tab", chromedp.Click(`.tab[data-tab="graph"]`))
	waitFor("graph drawn", `document.querySelectorAll("#graph-view .graph-node").length === 8`)
	waitFor("approve paused", `document.querySelector('#graph-view .graph-node.paused[data-node="approve"]') !== null`)
	waitFor("lookup done", `document.querySelector('#graph-view .graph-node.done[data-node="lookup_order"]') !== null`)
	if n := b.eval(`String(document.querySelectorAll("#graph-view .graph-node.done, #graph-view .graph-node.running, #graph-view .graph-node.paused").length)`); n != "5" {
		t.Errorf("%s nodes highlighted, want classify, lookup_order, check_policy, facts done and approve paused", n)
	}
	b.screenshot("paused")

	do("answer", chromedp.SendKeys("#messages .input-request .input-answer", "yes"), chromedp.Click("#messages .input-request button"))
	waitFor("refund settled", `[...document.querySelectorAll("#messages .msg.agent .bubble")].some(b => b.textContent === "Your refund of $42.50 for order A-77 is on its way.")`)
	waitFor("card answered", `document.querySelector("#messages .input-request .note")?.textContent === "Answered"`)
	waitFor("settle done", `document.querySelector('#graph-view .graph-node.done[data-node="settle"]') !== null`)
	waitFor("approve done", `document.querySelector('#graph-view .graph-node.done[data-node="approve"]') !== null`)
	b.screenshot("settled")
}
