package cli_test

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
)

// TestDevUIFileApps opens the dev UI of "loom web DIR": apps from files are
// marked in the app list, and a broken edit shows its error (file, line and
// field) while the previous version keeps serving.
func TestDevUIFileApps(t *testing.T) {
	dir := t.TempDir()
	apps := filepath.Join(dir, "apps")
	helper := filepath.Join(apps, "helper", "root_agent.yaml")
	writeFile(t, helper, "name: helper\ninstruction: Help.\n")
	var log syncBuffer
	base := startServerLog(t, []string{"web", apps}, &log, assistantApp)

	b := newBrowser(t, dir, "fileapps-")
	b.do("open the UI", chromedp.Navigate(base+"/dev-ui/#app=helper"))
	b.waitFor("page ready", `document.body.dataset.ready === "true"`)
	if got := b.eval(`[...document.querySelectorAll("#app-select option")].map(o => o.text).join(",")`); got != "assistant,helper (file)" {
		t.Errorf("app list = %q", got)
	}
	if got := b.eval(`document.querySelector("#app-select").value`); got != "helper" {
		t.Fatalf("selected app = %q", got)
	}

	writeFile(t, helper, "name: helper\ninstruction: Help.\nmodle: x\n")
	b.waitFor("load error shown", `!document.querySelector("#app-load-error").hidden`)
	msg := b.eval(`document.querySelector("#app-load-error").textContent`)
	if !strings.Contains(msg, "root_agent.yaml:3:1: modle: is not a known key") || !strings.Contains(msg, "previous version keeps serving") {
		t.Errorf("load error = %q", msg)
	}
	if got := b.eval(`document.querySelector("#app-select").selectedOptions[0].text`); got != "helper (file, load error)" {
		t.Errorf("option = %q", got)
	}
	b.screenshot("load-error")

	writeFile(t, helper, "name: helper\ninstruction: Help.\n")
	b.waitFor("load error cleared", `document.querySelector("#app-load-error").hidden`)
}
