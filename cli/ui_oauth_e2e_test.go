package cli_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/chromedp/chromedp"
	"golang.org/x/oauth2"

	"github.com/loomkit/loom/agent"
	"github.com/loomkit/loom/agent/llmagent"
	"github.com/loomkit/loom/cli"
	"github.com/loomkit/loom/credential/oauth"
	"github.com/loomkit/loom/model"
	"github.com/loomkit/loom/model/scripted"
	"github.com/loomkit/loom/server/ui"
	"github.com/loomkit/loom/tool"
	"github.com/loomkit/loom/tool/agenttool"
	"github.com/loomkit/loom/tool/functiontool"
)

// authServer is a loopback OAuth2 provider: /authorize sends the user
// straight back to the redirect URI with a code (as if they had signed in
// and consented), /token trades a code for an access token when the
// redirect URI is the one the code was issued for.
type authServer struct {
	srv *httptest.Server

	mu        sync.Mutex
	n         int
	codes     map[string]string // code → redirect URI it was issued for
	redirects []string          // the redirect URIs /authorize was given
	exchanged []string          // the redirect URIs /token was given
}

func newAuthServer(t *testing.T) *authServer {
	a := &authServer{codes: map[string]string{}}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /authorize", func(w http.ResponseWriter, r *http.Request) {
		q := r.URL.Query()
		redirect, err := url.Parse(q.Get("redirect_uri"))
		if err != nil || redirect.Scheme != "http" || q.Get("client_id") != "ui-client" || q.Get("response_type") != "code" {
			http.Error(w, "bad authorization request", http.StatusBadRequest)
			return
		}
		a.mu.Lock()
		a.n++
		code := fmt.Sprintf("code-%d", a.n)
		a.codes[code] = redirect.String()
		a.redirects = append(a.redirects, redirect.String())
		a.mu.Unlock()
		back := redirect.Query()
		back.Set("code", code)
		back.Set("state", q.Get("state"))
		redirect.RawQuery = back.Encode()
		http.Redirect(w, r, redirect.String(), http.StatusFound)
	})
	mux.HandleFunc("POST /token", func(w http.ResponseWriter, r *http.Request) {
		a.mu.Lock()
		defer a.mu.Unlock()
		code, redirect := r.PostFormValue("code"), r.PostFormValue("redirect_uri")
		a.exchanged = append(a.exchanged, redirect)
		w.Header().Set("Content-Type", "application/json")
		if want, ok := a.codes[code]; !ok || want != redirect || r.PostFormValue("client_secret") != "ui-secret" {
			w.WriteHeader(http.StatusBadRequest)
			fmt.Fprint(w, `{"error":"invalid_grant"}`)
			return
		}
		delete(a.codes, code)
		fmt.Fprintf(w, `{"access_token":"token-for-%s","token_type":"Bearer","expires_in":3600}`, code)
	})
	a.srv = httptest.NewServer(mux)
	t.Cleanup(a.srv.Close)
	return a
}

func (a *authServer) seen() (redirects, exchanged []string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	return append([]string(nil), a.redirects...), append([]string(nil), a.exchanged...)
}

// signInAgent has two tools that each sign the user in at a with OAuth2
// (under different names) and report the access token they got; its model
// calls list_events for a message about the calendar and list_files
// otherwise, then repeats the tool's result.
func signInAgent(t *testing.T, a *authServer) agent.Agent {
	t.Helper()
	toolFor := func(name, key string) tool.Tool {
		cfg := oauth.Config{Name: key, OAuth2: &oauth2.Config{
			ClientID: "ui-client", ClientSecret: "ui-secret", Scopes: []string{key + ".read"},
			Endpoint: oauth2.Endpoint{AuthURL: a.srv.URL + "/authorize", TokenURL: a.srv.URL + "/token", AuthStyle: oauth2.AuthStyleInParams},
		}}
		tl, err := functiontool.New(functiontool.Config{Name: name, Description: "Lists the user's " + key + "."},
			func(ctx context.Context, tc tool.Context, _ struct{}) (map[string]any, error) {
				tok, err := oauth.Token(ctx, tc, cfg)
				if tok == nil {
					return nil, err
				}
				return map[string]any{"token": tok.AccessToken}, nil
			})
		if err != nil {
			t.Fatal(err)
		}
		return tl
	}
	mailModel := scripted.New("mail-model", func(_ context.Context, req *model.Request) (scripted.Turn, error) {
		if frs := scripted.LastFunctionResponse(req); len(frs) > 0 {
			b, _ := json.Marshal(frs[0].Response)
			return scripted.Text("mail: " + string(b)), nil
		}
		return scripted.Call("list_mail", nil), nil
	})
	mailer, err := llmagent.New(llmagent.Config{Name: "mailer", Description: "Reads the user's mail.", Model: mailModel,
		Instruction: "Read mail.", Tools: []tool.Tool{toolFor("list_mail", "mail")}})
	if err != nil {
		t.Fatal(err)
	}
	mailTool, err := agenttool.New(mailer, nil)
	if err != nil {
		t.Fatal(err)
	}
	llm := scripted.New("sign-in-model", func(_ context.Context, req *model.Request) (scripted.Turn, error) {
		if frs := scripted.LastFunctionResponse(req); len(frs) > 0 {
			b, _ := json.Marshal(frs[0].Response)
			return scripted.Text(frs[0].Name + " got " + string(b)), nil
		}
		switch text := scripted.LastUserText(req); {
		case strings.Contains(text, "calendar"):
			return scripted.Call("list_events", nil), nil
		case strings.Contains(text, "mail"):
			return scripted.Call("mailer", map[string]any{"request": "list my mail"}), nil
		case strings.Contains(text, "photos"):
			return scripted.Call("list_photos", nil), nil
		}
		return scripted.Call("list_files", nil), nil
	})
	ag, err := llmagent.New(llmagent.Config{Name: "organizer", Model: llm, Instruction: "Help.",
		Tools: []tool.Tool{toolFor("list_events", "calendar"), toolFor("list_files", "drive"), toolFor("list_photos", "photos"), mailTool}})
	if err != nil {
		t.Fatal(err)
	}
	return ag
}

// TestT21DevUISignIn drives the dev UI in Chromium through OAuth2 sign-ins
// against a loopback provider: the Sign in button opens the authorization
// URL in a popup with the dev server's callback route as redirect URI; the
// provider sends the popup back there, the callback page hands the redirect
// URL to the UI, which answers the request, and the tool runs with the
// token; the next session does not ask again. A second tool's sign-in is
// completed by pasting the redirect URL by hand, and a third's, inside an
// agent used as a tool, through the agent tool's pause; a fourth's
// callback, opened without an opener, reaches the UI all the same.
//
// (CONFORMANCE T21)
func TestT21DevUISignIn(t *testing.T) {
	dir := t.TempDir()
	a := newAuthServer(t)
	base := startWeb(t, dir, cli.App{Name: "organizer", Agent: signInAgent(t, a)})
	callback := base + ui.CallbackPath

	b := newBrowser(t, dir, "signin-")
	do, waitFor, eval := b.do, b.waitFor, b.eval
	// send sends a message and waits for the turn to end and the chat to
	// be rendered again from the session, so that what the test touches
	// next is not replaced under it.
	send := func(text string) {
		t.Helper()
		n := eval(`document.body.dataset.refreshed || "0"`)
		do("type a message", chromedp.SendKeys("#message", text), chromedp.Click("#send"))
		waitFor("the turn ended", `!document.querySelector("#composer").classList.contains("busy") && (document.body.dataset.refreshed || "0") !== "`+n+`"`)
	}
	do("open the UI", chromedp.Navigate(base+"/dev-ui/"))
	waitFor("page ready", `document.body.dataset.ready === "true"`)

	// The tool asks; the card offers to sign in.
	send("what is on my calendar?")
	waitFor("sign-in card", `document.querySelector("#messages .sign-in .sign-in-button") !== null`)
	if text := eval(`document.querySelector("#messages .sign-in").textContent`); !strings.Contains(text, "list_events") || !strings.Contains(text, "calendar") {
		t.Errorf("sign-in card = %q", text)
	}
	b.screenshot("card")
	b.click("sign in", "#messages .sign-in .sign-in-button")
	waitFor("the tool ran with the token", `[...document.querySelectorAll("#messages .msg.agent .bubble")].some(b => b.textContent === 'list_events got {"token":"token-for-code-1"}')`)
	waitFor("card answered", `document.querySelector("#messages .sign-in .note")?.textContent === "Signed in"`)
	if sent := eval(`document.querySelector("#messages .credential-sent")?.textContent || ""`); sent == "" {
		t.Error("the chat does not say the credentials were sent")
	}
	if strings.Contains(eval(`document.querySelector("#messages").textContent`), "code=code-1") {
		t.Error("the chat shows the authorization code")
	}
	redirects, exchanged := a.seen()
	if len(redirects) != 1 || redirects[0] != callback || len(exchanged) != 1 || exchanged[0] != callback {
		t.Errorf("redirect URIs at /authorize %v and /token %v, want [%s] each", redirects, exchanged, callback)
	}
	b.screenshot("signed-in")

	// A new session of the same user: the kept token serves, nothing asks.
	do("new session", chromedp.Click("#new-session"))
	waitFor("session selected", `document.querySelector("#session-list li.session.active") !== null && document.querySelectorAll("#messages .msg").length === 0`)
	send("and my calendar now?")
	waitFor("the tool ran without asking", `[...document.querySelectorAll("#messages .msg.agent .bubble")].some(b => b.textContent === 'list_events got {"token":"token-for-code-1"}')`)
	if n := eval(`String(document.querySelectorAll("#messages .sign-in").length)`); n != "0" {
		t.Errorf("%s sign-in cards in a session with a kept token", n)
	}

	// Pasting by hand: the user signs in elsewhere and pastes where they
	// were sent back to. A URL without a code is refused in the card.
	send("my files")
	waitFor("second sign-in card", `document.querySelector("#messages .sign-in .redirect-url") !== null`)
	do("paste a URL without a code", chromedp.SendKeys("#messages .sign-in .redirect-url", callback+"?state=x"),
		chromedp.Click("#messages .sign-in .redirect-url + button"))
	waitFor("refused in the card", `document.querySelector("#messages .sign-in .sign-in-status").textContent.includes("no authorization code")`)
	state := eval(`document.querySelector("#messages .sign-in").dataset.state`)
	if state == "" {
		t.Fatal("the card names no state")
	}
	back := followAuthorize(t, a, callback, state)
	do("paste the redirect URL", chromedp.Evaluate[chromedp.Void](`document.querySelector("#messages .sign-in .redirect-url").value = ""`),
		chromedp.SendKeys("#messages .sign-in .redirect-url", back),
		chromedp.Click("#messages .sign-in .redirect-url + button"))
	waitFor("the second tool ran", `[...document.querySelectorAll("#messages .msg.agent .bubble")].some(b => b.textContent === 'list_files got {"token":"token-for-code-2"}')`)
	b.screenshot("pasted")

	// A tool inside an agent used as a tool: the agent tool's pause carries
	// the child's request, and the same card signs the user in.
	send("check my mail")
	waitFor("sign-in card of the agent tool", `[...document.querySelectorAll("#messages .sign-in")].some(c => c.textContent.includes("list_mail") && c.querySelector(".sign-in-button"))`)
	if n := eval(`String(document.querySelectorAll("#messages .confirm:not(.sign-in) button.primary").length)`); n != "0" {
		t.Errorf("the agent tool's request also shows %s Approve buttons", n)
	}
	b.click("sign in for the agent tool", "#messages .sign-in .sign-in-button")
	waitFor("the agent tool's child ran", `[...document.querySelectorAll("#messages .msg.agent .bubble")].some(b => b.textContent.startsWith("mailer got") && b.textContent.includes("token-for-code-3"))`)
	b.screenshot("agent-tool")

	// The opener severed (as an authorization server's
	// Cross-Origin-Opener-Policy does): the callback page, opened in a tab
	// of its own, hands the URL to the dev UI's page through a
	// BroadcastChannel of the origin.
	send("my photos")
	waitFor("photos sign-in card", `document.querySelector("#messages .sign-in .sign-in-button") !== null`)
	back = followAuthorize(t, a, callback, eval(`document.querySelector("#messages .sign-in .sign-in-button").closest(".sign-in").dataset.state`))
	tab, closeTab := chromedp.NewContext(b.ctx)
	defer closeTab()
	if err := chromedp.Do(tab, chromedp.Navigate(back)); err != nil {
		t.Fatalf("open the callback page in its own tab: %v", err)
	}
	waitFor("the photos tool ran", `[...document.querySelectorAll("#messages .msg.agent .bubble")].some(b => b.textContent === 'list_photos got {"token":"token-for-code-4"}')`)

	// No answer, the agent tool's relayed one included, left its code in
	// the session database or its WAL (the tools' results, which show
	// their tokens, are this test's and are stored as results).
	var raw []byte
	for _, f := range []string{"sessions.db", "sessions.db-wal"} {
		b, err := os.ReadFile(filepath.Join(dir, f))
		if err != nil && !errors.Is(err, fs.ErrNotExist) {
			t.Fatal(err)
		}
		raw = append(raw, b...)
	}
	if !bytes.Contains(raw, []byte("token-for-code-3")) {
		t.Fatal("the session database does not hold the events in clear: the check below would prove nothing")
	}
	for i := 1; i <= 4; i++ {
		if code := fmt.Sprintf("code=code-%d", i); bytes.Contains(raw, []byte(code)) {
			t.Errorf("the session database holds the answer with %s", code)
		}
	}
}

// followAuthorize is the user signing in at the provider outside the UI:
// it requests the authorization URL for state and returns where the
// provider sends the user back to.
func followAuthorize(t *testing.T, a *authServer, redirectURI, state string) string {
	t.Helper()
	q := url.Values{"client_id": {"ui-client"}, "response_type": {"code"}, "redirect_uri": {redirectURI}, "state": {state}}
	c := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := c.Get(a.srv.URL + "/authorize?" + q.Encode())
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusFound {
		t.Fatalf("authorize: %s", resp.Status)
	}
	return resp.Header.Get("Location")
}
