package agenttool_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"sync"
	"testing"

	"golang.org/x/oauth2"
	"google.golang.org/genai"

	"github.com/loomkit/loom/credential"
	"github.com/loomkit/loom/credential/memcredential"
	"github.com/loomkit/loom/credential/oauth"
	"github.com/loomkit/loom/runner"
	"github.com/loomkit/loom/session/memsession"
	"github.com/loomkit/loom/tool"
	"github.com/loomkit/loom/tool/agenttool"
	"github.com/loomkit/loom/tool/functiontool"
)

// tokenServer is a loopback OAuth2 token URL: it trades any code it
// issued for an access token, and counts the trades.
type tokenServer struct {
	srv *httptest.Server

	mu     sync.Mutex
	codes  map[string]bool
	grants int
}

func newTokenServer(t *testing.T) *tokenServer {
	ts := &tokenServer{codes: map[string]bool{}}
	ts.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ts.mu.Lock()
		defer ts.mu.Unlock()
		code := r.PostFormValue("code")
		if r.URL.Path != "/token" || !ts.codes[code] {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusBadRequest)
			fmt.Fprint(w, `{"error":"invalid_grant"}`)
			return
		}
		delete(ts.codes, code)
		ts.grants++
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"access_token":"at-%d","token_type":"Bearer","expires_in":3600}`, ts.grants)
	}))
	t.Cleanup(ts.srv.Close)
	return ts
}

func (ts *tokenServer) issue(code string) {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	ts.codes[code] = true
}

func (ts *tokenServer) trades() int {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	return ts.grants
}

// TestT22OAuthInsideAgentToolIsKept: a tool that signs in with OAuth2,
// held by an agent used as a tool, asks once; the token is kept in the
// caller's runner's credential service, so the user's next session runs
// the tool without asking again.
//
// (CONFORMANCE T22)
func TestT22OAuthInsideAgentToolIsKept(t *testing.T) {
	ts := newTokenServer(t)
	cfg := oauth.Config{Name: "calendar", OAuth2: &oauth2.Config{
		ClientID: "client", ClientSecret: "secret", RedirectURL: "http://127.0.0.1/callback",
		Endpoint: oauth2.Endpoint{AuthURL: ts.srv.URL + "/authorize", TokenURL: ts.srv.URL + "/token", AuthStyle: oauth2.AuthStyleInParams},
	}}
	calendar, err := functiontool.New(functiontool.Config{Name: "list_events", Description: "Lists events."},
		func(ctx context.Context, tc tool.Context, _ order) (map[string]any, error) {
			tok, err := oauth.Token(ctx, tc, cfg)
			if tok == nil {
				return nil, err
			}
			return map[string]any{"token": tok.AccessToken}, nil
		})
	if err != nil {
		t.Fatal(err)
	}
	at, err := agenttool.New(childAgent(t, calendar), nil)
	if err != nil {
		t.Fatal(err)
	}
	creds, err := memcredential.NewService(credential.GenerateKey())
	if err != nil {
		t.Fatal(err)
	}
	r, err := runner.New(runner.Config{AppName: "app", Agent: caller(t, at), Sessions: memsession.NewService(),
		AutoCreateSession: true, Credentials: creds})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	msg := genai.NewContentFromText("what is on today?", genai.RoleUser)

	events, err := r.RunSync(ctx, "u", "s1", msg, nil)
	if err != nil {
		t.Fatal(err)
	}
	req := pausedRequest(t, events)
	answer := signIn(t, ts, req)
	events, err = r.RunSync(ctx, "u", "s1", approve(req.ID, answer), nil)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := finalText(events), "done: child saw map[token:at-1]"; got != want {
		t.Fatalf("first session's answer = %q, want %q", got, want)
	}

	// Another session of the same user: the kept token serves, nothing asks.
	events, err = r.RunSync(ctx, "u", "s2", msg, nil)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := finalText(events), "done: child saw map[token:at-1]"; got != want {
		t.Fatalf("second session's answer = %q, want %q (the kept token, without asking)", got, want)
	}
	if n := ts.trades(); n != 1 {
		t.Errorf("the token URL traded %d codes, want 1", n)
	}
	// The token is the user's alone: another user is asked.
	events, err = r.RunSync(ctx, "v", "s3", msg, nil)
	if err != nil {
		t.Fatal(err)
	}
	pausedRequest(t, events)
}

// signIn plays the user and the client for the child's credential request
// that the agent tool's confirmation request carries: the user signs in at
// the authorization URL and comes back with a code; the client answers with
// the auth config holding the redirect URL.
func signIn(t *testing.T, ts *tokenServer, req *genai.FunctionCall) map[string]any {
	t.Helper()
	payload, _ := req.Args["toolConfirmation"].(map[string]any)["payload"].(map[string]any)
	b, err := json.Marshal(payload[agenttool.PauseKey])
	if err != nil {
		t.Fatal(err)
	}
	var rec struct {
		Waiting []struct {
			Name string         `json:"name"`
			Args map[string]any `json:"args"`
		} `json:"waiting"`
	}
	if err := json.Unmarshal(b, &rec); err != nil || len(rec.Waiting) == 0 {
		t.Fatalf("the agent tool's request waits on nothing: %s", b)
	}
	if rec.Waiting[0].Name != "adk_request_credential" {
		t.Fatalf("the child waits on %s, want adk_request_credential", rec.Waiting[0].Name)
	}
	authConfig, _ := rec.Waiting[0].Args["authConfig"].(map[string]any)
	o := authConfig["exchangedAuthCredential"].(map[string]any)["oauth2"].(map[string]any)
	authURI, err := url.Parse(o["authUri"].(string))
	if err != nil {
		t.Fatal(err)
	}
	ts.issue("the-code")
	o["authResponseUri"] = "http://127.0.0.1/callback?code=the-code&state=" + url.QueryEscape(authURI.Query().Get("state"))
	return authConfig
}
