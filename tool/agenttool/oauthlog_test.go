package agenttool_test

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
	"strings"
	"sync"
	"testing"

	"golang.org/x/oauth2"
	"google.golang.org/genai"

	"github.com/loomkit/loom/agent/llmagent"
	"github.com/loomkit/loom/credential"
	"github.com/loomkit/loom/credential/oauth"
	"github.com/loomkit/loom/credential/sqlcredential"
	"github.com/loomkit/loom/event"
	"github.com/loomkit/loom/internal/sqldb/sqldbtest"
	"github.com/loomkit/loom/model"
	"github.com/loomkit/loom/model/scripted"
	"github.com/loomkit/loom/runner"
	"github.com/loomkit/loom/session"
	"github.com/loomkit/loom/session/sqlsession"
	"github.com/loomkit/loom/tool"
	"github.com/loomkit/loom/tool/agenttool"
	"github.com/loomkit/loom/tool/functiontool"
)

// Secrets of the relayed sign-in, distinctive enough that finding one in
// the raw database file means it was stored.
const (
	relayedSecret  = "client-secret-8c1f7a"
	relayedCode    = "auth-code-5d92e4"
	relayedAccess  = "access-token-b37a10"
	relayedRefresh = "refresh-token-e4c2f9"
)

// relayProvider is a loopback authorization server's token URL: it trades
// relayedCode, once, for relayedAccess and relayedRefresh, and counts the
// trades.
type relayProvider struct {
	srv *httptest.Server

	mu     sync.Mutex
	trades int
}

func newRelayProvider(t *testing.T) *relayProvider {
	p := &relayProvider{}
	p.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p.mu.Lock()
		defer p.mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		if r.URL.Path != "/token" || r.PostFormValue("code") != relayedCode || r.PostFormValue("client_secret") != relayedSecret || p.trades > 0 {
			w.WriteHeader(http.StatusBadRequest)
			fmt.Fprint(w, `{"error":"invalid_grant"}`)
			return
		}
		p.trades++
		fmt.Fprintf(w, `{"access_token":%q,"refresh_token":%q,"token_type":"Bearer","expires_in":3600}`, relayedAccess, relayedRefresh)
	}))
	t.Cleanup(p.srv.Close)
	return p
}

func (p *relayProvider) count() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.trades
}

// relayAgent is an LLM agent whose model sends a request to the agent
// tool wt, then answers "done: " and the tool's result.
func relayAgent(t *testing.T, name string, wt tool.Tool) *llmagent.Agent {
	t.Helper()
	m := scripted.New(name+"-model", func(_ context.Context, req *model.Request) (scripted.Turn, error) {
		if frs := scripted.LastFunctionResponse(req); len(frs) > 0 {
			if r, ok := frs[0].Response["result"].(string); ok {
				return scripted.Text("done: " + r), nil
			}
			return scripted.Text("waiting"), nil
		}
		return scripted.Call(wt.Name(), map[string]any{"request": "what is on today?"}), nil
	})
	a, err := llmagent.New(llmagent.Config{Name: name, Model: m, Instruction: "Help.", Tools: []tool.Tool{wt}})
	if err != nil {
		t.Fatal(err)
	}
	return a
}

// relayedCredential follows an agent tool's confirmation request down the
// children it relays (toolConfirmation.payload.agentToolPause.waiting[0])
// to the credential request at the bottom, and returns its auth config.
func relayedCredential(t *testing.T, req *genai.FunctionCall) map[string]any {
	t.Helper()
	name, args := req.Name, req.Args
	for depth := 0; name == event.FunctionRequestConfirmation; depth++ {
		payload, _ := args["toolConfirmation"].(map[string]any)["payload"].(map[string]any)
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
		if err := json.Unmarshal(b, &rec); err != nil || len(rec.Waiting) == 0 || depth > 4 {
			t.Fatalf("the request relays no credential request: %s", b)
		}
		name, args = rec.Waiting[0].Name, rec.Waiting[0].Args
	}
	if name != event.FunctionRequestCredential {
		t.Fatalf("the request relays %s, want %s", name, event.FunctionRequestCredential)
	}
	return event.CloneMap(args["authConfig"].(map[string]any))
}

// TestT22RelayedSignInLeavesNoSecretInTheLog: a tool that signs in with
// OAuth2 inside an agent used as a tool (and inside an agent tool inside
// that one) pauses the caller's call; the client approves it with the auth
// config holding the redirect URL, which relays the code to the child.
// The code is exchanged once and the tool runs with the token, but
// neither the code, the tokens nor the client secret reach the caller's
// session log, the raw SQLite database or its WAL: the approval is stored
// as {"confirmed": true}, its payload kept in memory for the child only.
//
// (CONFORMANCE T17, T22)
func TestT22RelayedSignInLeavesNoSecretInTheLog(t *testing.T) {
	for _, depth := range []int{1, 2} {
		t.Run(fmt.Sprintf("depth %d", depth), func(t *testing.T) {
			p := newRelayProvider(t)
			cfg := oauth.Config{Name: "calendar", OAuth2: &oauth2.Config{
				ClientID: "client", ClientSecret: relayedSecret, RedirectURL: "http://127.0.0.1/callback",
				Endpoint: oauth2.Endpoint{AuthURL: p.srv.URL + "/authorize", TokenURL: p.srv.URL + "/token", AuthStyle: oauth2.AuthStyleInParams},
			}}
			calendar, err := functiontool.New(functiontool.Config{Name: "list_events", Description: "Lists events."},
				func(ctx context.Context, tc tool.Context, _ order) (map[string]any, error) {
					tok, err := oauth.Token(ctx, tc, cfg)
					if tok == nil {
						return nil, err
					}
					if tok.AccessToken != relayedAccess {
						return nil, errors.New("the tool got another token")
					}
					return map[string]any{"events": "standup"}, nil
				})
			if err != nil {
				t.Fatal(err)
			}
			var wt tool.Tool
			if wt, err = agenttool.New(childAgent(t, calendar), nil); err != nil {
				t.Fatal(err)
			}
			for i := 1; i < depth; i++ {
				if wt, err = agenttool.New(relayAgent(t, fmt.Sprintf("middle_%d", i), wt), nil); err != nil {
					t.Fatal(err)
				}
			}

			ctx := context.Background()
			dsn := sqldbtest.SQLiteURL(t)
			sessions, err := sqlsession.NewService(ctx, dsn, nil)
			if err != nil {
				t.Fatal(err)
			}
			creds, err := sqlcredential.NewService(ctx, dsn, credential.GenerateKey())
			if err != nil {
				t.Fatal(err)
			}
			r, err := runner.New(runner.Config{AppName: "app", Agent: relayAgent(t, "assistant", wt), Sessions: sessions,
				AutoCreateSession: true, Credentials: creds})
			if err != nil {
				t.Fatal(err)
			}

			events, err := r.RunSync(ctx, "u", "s1", genai.NewContentFromText("what is on today?", genai.RoleUser), nil)
			if err != nil {
				t.Fatal(err)
			}
			req := pausedRequest(t, events)
			authConfig := relayedCredential(t, req)
			o := authConfig["exchangedAuthCredential"].(map[string]any)["oauth2"].(map[string]any)
			authURI, err := url.Parse(o["authUri"].(string))
			if err != nil {
				t.Fatal(err)
			}
			o["authResponseUri"] = "http://127.0.0.1/callback?" + url.Values{"code": {relayedCode}, "state": {authURI.Query().Get("state")}}.Encode()

			// An answer whose state is not the request's is refused before
			// anything is stored, and the request stays pending (T19).
			forged := event.CloneMap(authConfig)
			forged["exchangedAuthCredential"].(map[string]any)["oauth2"].(map[string]any)["authResponseUri"] = "http://127.0.0.1/callback?code=" + relayedCode + "&state=forged"
			before := mustSession(t, r).Len()
			if _, err := r.RunSync(ctx, "u", "s1", approve(req.ID, forged), nil); !errors.Is(err, runner.ErrInvalid) || !errors.Is(err, oauth.ErrState) {
				t.Fatalf("an approval relaying another state: %v, want runner.ErrInvalid wrapping oauth.ErrState", err)
			}
			if n := mustSession(t, r).Len(); n != before {
				t.Fatalf("the refused approval stored %d events", n-before)
			}

			events, err = r.RunSync(ctx, "u", "s1", approve(req.ID, authConfig), nil)
			if err != nil {
				t.Fatal(err)
			}
			want := "child saw map[events:standup]"
			for i := 0; i < depth; i++ {
				want = "done: " + want
			}
			if got := finalText(events); got != want {
				t.Fatalf("answer = %q, want %q", got, want)
			}
			if n := p.count(); n != 1 {
				t.Fatalf("the token URL traded %d codes, want 1", n)
			}

			secrets := []string{relayedSecret, relayedCode, relayedAccess, relayedRefresh}
			approved := false
			for _, ev := range mustSession(t, r).Events() {
				b, err := json.Marshal(ev)
				if err != nil {
					t.Fatal(err)
				}
				for _, s := range secrets {
					if bytes.Contains(b, []byte(s)) {
						t.Errorf("the session log holds %q: %s", s, b)
					}
				}
				for _, fr := range ev.FunctionResponses() {
					if ev.Author == event.AuthorUser && fr.ID == req.ID {
						approved = true
						if got := fmt.Sprint(fr.Response); got != "map[confirmed:true]" {
							t.Errorf("the approval is stored as %s, want map[confirmed:true]", got)
						}
					}
				}
			}
			if !approved {
				t.Error("the session log does not hold the approval")
			}

			file := strings.TrimPrefix(dsn, "sqlite://")
			var raw []byte
			for _, f := range []string{file, file + "-wal"} {
				b, err := os.ReadFile(f)
				if err != nil && !errors.Is(err, fs.ErrNotExist) {
					t.Fatal(err)
				}
				raw = append(raw, b...)
			}
			if !bytes.Contains(raw, []byte("child saw map[events:standup]")) {
				t.Fatal("the raw database does not hold the events in clear: the check below would prove nothing")
			}
			for _, s := range secrets {
				if bytes.Contains(raw, []byte(s)) {
					t.Errorf("the raw database or its WAL holds %q", s)
				}
			}
		})
	}
}

// mustSession reads the session s1 of user u of r.
func mustSession(t *testing.T, r *runner.Runner) *session.Session {
	t.Helper()
	sess, err := r.Sessions().Get(context.Background(), session.Key{AppName: "app", UserID: "u", SessionID: "s1"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	return sess
}
