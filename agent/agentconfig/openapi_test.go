package agentconfig_test

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

	"github.com/loomkit/loom/agent/agentconfig"
	"github.com/loomkit/loom/credential"
	"github.com/loomkit/loom/credential/memcredential"
	"github.com/loomkit/loom/event"
	"github.com/loomkit/loom/model"
	"github.com/loomkit/loom/model/scripted"
	"github.com/loomkit/loom/runner"
	"github.com/loomkit/loom/session/memsession"
)

// calendarAPI is an OAuth2 provider and the API it guards: /token trades
// "good-code" for an access token when the client authenticates with its
// secret; /api/events answers a bearer token it issued.
type calendarAPI struct {
	*httptest.Server
	mu     sync.Mutex
	tokens map[string]bool
	n      int
}

func newCalendarAPI(t *testing.T, secret string) *calendarAPI {
	s := &calendarAPI{tokens: map[string]bool{}}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /token", func(w http.ResponseWriter, r *http.Request) {
		s.mu.Lock()
		defer s.mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		id, sec, _ := r.BasicAuth()
		if id == "" {
			id, sec = r.PostFormValue("client_id"), r.PostFormValue("client_secret")
		}
		if id != "yaml-client" || sec != secret || r.PostFormValue("code") != "good-code" {
			w.WriteHeader(http.StatusBadRequest)
			fmt.Fprint(w, `{"error":"invalid_client"}`)
			return
		}
		s.n++
		tok := fmt.Sprintf("at-%d", s.n)
		s.tokens[tok] = true
		fmt.Fprintf(w, `{"access_token":%q,"token_type":"Bearer","expires_in":3600}`, tok)
	})
	mux.HandleFunc("GET /api/events", func(w http.ResponseWriter, r *http.Request) {
		s.mu.Lock()
		defer s.mu.Unlock()
		if !s.tokens[strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer ")] {
			http.Error(w, "unauthorized", http.StatusUnauthorized)
			return
		}
		fmt.Fprint(w, `{"events":["standup"]}`)
	})
	s.Server = httptest.NewServer(mux)
	t.Cleanup(s.Close)
	return s
}

// openAPIConfig is a root_agent.yaml with an OpenAPIToolset whose
// document states no security: the auth_scheme of the file guards every
// operation, and auth_credential is the OAuth2 client, its secret in the
// environment. %[1]s is the API's URL; %[2]s more oauth2 keys.
const openAPIConfig = `name: clerk
model: m
instruction: Use the calendar.
tools:
  - name: OpenAPIToolset
    args:
      spec_str: |
        openapi: 3.0.3
        info: {title: calendar, version: "1"}
        servers: [{url: "%[1]s/api"}]
        paths:
          /events:
            get:
              operationId: list_events
              responses: {"200": {description: ok}}
      spec_str_type: yaml
      tool_name_prefix: cal
      auth_scheme:
        type: oauth2
        flows:
          authorizationCode:
            authorizationUrl: %[1]s/authorize
            tokenUrl: %[1]s/token
            scopes: {calendar.read: read your calendar}
      auth_credential:
        auth_type: oauth2
        oauth2:
          client_id: yaml-client
          redirect_uri: http://127.0.0.1/callback
%[2]s`

// TestT23OpenAPIToolsetOAuth2FromYAML loads an OpenAPIToolset whose
// auth_scheme and auth_credential are in ADK's shape, the client secret
// in an environment variable, and signs a user in through the runner:
// the request shows the scheme's authorization URL and the client id,
// never the secret; the answer is exchanged with the secret from the
// environment, and the API gets the token.
//
// (CONFORMANCE T23)
func TestT23OpenAPIToolsetOAuth2FromYAML(t *testing.T) {
	t.Setenv("CALENDAR_CLIENT_SECRET", "secret-from-env")
	api := newCalendarAPI(t, "secret-from-env")
	dir := t.TempDir()
	write(t, dir, "root_agent.yaml", fmt.Sprintf(openAPIConfig, api.URL, "          client_secret_env: CALENDAR_CLIENT_SECRET\n"))
	m := newModels(func(_ context.Context, req *model.Request) (scripted.Turn, error) {
		if frs := scripted.LastFunctionResponse(req); len(frs) > 0 {
			b, _ := json.Marshal(frs[0].Response)
			return scripted.Text(string(b)), nil
		}
		return scripted.Call("cal_list_events", nil), nil
	})
	app, err := agentconfig.Load(dir, &agentconfig.Options{Model: m.open})
	if err != nil {
		t.Fatal(err)
	}
	defer app.Close()
	creds, err := memcredential.NewService(credential.GenerateKey())
	if err != nil {
		t.Fatal(err)
	}
	r, err := runner.New(runner.Config{AppName: "cal", Agent: app.Root, Sessions: memsession.NewService(), AutoCreateSession: true, Credentials: creds})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	evs, err := r.RunSync(ctx, "alice", "s1", genai.NewContentFromText("my events?", genai.RoleUser), nil)
	if err != nil {
		t.Fatal(err)
	}
	calls := evs[len(evs)-1].FunctionCalls()
	if len(calls) != 1 || calls[0].Name != event.FunctionRequestCredential {
		t.Fatalf("want a credential request, got %+v", evs[len(evs)-1].Content)
	}
	b, _ := json.Marshal(calls[0].Args)
	if strings.Contains(string(b), "secret-from-env") {
		t.Fatalf("the request shows the client secret: %s", b)
	}
	cfg := event.CloneMap(calls[0].Args["authConfig"].(map[string]any))
	ex := cfg["exchangedAuthCredential"].(map[string]any)["oauth2"].(map[string]any)
	u, err := url.Parse(ex["authUri"].(string))
	if err != nil || !strings.HasPrefix(u.String(), api.URL+"/authorize?") || u.Query().Get("client_id") != "yaml-client" ||
		u.Query().Get("scope") != "calendar.read" || u.Query().Get("redirect_uri") != "http://127.0.0.1/callback" {
		t.Fatalf("authorization URL %v (%v)", u, err)
	}
	ex["authResponseUri"] = "http://127.0.0.1/callback?code=good-code&state=" + url.QueryEscape(u.Query().Get("state"))
	evs, err = r.RunSync(ctx, "alice", "s1", &genai.Content{Role: genai.RoleUser, Parts: []*genai.Part{{FunctionResponse: &genai.FunctionResponse{
		ID: calls[0].ID, Name: event.FunctionRequestCredential, Response: cfg}}}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := evs[len(evs)-1].Text(); got != `{"events":["standup"]}` {
		t.Fatalf("after signing in: %q", got)
	}
	// The kept token serves the user's next session.
	evs, err = r.RunSync(ctx, "alice", "s2", genai.NewContentFromText("again?", genai.RoleUser), nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := evs[len(evs)-1].Text(); got != `{"events":["standup"]}` {
		t.Fatalf("another session: %q", got)
	}
}

// TestT23OpenAPIToolsetAuthErrors: a file whose OAuth2 client cannot be
// built is refused at the line at fault, before anything runs.
//
// (CONFORMANCE T23)
func TestT23OpenAPIToolsetAuthErrors(t *testing.T) {
	t.Setenv("EMPTY_SECRET", "")
	const api = "http://127.0.0.1:1"
	base := fmt.Sprintf(openAPIConfig, api, "%s")
	for _, c := range []struct {
		name, file, field, want string
		line                    int
	}{
		{"unset variable", fmt.Sprintf(base, "          client_secret_env: LOOM_TEST_NO_SUCH_VARIABLE\n"),
			"tools[0].args.auth_credential.oauth2.client_secret_env", "LOOM_TEST_NO_SUCH_VARIABLE, which is not set", 30},
		{"empty variable", fmt.Sprintf(base, "          client_secret_env: EMPTY_SECRET\n"),
			"tools[0].args.auth_credential.oauth2.client_secret_env", "EMPTY_SECRET, which is not set", 30},
		{"secret given twice", fmt.Sprintf(base, "          client_secret: literal\n          client_secret_env: EMPTY_SECRET\n"),
			"tools[0].args.auth_credential.oauth2.client_secret_env", "give the secret one way", 31},
		{"unknown oauth2 key", fmt.Sprintf(base, "          client_password: x\n"),
			"tools[0].args.auth_credential.oauth2.client_password", "not a known key", 30},
		{"another credential type", strings.Replace(fmt.Sprintf(base, ""), "auth_type: oauth2", "auth_type: apiKey", 1),
			"tools[0].args.auth_credential.auth_type", "want one of", 26},
		{"no authorization code flow", strings.Replace(fmt.Sprintf(base, ""), "authorizationCode:", "clientCredentials:", 1),
			"tools[0].args.auth_scheme.flows", "no authorizationCode flow", 21},
		{"no client id", strings.Replace(fmt.Sprintf(base, ""), "client_id: yaml-client", "client_secret: s", 1),
			"tools[0].args.auth_credential.oauth2", "client_id", 28},
		{"credential without scheme", withoutScheme(fmt.Sprintf(base, "")),
			"tools[0].args.auth_credential", "needs auth_scheme", 19},
		{"two documents", strings.Replace(fmt.Sprintf(base, ""), "spec_str_type: yaml", "spec_path: api.yaml", 1),
			"tools[0].args", "exactly one of spec_dict, spec_str and spec_path", 0},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			write(t, dir, "root_agent.yaml", c.file)
			write(t, dir, "api.yaml", "openapi: 3.0.3\n")
			_, err := agentconfig.Load(dir, &agentconfig.Options{Model: newModels(nil).open})
			var ce *agentconfig.Error
			if !errors.As(err, &ce) {
				t.Fatalf("err = %v, want an *agentconfig.Error", err)
			}
			if ce.Field != c.field || !strings.Contains(err.Error(), c.want) || (c.line != 0 && ce.Line != c.line) {
				t.Errorf("error at line %d field %q: %v; want line %d field %q saying %q", ce.Line, ce.Field, err, c.line, c.field, c.want)
			}
		})
	}
}

// withoutScheme drops the auth_scheme block of a file.
func withoutScheme(file string) string {
	i, j := strings.Index(file, "      auth_scheme:"), strings.Index(file, "      auth_credential:")
	return file[:i] + file[j:]
}
