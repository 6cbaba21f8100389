package openapitool_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"

	"google.golang.org/genai"

	"github.com/loomkit/loom/agent/llmagent"
	"github.com/loomkit/loom/credential"
	"github.com/loomkit/loom/credential/memcredential"
	"github.com/loomkit/loom/event"
	"github.com/loomkit/loom/model"
	"github.com/loomkit/loom/model/scripted"
	"github.com/loomkit/loom/runner"
	"github.com/loomkit/loom/session/memsession"
	"github.com/loomkit/loom/tool"
	"github.com/loomkit/loom/tool/openapitool"
)

// calendarSpec is an API guarded by an oauth2 scheme with an
// authorizationCode flow; %s is the loopback server's URL.
const calendarSpec = `{
  "openapi": "3.0.3",
  "info": {"title": "calendar", "version": "1"},
  "servers": [{"url": "%[1]s/api"}],
  "components": {"securitySchemes": {"calendarAuth": {"type": "oauth2", "flows": {"authorizationCode": {
    "authorizationUrl": "%[1]s/authorize", "tokenUrl": "%[1]s/token", "scopes": {"calendar.read": "read"}}}}}},
  "security": [{"calendarAuth": ["calendar.read"]}],
  "paths": {"/events": {"get": {"operationId": "listEvents", "responses": {"200": {"description": "ok"}}}}}
}`

// calendarServer is the authorization server and the API: one code per
// sign-in, access tokens that the test can revoke.
type calendarServer struct {
	*httptest.Server
	mu      sync.Mutex
	access  map[string]bool
	grants  map[string]int
	n       int
	apiHits int
}

func newCalendarServer(t *testing.T) *calendarServer {
	s := &calendarServer{access: map[string]bool{}, grants: map[string]int{}}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /token", func(w http.ResponseWriter, r *http.Request) {
		s.mu.Lock()
		defer s.mu.Unlock()
		s.grants[r.PostFormValue("grant_type")]++
		if id, secret, _ := r.BasicAuth(); id != "cal-client" || secret != "cal-secret" || r.PostFormValue("code") != "good-code" {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusBadRequest)
			fmt.Fprint(w, `{"error":"invalid_grant"}`)
			return
		}
		s.n++
		tok := fmt.Sprintf("at-%d", s.n)
		s.access[tok] = true
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"access_token":%q,"token_type":"Bearer","expires_in":3600}`, tok)
	})
	mux.HandleFunc("GET /api/events", func(w http.ResponseWriter, r *http.Request) {
		s.mu.Lock()
		defer s.mu.Unlock()
		s.apiHits++
		if !s.access[strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer ")] {
			http.Error(w, "unauthorized", http.StatusUnauthorized)
			return
		}
		fmt.Fprint(w, `{"events":["standup"]}`)
	})
	s.Server = httptest.NewServer(mux)
	t.Cleanup(s.Close)
	return s
}

// calendarApp runs an agent with the calendar toolset, keeping tokens in
// creds (nil: none); it returns a run of one message and a sign-in in a
// session.
func calendarApp(t *testing.T, srv *calendarServer, creds *credential.Service) (run func(sid string, msg *genai.Content) []*event.Event, signIn func(sid string)) {
	ctx := context.Background()
	ts, err := openapitool.New(ctx, openapitool.Config{Name: "cal", Spec: []byte(fmt.Sprintf(calendarSpec, srv.URL)),
		OAuth2: map[string]openapitool.OAuth2Client{"calendarAuth": {ClientID: "cal-client", ClientSecret: "cal-secret", RedirectURL: "http://127.0.0.1/cb"}}})
	if err != nil {
		t.Fatal(err)
	}
	m := scripted.New("m", func(_ context.Context, req *model.Request) (scripted.Turn, error) {
		if frs := scripted.LastFunctionResponse(req); len(frs) > 0 {
			b, _ := json.Marshal(frs[0].Response)
			return scripted.Text(string(b)), nil
		}
		return scripted.Call("list_events", nil), nil
	})
	a, err := llmagent.New(llmagent.Config{Name: "clerk", Model: m, Toolsets: []tool.Toolset{ts}})
	if err != nil {
		t.Fatal(err)
	}
	r, err := runner.New(runner.Config{AppName: "cal", Agent: a, Sessions: memsession.NewService(), AutoCreateSession: true, Credentials: creds})
	if err != nil {
		t.Fatal(err)
	}
	run = func(sid string, msg *genai.Content) []*event.Event {
		t.Helper()
		evs, err := r.RunSync(ctx, "alice", sid, msg, nil)
		if err != nil {
			t.Fatal(err)
		}
		return evs
	}
	signIn = func(sid string) {
		t.Helper()
		evs := run(sid, genai.NewContentFromText("my events?", genai.RoleUser))
		calls := evs[len(evs)-1].FunctionCalls()
		if len(calls) != 1 || calls[0].Name != event.FunctionRequestCredential {
			t.Fatalf("want a credential request, got %+v", evs[len(evs)-1].Content)
		}
		cfg := event.CloneMap(calls[0].Args["authConfig"].(map[string]any))
		ex := cfg["exchangedAuthCredential"].(map[string]any)["oauth2"].(map[string]any)
		u, _ := url.Parse(ex["authUri"].(string))
		if !strings.HasPrefix(u.String(), srv.URL+"/authorize?") || u.Query().Get("scope") != "calendar.read" || cfg["credentialKey"] != "cal:calendarAuth" {
			t.Fatalf("authorization URL %s, credential key %v", u, cfg["credentialKey"])
		}
		ex["authResponseUri"] = "http://127.0.0.1/cb?code=good-code&state=" + url.QueryEscape(u.Query().Get("state"))
		evs = run(sid, &genai.Content{Role: genai.RoleUser, Parts: []*genai.Part{{FunctionResponse: &genai.FunctionResponse{
			ID: calls[0].ID, Name: event.FunctionRequestCredential, Response: cfg}}}})
		if got := evs[len(evs)-1].Text(); got != `{"events":["standup"]}` {
			t.Fatalf("after signing in: %q", got)
		}
	}
	return run, signIn
}

// TestT17OpenAPIOAuth2 runs an OpenAPI operation guarded by an oauth2
// authorizationCode scheme whose client the toolset holds: the first call
// asks the client with the flow's authorization URL, the answer is
// exchanged at the flow's token URL, the request carries the access
// token, and later sessions of the user use the kept token; a 401 forgets
// it, and the next call asks again (CONFORMANCE T17).
func TestT17OpenAPIOAuth2(t *testing.T) {
	ctx := context.Background()
	srv := newCalendarServer(t)
	creds, err := memcredential.NewService(credential.GenerateKey())
	if err != nil {
		t.Fatal(err)
	}
	run, signIn := calendarApp(t, srv, creds)
	signIn("s1")
	evs := run("s2", genai.NewContentFromText("again?", genai.RoleUser))
	srv.mu.Lock()
	exchanges := srv.grants["authorization_code"]
	srv.mu.Unlock()
	if got := evs[len(evs)-1].Text(); got != `{"events":["standup"]}` || exchanges != 1 {
		t.Fatalf("another session: %q after %d exchanges", got, exchanges)
	}
	key := credential.Key{AppName: "cal", UserID: "alice", Name: "cal:calendarAuth"}
	if _, err := creds.Get(ctx, key); err != nil {
		t.Fatalf("the token is not kept for the user: %v", err)
	}

	srv.mu.Lock()
	clear(srv.access) // revoked
	srv.mu.Unlock()
	evs = run("s3", genai.NewContentFromText("again?", genai.RoleUser))
	if got := evs[len(evs)-1].Text(); !strings.Contains(got, "401") {
		t.Fatalf("a revoked token: %q", got)
	}
	if _, err := creds.Get(ctx, key); !errors.Is(err, credential.ErrNotFound) {
		t.Fatalf("a token the API refused is still kept: %v", err)
	}
	signIn("s4")
}

// TestOAuth2ClientForAnotherScheme: Config.OAuth2 naming a scheme that is
// not an oauth2 authorizationCode scheme of the document is refused.
func TestOAuth2ClientForAnotherScheme(t *testing.T) {
	_, err := openapitool.New(context.Background(), openapitool.Config{Spec: []byte(fmt.Sprintf(calendarSpec, "http://127.0.0.1:1")),
		OAuth2: map[string]openapitool.OAuth2Client{"nope": {ClientID: "x"}}})
	if !errors.Is(err, openapitool.ErrInvalidConfig) {
		t.Fatalf("err = %v, want ErrInvalidConfig", err)
	}
}

// TestOAuth2WithoutCredentialService: a runtime that keeps no tokens
// (runner.Config.Credentials nil): the toolset keeps the token in its
// memory for the session, and another session asks again.
func TestOAuth2WithoutCredentialService(t *testing.T) {
	srv := newCalendarServer(t)
	run, signIn := calendarApp(t, srv, nil)
	signIn("s1")
	evs := run("s1", genai.NewContentFromText("again?", genai.RoleUser))
	if got := evs[len(evs)-1].Text(); got != `{"events":["standup"]}` {
		t.Fatalf("same session: %q", got)
	}
	signIn("s2")
}
