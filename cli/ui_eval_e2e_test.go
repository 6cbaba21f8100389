package cli_test

import (
	"fmt"
	"path/filepath"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/loomkit/loom/cli"
	"github.com/loomkit/loom/eval"
	"github.com/loomkit/loom/eval/sqleval"
	"github.com/loomkit/loom/examples/assistant"
	"github.com/loomkit/loom/model"
)

// TestDevUIEval drives the dev UI's Eval tab in Chromium: chat in a
// session, create an eval set, add the session to it, run it and see the
// scores.
func TestDevUIEval(t *testing.T) {
	dir := t.TempDir()
	base := startWeb(t, dir, cli.App{Name: "assistant", New: assistant.New, Offline: assistant.Offline})
	b := newBrowser(t, dir, "")
	do, waitFor := b.do, b.waitFor

	do("open the UI", chromedp.Navigate(base+"/dev-ui/"))
	waitFor("page ready", `document.body.dataset.ready === "true"`)
	do("create a session", chromedp.Click("#new-session"))
	waitFor("session selected", `document.querySelector("#session-list li.session.active") !== null`)
	do("ask", chromedp.SendKeys("#message", "What's the weather in Lisbon?"), chromedp.Click("#send"))
	w := assistant.Forecast("Lisbon")
	answer := fmt.Sprintf("It is %d°C and %s in Lisbon.", w.TemperatureC, w.Conditions)
	waitFor("answer", fmt.Sprintf(`[...document.querySelectorAll("#messages .msg.agent .bubble")].some(b => b.textContent === %q)`, answer))
	waitFor("run finished", `!document.querySelector("#send").disabled && document.querySelector("#status").textContent === "Ready"`)

	do("open the eval tab", chromedp.Click(`.tab[data-tab="eval"]`))
	waitFor("no sets yet", `!document.querySelector("#eval-empty").hidden`)
	do("create a set", chromedp.SendKeys("#eval-new-set", "weather_set"), chromedp.Click("#eval-create"))
	waitFor("set created", `document.querySelector("#eval-set-select").value === "weather_set"`)
	do("add the session", chromedp.SendKeys("#eval-case-id", "lisbon"), chromedp.Click("#eval-add-session"))
	waitFor("case listed", `document.querySelector('#eval-cases li[data-id="lisbon"]') !== null`)
	do("run the set", chromedp.Click("#eval-run"))
	waitFor("case passed", `document.querySelector('.eval-result[data-case="lisbon"] .eval-case-status')?.textContent === "PASSED"`)
	waitFor("response score", `document.querySelector('.eval-result[data-case="lisbon"] .eval-metric[data-metric="response_match_score"] .eval-score')?.textContent === "1.000"`)
	waitFor("trajectory score", `document.querySelector('.eval-result[data-case="lisbon"] .eval-metric[data-metric="tool_trajectory_avg_score"] .eval-score')?.textContent === "1.000"`)
	waitFor("summary", `document.querySelector("#eval-status").textContent === "1 of 1 cases passed."`)
	b.screenshot("eval")

	// The set and the result are stored in ADK's file forms.
	set, err := eval.ReadSetFile(filepath.Join(dir, "evals", "assistant", "weather_set.evalset.json"))
	if err != nil || len(set.EvalCases) != 1 || model.Text(set.EvalCases[0].Conversation[0].FinalResponse, "\n") != answer {
		t.Errorf("stored set %+v: %v", set, err)
	}
	// The server's sessions are in a database other than the default, so
	// the result is kept there.
	results, err := sqleval.Open(t.Context(), "sqlite://"+filepath.Join(dir, "sessions.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer results.Close()
	ids, err := results.ListResults(t.Context(), "assistant")
	if err != nil || len(ids) != 1 {
		t.Errorf("stored results %v: %v", ids, err)
	}
}
