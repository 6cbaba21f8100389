package oauth_test

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
	_ "modernc.org/sqlite"

	"github.com/loomkit/loom/agent/llmagent"
	"github.com/loomkit/loom/credential"
	"github.com/loomkit/loom/credential/oauth"
	"github.com/loomkit/loom/credential/sqlcredential"
	"github.com/loomkit/loom/event"
	"github.com/loomkit/loom/internal/sqldb/sqldbtest"
	"github.com/loomkit/loom/model"
	"github.com/loomkit/loom/model/scripted"
	"github.com/loomkit/loom/runner"
	"github.com/loomkit/loom/server"
	"github.com/loomkit/loom/session"
	"github.com/loomkit/loom/session/sqlsession"
	"github.com/loomkit/loom/tool"
	"github.com/loomkit/loom/tool/functiontool"
)

const (
	clientID     = "loom-test-client"
	clientSecret = "client-secret-never-shown"
	redirectURL  = "http://127.0.0.1/callback"
)

// provider is a loopback OAuth2 authorization server and the API it
// guards: /token takes the authorization_code and refresh_token grants
// (counting them), /api/events answers a valid bearer token with its
// user's events.
type provider struct {
	srv *httptest.Server

	mu         sync.Mutex
	n          int
	codes      map[string]string // code → user
	refresh    map[string]string // refresh token → user
	access     map[string]string // access token → user
	expiresIn  int
	grants     map[string]int
	apiCalls   int
	badRefresh bool // refresh grants fail with invalid_grant
}

func newProvider(t *testing.T) *provider {
	p := &provider{codes: map[string]string{}, refresh: map[string]string{}, access: map[string]string{},
		grants: map[string]int{}, expiresIn: 3600}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /token", p.token)
	mux.HandleFunc("GET /api/events", p.events)
	p.srv = httptest.NewServer(mux)
	t.Cleanup(p.srv.Close)
	return p
}

func (p *provider) config() *oauth2.Config {
	return &oauth2.Config{
		ClientID: clientID, ClientSecret: clientSecret, RedirectURL: redirectURL,
		Scopes:   []string{"calendar.read"},
		Endpoint: oauth2.Endpoint{AuthURL: p.srv.URL + "/authorize", TokenURL: p.srv.URL + "/token", AuthStyle: oauth2.AuthStyleInHeader},
	}
}

// authorize is the user signing in at the authorization URL: it returns a
// code for user.
func (p *provider) authorize(user string) string {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.n++
	code := fmt.Sprintf("code-%d", p.n)
	p.codes[code] = user
	return code
}

func (p *provider) count(grant string) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.grants[grant]
}

func (p *provider) token(w http.ResponseWriter, r *http.Request) {
	p.mu.Lock()
	defer p.mu.Unlock()
	fail := func(code string) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusBadRequest)
		fmt.Fprintf(w, `{"error":%q,"error_description":"echo %s"}`, code, r.PostFormValue("code"))
	}
	if id, secret, ok := r.BasicAuth(); !ok || id != clientID || secret != clientSecret {
		fail("invalid_client")
		return
	}
	grant := r.PostFormValue("grant_type")
	p.grants[grant]++
	var user string
	newRefresh := false
	switch grant {
	case "authorization_code":
		u, ok := p.codes[r.PostFormValue("code")]
		if !ok || r.PostFormValue("redirect_uri") != redirectURL {
			fail("invalid_grant")
			return
		}
		delete(p.codes, r.PostFormValue("code")) // codes are single-use
		user, newRefresh = u, true
	case "refresh_token":
		u, ok := p.refresh[r.PostFormValue("refresh_token")]
		if !ok || p.badRefresh {
			fail("invalid_grant")
			return
		}
		user = u
	default:
		fail("unsupported_grant_type")
		return
	}
	p.n++
	resp := map[string]any{"access_token": fmt.Sprintf("at-%s-%d", user, p.n), "token_type": "Bearer", "expires_in": p.expiresIn}
	p.access[resp["access_token"].(string)] = user
	if newRefresh {
		rt := fmt.Sprintf("rt-%s-%d", user, p.n)
		p.refresh[rt] = user
		resp["refresh_token"] = rt
	}
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(resp)
}

func (p *provider) events(w http.ResponseWriter, r *http.Request) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.apiCalls++
	user, ok := p.access[strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer ")]
	if !ok {
		http.Error(w, "unauthorized", http.StatusUnauthorized)
		return
	}
	fmt.Fprintf(w, `{"events":["standup with %s"]}`, user)
}

// eventsTool lists the user's calendar events through the provider's API,
// signing in with OAuth2 first.
func eventsTool(t *testing.T, p *provider) tool.Tool {
	cfg := oauth.Config{Name: "calendar", OAuth2: p.config()}
	tl, err := functiontool.New(functiontool.Config{Name: "list_events", Description: "Lists the user's calendar events."},
		func(ctx context.Context, tc tool.Context, _ struct{}) (map[string]any, error) {
			tok, err := oauth.Token(ctx, tc, cfg)
			if tok == nil {
				return nil, err // asked the client (err nil), or the answer failed
			}
			req, _ := http.NewRequestWithContext(ctx, http.MethodGet, p.srv.URL+"/api/events", nil)
			tok.SetAuthHeader(req)
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				return nil, err
			}
			defer resp.Body.Close()
			var out map[string]any
			if resp.StatusCode != http.StatusOK {
				return nil, fmt.Errorf("calendar API: %s", resp.Status)
			}
			return out, json.NewDecoder(resp.Body).Decode(&out)
		})
	if err != nil {
		t.Fatal(err)
	}
	return tl
}

// calendarModel calls list_events for a user message and reports the
// tool's response after it.
func calendarModel() *scripted.Model {
	return scripted.New("m", func(_ context.Context, req *model.Request) (scripted.Turn, error) {
		if frs := scripted.LastFunctionResponse(req); len(frs) > 0 {
			b, _ := json.Marshal(frs[0].Response)
			return scripted.Text("calendar: " + string(b)), nil
		}
		return scripted.Call("list_events", nil), nil
	})
}

// app is an application whose sessions and credentials share one SQLite
// file.
type app struct {
	r    *runner.Runner
	p    *provider
	dsn  string
	svc  *credential.Service
	file string
}

func newApp(t *testing.T) *app {
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
	p := newProvider(t)
	ag, err := llmagent.New(llmagent.Config{Name: "assistant", Model: calendarModel(), Tools: []tool.Tool{eventsTool(t, p)}})
	if err != nil {
		t.Fatal(err)
	}
	r, err := runner.New(runner.Config{AppName: "cal", Agent: ag, Sessions: sessions, AutoCreateSession: true, Credentials: creds})
	if err != nil {
		t.Fatal(err)
	}
	return &app{r: r, p: p, dsn: dsn, svc: creds, file: strings.TrimPrefix(dsn, "sqlite://")}
}

func (a *app) run(t *testing.T, user, sid string, msg *genai.Content) []*event.Event {
	t.Helper()
	evs, err := a.r.RunSync(context.Background(), user, sid, msg, nil)
	if err != nil {
		t.Fatalf("run: %v", err)
	}
	return evs
}

func ask(text string) *genai.Content { return genai.NewContentFromText(text, genai.RoleUser) }

// credentialRequest returns the adk_request_credential call of the last
// event, failing the test if there is none.
func credentialRequest(t *testing.T, evs []*event.Event) *genai.FunctionCall {
	t.Helper()
	if len(evs) > 0 {
		last := evs[len(evs)-1]
		for _, fc := range last.FunctionCalls() {
			if fc.Name == event.FunctionRequestCredential && len(last.LongRunningToolIDs) > 0 {
				return fc
			}
		}
	}
	t.Fatalf("no credential request at the end of %d events", len(evs))
	return nil
}

// signIn plays the user's part: open the authorization URL of the request,
// sign in as user, and come back to the redirect URL; it returns the
// client's answer, ADK's auth config with authResponseUri filled in.
func signIn(t *testing.T, p *provider, req *genai.FunctionCall, user string) *genai.Content {
	t.Helper()
	cfg := req.Args["authConfig"].(map[string]any)
	ex := cfg["exchangedAuthCredential"].(map[string]any)["oauth2"].(map[string]any)
	u, err := url.Parse(ex["authUri"].(string))
	if err != nil {
		t.Fatal(err)
	}
	q := u.Query()
	if q.Get("client_id") != clientID || q.Get("redirect_uri") != redirectURL || q.Get("state") == "" || q.Get("state") != ex["state"] {
		t.Fatalf("authorization URL %s does not carry the client, the redirect URI and the request's state", u)
	}
	back := redirectURL + "?" + url.Values{"code": {p.authorize(user)}, "state": {q.Get("state")}}.Encode()
	return answer(req, back)
}

func answer(req *genai.FunctionCall, authResponseURI string) *genai.Content {
	cfg := event.CloneMap(req.Args["authConfig"].(map[string]any))
	ex := cfg["exchangedAuthCredential"].(map[string]any)["oauth2"].(map[string]any)
	ex["authResponseUri"] = authResponseURI
	return &genai.Content{Role: genai.RoleUser, Parts: []*genai.Part{{FunctionResponse: &genai.FunctionResponse{
		ID: req.ID, Name: event.FunctionRequestCredential, Response: cfg}}}}
}

func finalText(evs []*event.Event) string {
	if len(evs) == 0 {
		return ""
	}
	return evs[len(evs)-1].Text()
}

// rawBytes returns every byte of the database file and of its WAL: what
// anyone who can read the disk reads.
func (a *app) rawBytes(t *testing.T) []byte {
	t.Helper()
	var out []byte
	for _, f := range []string{a.file, a.file + "-wal"} {
		b, err := os.ReadFile(f)
		if err != nil && !errors.Is(err, fs.ErrNotExist) {
			t.Fatal(err)
		}
		out = append(out, b...)
	}
	return out
}

// TestT17SignInOnceThroughTheRunner: the tool's first call asks the client
// with an ADK auth config holding the authorization URL and a state; the
// client answers with the redirect URL; the runtime exchanges the code at
// the token URL once, the tool calls the API with the access token, and
// the user's later sessions get the kept token without asking. Neither
// the code, the tokens nor the client secret reach the session log or
// the database in clear (CONFORMANCE T17, T20).
func TestT17SignInOnceThroughTheRunner(t *testing.T) {
	a := newApp(t)
	req := credentialRequest(t, a.run(t, "alice", "s1", ask("what is on my calendar?")))
	cfg := req.Args["authConfig"].(map[string]any)
	if cfg["credentialKey"] != "calendar" || cfg["authScheme"].(map[string]any)["type"] != "oauth2" {
		t.Fatalf("auth config %v", cfg)
	}
	if a.p.count("authorization_code") != 0 {
		t.Fatal("token URL called before the user signed in")
	}
	evs := a.run(t, "alice", "s1", signIn(t, a.p, req, "alice"))
	if got := finalText(evs); got != `calendar: {"events":["standup with alice"]}` {
		t.Fatalf("final answer %q", got)
	}
	if n := a.p.count("authorization_code"); n != 1 {
		t.Fatalf("authorization_code grants: %d, want 1", n)
	}

	// Another session of the same user: no pause, no new exchange.
	evs = a.run(t, "alice", "s2", ask("and now?"))
	if got := finalText(evs); got != `calendar: {"events":["standup with alice"]}` {
		t.Fatalf("second session: final answer %q", got)
	}
	if n := a.p.count("authorization_code") + a.p.count("refresh_token"); n != 1 {
		t.Fatalf("token URL called %d times, want 1", n)
	}

	raw := a.rawBytes(t)
	if !bytes.Contains(raw, []byte("standup with alice")) {
		t.Fatal("the raw database does not even hold the events in clear: the check below would prove nothing")
	}
	a.p.mu.Lock()
	defer a.p.mu.Unlock()
	secrets := []string{clientSecret, "code-1"}
	for tok := range a.p.access {
		secrets = append(secrets, tok)
	}
	for tok := range a.p.refresh {
		secrets = append(secrets, tok)
	}
	for _, s := range secrets {
		if bytes.Contains(raw, []byte(s)) {
			t.Errorf("the database holds %q in clear", s)
		}
	}
	for _, sid := range []string{"s1", "s2"} {
		sess, err := a.r.Sessions().Get(context.Background(), session.Key{AppName: "cal", UserID: "alice", SessionID: sid}, nil)
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range sess.Events() {
			b, _ := json.Marshal(e)
			for _, s := range secrets {
				if bytes.Contains(b, []byte(s)) {
					t.Errorf("event %s holds %q", b, s)
				}
			}
		}
	}
}

// TestT18RefreshAfterExpiry: an expired token is refreshed with its refresh
// token without asking the client; when the refresh fails, the kept token
// is forgotten and the client is asked again (CONFORMANCE T18).
func TestT18RefreshAfterExpiry(t *testing.T) {
	a := newApp(t)
	a.p.expiresIn = 1 // expired at once (oauth2 treats tokens within 10 s of expiry as expired)
	req := credentialRequest(t, a.run(t, "alice", "s1", ask("calendar?")))
	a.run(t, "alice", "s1", signIn(t, a.p, req, "alice"))

	evs := a.run(t, "alice", "s2", ask("calendar again?"))
	if got := finalText(evs); got != `calendar: {"events":["standup with alice"]}` {
		t.Fatalf("after expiry: final answer %q", got)
	}
	if n := a.p.count("refresh_token"); n != 1 {
		t.Fatalf("refresh grants: %d, want 1", n)
	}
	// The refreshed token kept the refresh token the server did not resend.
	evs = a.run(t, "alice", "s3", ask("and again?"))
	if got := finalText(evs); got != `calendar: {"events":["standup with alice"]}` || a.p.count("refresh_token") != 2 {
		t.Fatalf("second refresh: %q after %d refresh grants", got, a.p.count("refresh_token"))
	}

	a.p.mu.Lock()
	a.p.badRefresh = true
	a.p.mu.Unlock()
	req = credentialRequest(t, a.run(t, "alice", "s4", ask("calendar?")))
	if _, err := a.svc.Get(context.Background(), credential.Key{AppName: "cal", UserID: "alice", Name: "calendar"}); !errors.Is(err, credential.ErrNotFound) {
		t.Fatalf("the token whose refresh failed is still kept: %v", err)
	}
	a.p.mu.Lock()
	a.p.badRefresh, a.p.expiresIn = false, 3600
	a.p.mu.Unlock()
	evs = a.run(t, "alice", "s4", signIn(t, a.p, req, "alice"))
	if got := finalText(evs); got != `calendar: {"events":["standup with alice"]}` {
		t.Fatalf("after signing in again: %q", got)
	}
}

// TestT19WrongStateIsRefused: an answer whose state is not the request's,
// or that carries none, is refused before anything is stored, and the
// request stays pending; the right answer then works (CONFORMANCE T19).
func TestT19WrongStateIsRefused(t *testing.T) {
	a := newApp(t)
	req := credentialRequest(t, a.run(t, "alice", "s1", ask("calendar?")))
	sess := func() int {
		s, err := a.r.Sessions().Get(context.Background(), session.Key{AppName: "cal", UserID: "alice", SessionID: "s1"}, nil)
		if err != nil {
			t.Fatal(err)
		}
		return s.Len()
	}
	before := sess()
	forged := redirectURL + "?" + url.Values{"code": {a.p.authorize("mallory")}, "state": {"forged"}}.Encode()
	noState := redirectURL + "?" + url.Values{"code": {a.p.authorize("mallory")}}.Encode()
	for _, uri := range []string{forged, noState} {
		_, err := a.r.RunSync(context.Background(), "alice", "s1", answer(req, uri), nil)
		if !errors.Is(err, runner.ErrInvalid) || !errors.Is(err, oauth.ErrState) {
			t.Fatalf("answer %s: error %v, want runner.ErrInvalid and oauth.ErrState", uri, err)
		}
	}
	bare := &genai.Content{Role: genai.RoleUser, Parts: []*genai.Part{{FunctionResponse: &genai.FunctionResponse{
		ID: req.ID, Name: event.FunctionRequestCredential, Response: map[string]any{"accessToken": "self-made"}}}}}
	if _, err := a.r.RunSync(context.Background(), "alice", "s1", bare, nil); !errors.Is(err, oauth.ErrState) {
		t.Fatalf("an answer without an authorization response: %v, want oauth.ErrState", err)
	}
	if after := sess(); after != before || a.p.count("authorization_code") != 0 {
		t.Fatalf("a refused answer stored events (%d → %d) or reached the token URL", before, after)
	}
	evs := a.run(t, "alice", "s1", signIn(t, a.p, req, "alice"))
	if got := finalText(evs); got != `calendar: {"events":["standup with alice"]}` {
		t.Fatalf("the right answer after refused ones: %q", got)
	}
}

// TestT19BadCode: a code the token URL refuses answers the call with an
// error the client and the model read (the token server's words, not its
// body); the session goes on, nothing kept is lost, and the next call asks
// again (CONFORMANCE T19).
func TestT19BadCode(t *testing.T) {
	a := newApp(t)
	req := credentialRequest(t, a.run(t, "alice", "s1", ask("calendar?")))
	state := req.Args["authConfig"].(map[string]any)["exchangedAuthCredential"].(map[string]any)["oauth2"].(map[string]any)["state"].(string)
	evs := a.run(t, "alice", "s1", answer(req, redirectURL+"?code=not-a-code&state="+url.QueryEscape(state)))
	var errText string
	for _, e := range evs {
		for _, fr := range e.FunctionResponses() {
			if fr.Name == "list_events" {
				errText, _ = fr.Response["error"].(string)
			}
		}
	}
	if !strings.Contains(errText, "invalid_grant") || !strings.Contains(errText, "token URL") || strings.Contains(errText, "not-a-code") {
		t.Fatalf("function response error %q: want the token URL's refusal, without the code", errText)
	}
	if !strings.HasPrefix(finalText(evs), "calendar: ") {
		t.Fatalf("the model did not go on: %q", finalText(evs))
	}
	req = credentialRequest(t, a.run(t, "alice", "s1", ask("try again")))
	evs = a.run(t, "alice", "s1", signIn(t, a.p, req, "alice"))
	if got := finalText(evs); got != `calendar: {"events":["standup with alice"]}` {
		t.Fatalf("signing in after a bad code: %q", got)
	}
}

// TestT20PerUser: one user's sign-in serves that user only: another user
// is asked, signs in with their own account and gets their own events;
// a user's answer cannot answer another user's request (CONFORMANCE T20).
func TestT20PerUser(t *testing.T) {
	a := newApp(t)
	req := credentialRequest(t, a.run(t, "alice", "s1", ask("calendar?")))
	a.run(t, "alice", "s1", signIn(t, a.p, req, "alice"))

	bobReq := credentialRequest(t, a.run(t, "bob", "s1", ask("calendar?")))
	// Carol's answer to her own request, sent into bob's session under
	// bob's call id: the state is not bob's request's.
	carolReq := credentialRequest(t, a.run(t, "carol", "s1", ask("calendar?")))
	stolen := signIn(t, a.p, carolReq, "carol")
	stolen.Parts[0].FunctionResponse.ID = bobReq.ID
	if _, err := a.r.RunSync(context.Background(), "bob", "s1", stolen, nil); !errors.Is(err, oauth.ErrState) {
		t.Fatalf("carol's answer in bob's session: %v, want oauth.ErrState", err)
	}
	evs := a.run(t, "bob", "s1", signIn(t, a.p, bobReq, "bob"))
	if got := finalText(evs); got != `calendar: {"events":["standup with bob"]}` {
		t.Fatalf("bob: %q", got)
	}
	evs = a.run(t, "alice", "s2", ask("mine?"))
	if got := finalText(evs); got != `calendar: {"events":["standup with alice"]}` {
		t.Fatalf("alice after bob signed in: %q", got)
	}
}

// TestT17SignInThroughTheHTTPServer plays ADK's client over the API server:
// /run returns the credential request, the answer goes back through /run
// as ADK's auth config with the redirect URL, and the tool's result comes
// back; an answer with another state gets a 400 and changes nothing
// (CONFORMANCE T17, T19).
func TestT17SignInThroughTheHTTPServer(t *testing.T) {
	a := newApp(t)
	srv, err := server.New(server.Config{Apps: []*runner.Runner{a.r}})
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(srv)
	defer hs.Close()
	defer srv.Close()
	post := func(path string, body any) (int, []byte) {
		t.Helper()
		b, _ := json.Marshal(body)
		resp, err := http.Post(hs.URL+path, "application/json", bytes.NewReader(b))
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var out bytes.Buffer
		out.ReadFrom(resp.Body)
		return resp.StatusCode, out.Bytes()
	}
	if code, body := post("/apps/cal/users/alice/sessions/s1", map[string]any{}); code != http.StatusOK {
		t.Fatalf("create session: %d %s", code, body)
	}
	run := func(msg *genai.Content) (int, []*event.Event) {
		t.Helper()
		code, body := post("/run", map[string]any{"appName": "cal", "userId": "alice", "sessionId": "s1", "newMessage": msg})
		if code != http.StatusOK {
			return code, nil
		}
		var evs []*event.Event
		if err := json.Unmarshal(body, &evs); err != nil {
			t.Fatalf("decode %s: %v", body, err)
		}
		return code, evs
	}
	_, evs := run(ask("what is on my calendar?"))
	req := credentialRequest(t, evs)
	if strings.Contains(fmt.Sprint(req.Args), clientSecret) {
		t.Fatal("the request the client sees holds the client secret")
	}
	// A snake_case answer, as ADK's Python client writes it with
	// model_dump(), with another state: refused.
	forged := map[string]any{"exchanged_auth_credential": map[string]any{"auth_type": "oauth2", "oauth2": map[string]any{
		"auth_response_uri": redirectURL + "?code=" + a.p.authorize("alice") + "&state=other"}}}
	bad := &genai.Content{Role: genai.RoleUser, Parts: []*genai.Part{{FunctionResponse: &genai.FunctionResponse{
		ID: req.ID, Name: event.FunctionRequestCredential, Response: forged}}}}
	if code, body := post("/run", map[string]any{"appName": "cal", "userId": "alice", "sessionId": "s1", "newMessage": bad}); code != http.StatusBadRequest || !bytes.Contains(body, []byte("state")) {
		t.Fatalf("forged state: status %d %s, want 400 about the state", code, body)
	}
	code, evs := run(signIn(t, a.p, req, "alice"))
	if code != http.StatusOK || finalText(evs) != `calendar: {"events":["standup with alice"]}` {
		t.Fatalf("answer: status %d, final %q", code, finalText(evs))
	}
	if n := a.p.count("authorization_code"); n != 1 {
		t.Fatalf("authorization_code grants: %d, want 1", n)
	}
}

// TestAnswerLostInARestartAsksAgain: a call that runs again after a
// restart gets no answer (answers live in memory only); instead of
// failing, it asks the client again.
func TestAnswerLostInARestartAsksAgain(t *testing.T) {
	p := newProvider(t)
	cfg := oauth.Config{Name: "calendar", OAuth2: p.config()}
	tc := &fakeContext{credential: map[string]any{}}
	tok, err := oauth.Token(context.Background(), tc, cfg)
	if tok != nil || err != nil || tc.requested == nil {
		t.Fatalf("Token = %v, %v; asked %v", tok, err, tc.requested != nil)
	}
	if oauth.RequestState(tc.requested) == "" {
		t.Fatalf("the request names no state: %v", tc.requested)
	}
}

// fakeContext is a tool context without a runtime: no credential
// service, the given answer.
type fakeContext struct {
	tool.Context
	credential map[string]any
	requested  map[string]any
}

func (c *fakeContext) AppName() string                             { return "app" }
func (c *fakeContext) UserID() string                              { return "alice" }
func (c *fakeContext) Credential() map[string]any                  { return c.credential }
func (c *fakeContext) RequestCredential(authConfig map[string]any) { c.requested = authConfig }

// TestParseAnswer reads the authorization responses ADK's clients send:
// camelCase or snake_case, the redirect URL's query or fragment, or a bare
// code with its state; the state is read from the URL, never from the
// request's copy beside it.
func TestParseAnswer(t *testing.T) {
	wrap := func(o map[string]any) map[string]any {
		return map[string]any{"exchangedAuthCredential": map[string]any{"oauth2": o}}
	}
	for _, c := range []struct {
		name   string
		answer map[string]any
		want   oauth.Answer
		ok     bool
	}{
		{"query", wrap(map[string]any{"authResponseUri": "https://x/cb?code=c1&state=s1", "state": "issued"}), oauth.Answer{Code: "c1", State: "s1"}, true},
		{"no state in the URL", wrap(map[string]any{"authResponseUri": "https://x/cb?code=c1", "state": "issued"}), oauth.Answer{Code: "c1"}, true},
		{"fragment", wrap(map[string]any{"authResponseUri": "https://x/cb#code=c2&state=s2"}), oauth.Answer{Code: "c2", State: "s2"}, true},
		{"denied", wrap(map[string]any{"authResponseUri": "https://x/cb?error=access_denied&state=s3"}), oauth.Answer{Error: "access_denied", State: "s3"}, true},
		{"snake_case", map[string]any{"exchanged_auth_credential": map[string]any{"oauth2": map[string]any{
			"auth_response_uri": "https://x/cb?code=c4&state=s4", "redirect_uri": "https://x/cb"}}}, oauth.Answer{Code: "c4", State: "s4", RedirectURI: "https://x/cb"}, true},
		{"code and state", wrap(map[string]any{"authCode": "c5", "state": "s5"}), oauth.Answer{Code: "c5", State: "s5"}, true},
		{"nothing", wrap(map[string]any{"accessToken": "t"}), oauth.Answer{}, false},
		{"not an auth config", map[string]any{"apiKey": "k"}, oauth.Answer{}, false},
	} {
		got, ok := oauth.ParseAnswer(c.answer)
		if got != c.want || ok != c.ok {
			t.Errorf("%s: ParseAnswer = %+v, %v; want %+v, %v", c.name, got, ok, c.want, c.ok)
		}
	}
}

// TestDeniedAuthorization: a user who refused at the authorization server
// gets an error naming it, and the token URL is not called.
func TestDeniedAuthorization(t *testing.T) {
	p := newProvider(t)
	answer := map[string]any{"exchangedAuthCredential": map[string]any{"oauth2": map[string]any{
		"authResponseUri": redirectURL + "?error=access_denied&state=s"}}}
	tok, err := oauth.Token(context.Background(), &fakeContext{credential: answer}, oauth.Config{Name: "calendar", OAuth2: p.config()})
	if tok != nil || err == nil || !strings.Contains(err.Error(), "access_denied") {
		t.Fatalf("Token = %v, %v; want an error naming access_denied", tok, err)
	}
	if n := p.count("authorization_code"); n != 0 {
		t.Fatalf("token URL called %d times", n)
	}
}
