package cli_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
	"google.golang.org/genai"

	"github.com/loomkit/loom/agent/llmagent"
	"github.com/loomkit/loom/cli"
	"github.com/loomkit/loom/model/scripted"
)

// TestR16DevUIUsage drives the dev UI in a real Chromium against "loom web
// --prices": after two turns, one answered by a priced model (a release of
// a listed one, with part of its prompt cached) and one by a model without
// a price, the chat header shows the session's tokens and cost and the
// Usage tab each turn's, the unpriced turn with tokens only.
// (CONFORMANCE R16)
func TestR16DevUIUsage(t *testing.T) {
	dir := t.TempDir()
	prices := filepath.Join(dir, "prices.yaml")
	if err := os.WriteFile(prices, []byte("models:\n  fast: {input: 1, output: 4, cached_input: 0.5}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	meter, err := llmagent.New(llmagent.Config{Name: "meter", Model: scripted.NewSequence("fast",
		scripted.Turn{Text: "first answer", ModelVersion: "fast-001", Usage: &genai.GenerateContentResponseUsageMetadata{
			PromptTokenCount: 1200, CachedContentTokenCount: 200, CandidatesTokenCount: 300, TotalTokenCount: 1500}},
		scripted.Turn{Text: "second answer", ModelVersion: "unlisted", Usage: &genai.GenerateContentResponseUsageMetadata{
			PromptTokenCount: 2000, CandidatesTokenCount: 500, TotalTokenCount: 2500}})})
	if err != nil {
		t.Fatal(err)
	}
	base := startWebArgs(t, dir, []string{"--prices", prices}, cli.App{Name: "meter", Agent: meter})

	b := newBrowser(t, dir, "usage-")
	do, waitFor := b.do, b.waitFor
	do("open the UI", chromedp.Navigate(base+"/dev-ui/"))
	waitFor("page ready", `document.body.dataset.ready === "true"`)
	do("create a session", chromedp.Click("#new-session"))
	waitFor("session selected", `document.querySelector("#session-list li.session.active") !== null`)
	do("send a message", chromedp.SendKeys("#message", "one"), chromedp.Click("#send"))
	// 1000 uncached·1 + 200 cached·0.5 + 300·4 = 2300 per million.
	waitFor("first turn's usage in the header", `document.querySelector("#session-usage").textContent === "1,500 tokens · $0.0023"`)
	waitFor("run finished", `!document.querySelector("#send").disabled`)
	do("send another", chromedp.SendKeys("#message", "two"), chromedp.Click("#send"))
	waitFor("session usage in the header", `document.querySelector("#session-usage").textContent === "4,000 tokens · $0.0023 + unpriced"`)

	do("open the usage tab", chromedp.Click(`.tab[data-tab="usage"]`))
	waitFor("two turns listed", `document.querySelectorAll("#usage-view tr.usage-turn").length === 2`)
	turns := b.eval(`JSON.stringify([...document.querySelectorAll("#usage-view tr.usage-turn")].map(r => [...r.children].map(c => c.textContent)))`)
	if want := `[["1","1,200","300","1,500","$0.0023"],["2","2,000","500","2,500","—"]]`; turns != want {
		t.Errorf("turn rows %s, want %s", turns, want)
	}
	totals := b.eval(`JSON.stringify(Object.fromEntries([...document.querySelectorAll("#usage-view .usage-total tr")].map(r => [r.dataset.key, r.querySelector("td").textContent])))`)
	for _, want := range []string{`"prompt":"3,200"`, `"cached":"200"`, `"candidates":"800"`, `"total":"4,000"`, `"cost":"$0.0023 + unpriced"`, `"responses":"2"`} {
		if !strings.Contains(totals, want) {
			t.Errorf("totals %s, want %s", totals, want)
		}
	}
	b.screenshot("usage")
}

// TestR15ServeRefusesBadPrices checks that loom api stops before serving
// when its --prices file is missing or wrong, saying which file and what
// is wrong with it. (CONFORMANCE R15)
func TestR15ServeRefusesBadPrices(t *testing.T) {
	dir := t.TempDir()
	bad := filepath.Join(dir, "prices.json")
	if err := os.WriteFile(bad, []byte(`{"models": {"gpt-4o": {"input": 2.5, "ouput": 10}}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	for file, want := range map[string]string{bad: "field ouput not found", filepath.Join(dir, "none.yaml"): "none.yaml"} {
		var errb syncBuffer
		code := cli.Run(context.Background(), []string{"api", "--port", "0", "--sessions", "memory://", "--prices", file},
			cli.Env{Stdout: &errb, Stderr: &errb, Getenv: noEnv}, assistantApp)
		if code == 0 || !strings.Contains(errb.String(), want) || !strings.Contains(errb.String(), filepath.Base(file)) {
			t.Errorf("--prices %s: exit code %d: %s; want a failure naming the file and %q", file, code, errb.String(), want)
		}
	}
}
