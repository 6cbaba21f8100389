package oauth_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"strings"

	"golang.org/x/oauth2"
	"google.golang.org/genai"

	"github.com/loomkit/loom/agent/llmagent"
	"github.com/loomkit/loom/credential"
	"github.com/loomkit/loom/credential/memcredential"
	"github.com/loomkit/loom/credential/oauth"
	"github.com/loomkit/loom/runner"
	"github.com/loomkit/loom/session/memsession"
	"github.com/loomkit/loom/tool"
	"github.com/loomkit/loom/tool/functiontool"
)

// exampleProvider is a loopback authorization server with one user, and
// the calendar API its tokens open.
func exampleProvider() (authURL, tokenURL, apiURL string, stop func()) {
	mux := http.NewServeMux()
	mux.HandleFunc("POST /token", func(w http.ResponseWriter, r *http.Request) {
		if r.PostFormValue("code") != "the-code" {
			w.WriteHeader(http.StatusBadRequest)
			fmt.Fprint(w, `{"error":"invalid_grant"}`)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprint(w, `{"access_token":"at-1","refresh_token":"rt-1","token_type":"Bearer","expires_in":3600}`)
	})
	mux.HandleFunc("GET /events", func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Bearer at-1" {
			http.Error(w, "unauthorized", http.StatusUnauthorized)
			return
		}
		fmt.Fprint(w, `{"events":["standup"]}`)
	})
	s := httptest.NewServer(mux)
	return s.URL + "/authorize", s.URL + "/token", s.URL + "/events", s.Close
}

// fetchEvents calls the calendar API with an access token.
func fetchEvents(ctx context.Context, apiURL, accessToken string) (map[string]any, error) {
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, apiURL, nil)
	req.Header.Set("Authorization", "Bearer "+accessToken)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	var out map[string]any
	return out, json.NewDecoder(resp.Body).Decode(&out)
}

// A tool that signs its user in with OAuth2: the first call asks the
// client, the answer's code is exchanged and the tokens kept for the user,
// and later calls get them without asking.
func Example() {
	ctx := context.Background()
	authURL, tokenURL, apiURL, stop := exampleProvider()
	defer stop()

	calendar := oauth.Config{Name: "calendar", OAuth2: &oauth2.Config{
		ClientID:     "my-client",
		ClientSecret: os.Getenv("CALENDAR_CLIENT_SECRET"),
		Endpoint:     oauth2.Endpoint{AuthURL: authURL, TokenURL: tokenURL},
		RedirectURL:  "https://app.example.com/oauth/callback",
		Scopes:       []string{"calendar.read"},
	}}
	listEvents, err := functiontool.New(functiontool.Config{Name: "list_events", Description: "Lists the user's events."},
		func(ctx context.Context, tc tool.Context, _ struct{}) (map[string]any, error) {
			tok, err := oauth.Token(ctx, tc, calendar)
			if tok == nil {
				return nil, err // the client was asked (err is nil), or the sign-in failed
			}
			return fetchEvents(ctx, apiURL, tok.AccessToken)
		})
	if err != nil {
		log.Fatal(err)
	}
	key, err := credential.ParseKey(os.Getenv("LOOM_CREDENTIAL_KEY"))
	if err != nil {
		key = credential.GenerateKey() // tokens last as long as the process
	}
	creds, err := memcredential.NewService(key) // or sqlcredential.NewService(ctx, dsn, key)
	if err != nil {
		log.Fatal(err)
	}
	assistant, _ := llmagent.New(llmagent.Config{Name: "assistant", Model: calendarModel(), Tools: []tool.Tool{listEvents}})
	r, err := runner.New(runner.Config{AppName: "cal", Agent: assistant, Sessions: memsession.NewService(),
		AutoCreateSession: true, Credentials: creds})
	if err != nil {
		log.Fatal(err)
	}

	evs, _ := r.RunSync(ctx, "alice", "s1", genai.NewContentFromText("what is on my calendar?", genai.RoleUser), nil)
	request := evs[len(evs)-1].FunctionCalls()[0] // adk_request_credential
	authConfig := request.Args["authConfig"].(map[string]any)
	exchanged := authConfig["exchangedAuthCredential"].(map[string]any)["oauth2"].(map[string]any)
	authURI, _ := url.Parse(exchanged["authUri"].(string))
	fmt.Println(request.Name, strings.HasPrefix(authURI.String(), authURL), authURI.Query().Get("state") == exchanged["state"])

	// The client sends the user to authUri; the authorization server sends
	// them back to the redirect URL with a code and the state, and the
	// client answers the request with that URL in the auth config.
	state := authURI.Query().Get("state")
	exchanged["authResponseUri"] = "https://app.example.com/oauth/callback?code=the-code&state=" + state
	answer := &genai.Content{Role: genai.RoleUser, Parts: []*genai.Part{{FunctionResponse: &genai.FunctionResponse{
		ID: request.ID, Name: "adk_request_credential", Response: authConfig,
	}}}}
	evs, err = r.RunSync(ctx, "alice", "s1", answer, nil)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(evs[len(evs)-1].Text())

	// Another session of alice's: the kept token, no question.
	evs, _ = r.RunSync(ctx, "alice", "s2", genai.NewContentFromText("and tomorrow?", genai.RoleUser), nil)
	fmt.Println(evs[len(evs)-1].Text(), len(evs[len(evs)-1].FunctionCalls()) == 0)
	// Output:
	// adk_request_credential true true
	// calendar: {"events":["standup"]}
	// calendar: {"events":["standup"]} true
}
