package cli_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// browser is a headless Chromium for the dev UI tests, with the few steps
// they need. It closes when the test ends.
type browser struct {
	t     *testing.T
	ctx   context.Context
	shots string // a directory for screenshots (LOOM_UI_SCREENSHOTS), or ""
	name  string // prefix of this test's screenshot files
}

func newBrowser(t *testing.T, dir, name string) *browser {
	t.Helper()
	allocCtx, cancelAlloc := chromedp.NewExecAllocator(context.Background(),
		chromedp.ExecPath(chromiumPath(t)),
		chromedp.Headless,
		chromedp.NoSandbox,
		chromedp.DisableGPU,
		chromedp.NoFirstRun,
		chromedp.NoDefaultBrowserCheck,
		chromedp.Flag("disable-quic", true),
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.UserDataDir(filepath.Join(dir, "chromium")),
		chromedp.WindowSize(1400, 900),
	)
	ctx, cancel := chromedp.NewContext(allocCtx)
	// A generous bound on the whole browser session, not a timing assertion.
	ctx, cancelTimeout := context.WithTimeout(ctx, 2*time.Minute)
	t.Cleanup(func() { cancelTimeout(); cancel(); cancelAlloc() })
	return &browser{t: t, ctx: ctx, shots: os.Getenv("LOOM_UI_SCREENSHOTS"), name: name}
}

// screenshot saves the page when LOOM_UI_SCREENSHOTS names a directory.
func (b *browser) screenshot(name string) {
	if b.shots == "" {
		return
	}
	png, err := chromedp.Run(b.ctx, chromedp.FullScreenshot(100))
	if err != nil {
		b.t.Logf("screenshot %s: %v", name, err)
		return
	}
	if err := os.WriteFile(filepath.Join(b.shots, b.name+name+".png"), png, 0o644); err != nil {
		b.t.Log(err)
	}
}

func (b *browser) do(step string, actions ...chromedp.Action[chromedp.Void]) {
	b.t.Helper()
	if err := chromedp.Do(b.ctx, actions...); err != nil {
		b.screenshot("failure")
		b.t.Fatalf("%s: %v", step, err)
	}
}

// click clicks the element selector matches. The UI may render the list
// again between finding the element and clicking it (a run's end
// refreshes the session); a click that finds its node gone finds it
// again, up to a few times. Nothing was clicked when that happens.
func (b *browser) click(step, selector string) {
	b.t.Helper()
	var err error
	for range 5 {
		if err = chromedp.Do(b.ctx, chromedp.Click(selector)); err == nil || !strings.Contains(err.Error(), "Could not find node") {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	if err != nil {
		b.screenshot("failure")
		b.t.Fatalf("%s: %v", step, err)
	}
}

func (b *browser) eval(expr string) string {
	b.t.Helper()
	s, err := chromedp.Run(b.ctx, chromedp.Evaluate[string](expr))
	if err != nil {
		b.t.Fatalf("evaluate %s: %v", expr, err)
	}
	return s
}

// waitFor polls a JavaScript predicate until it holds.
func (b *browser) waitFor(step, predicate string) {
	b.t.Helper()
	b.do(step, chromedp.Func(func(ctx context.Context, tg *chromedp.Target) error {
		_, err := chromedp.Poll[chromedp.Void](predicate, chromedp.WithPollingInterval(50*time.Millisecond))(ctx, tg)
		return err
	}))
}
