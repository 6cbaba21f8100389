package openapitool_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"sync"
	"testing"

	"google.golang.org/genai"

	"github.com/loomkit/loom/agent/llmagent"
	"github.com/loomkit/loom/event"
	"github.com/loomkit/loom/model/scripted"
	"github.com/loomkit/loom/runner"
	"github.com/loomkit/loom/session"
	"github.com/loomkit/loom/session/memsession"
	"github.com/loomkit/loom/tool"
	"github.com/loomkit/loom/tool/openapitool"
)

var allSecrets = []string{headerKey, queryKey, cookieKey, bearerTok}

// newToolset loads petSpec against the test server.
func newToolset(t *testing.T, srv *petServer, cfg openapitool.Config) *openapitool.Toolset {
	t.Helper()
	cfg.Spec = []byte(petSpec)
	if cfg.BaseURL == "" {
		cfg.BaseURL = srv.URL + "/v1"
	}
	ts, err := openapitool.New(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	return ts
}

// agentRun is an LLM agent with a toolset, run through a runner over an
// in-memory session.
type agentRun struct {
	r   *runner.Runner
	svc *session.Service
	m   *scripted.Model
}

func newAgentRun(t *testing.T, ts tool.Toolset, turns ...scripted.Turn) *agentRun {
	t.Helper()
	m := scripted.NewSequence("m", turns...)
	a, err := llmagent.New(llmagent.Config{Name: "clerk", Model: m, Toolsets: []tool.Toolset{ts}})
	if err != nil {
		t.Fatal(err)
	}
	svc := memsession.NewService()
	r, err := runner.New(runner.Config{AppName: "shop", Agent: a, Sessions: svc, AutoCreateSession: true})
	if err != nil {
		t.Fatal(err)
	}
	return &agentRun{r: r, svc: svc, m: m}
}

func (a *agentRun) send(t *testing.T, sid string, msg *genai.Content) []*event.Event {
	t.Helper()
	evs, err := a.r.RunSync(context.Background(), "ann", sid, msg, nil)
	if err != nil {
		t.Fatal(err)
	}
	return evs
}

// storedJSON returns the session's stored events as JSON.
func (a *agentRun) storedJSON(t *testing.T, sid string) string {
	t.Helper()
	s, err := a.svc.Get(context.Background(), session.Key{AppName: "shop", UserID: "ann", SessionID: sid}, nil)
	if err != nil {
		t.Fatal(err)
	}
	b, err := json.Marshal(s.Events())
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// functionResponses returns the function responses the model received, in
// order.
func (a *agentRun) functionResponses() []map[string]any {
	var out []map[string]any
	for _, req := range a.m.Requests() {
		for _, fr := range scripted.LastFunctionResponse(req) {
			out = append(out, fr.Response)
		}
	}
	return out
}

// jsonEqual compares two values by their JSON form.
func jsonEqual(t *testing.T, got, want any) bool {
	t.Helper()
	var g, w any
	gb, _ := json.Marshal(got)
	wb, _ := json.Marshal(want)
	if err := json.Unmarshal(gb, &g); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(wb, &w); err != nil {
		t.Fatal(err)
	}
	return reflect.DeepEqual(g, w)
}

// TestAgentCallsOperations runs an LLM agent on the scripted model that
// calls eight operations of the test API through a runner, and checks the
// exact requests the API received and the exact function responses the
// model got, errors included.
//
// (CONFORMANCE O1)
func TestAgentCallsOperations(t *testing.T) {
	srv := newPetServer(t)
	ts := newToolset(t, srv, openapitool.Config{Credentials: map[string]openapitool.Credential{
		"apiKeyHeader": {APIKey: headerKey},
		"apiKeyQuery":  {APIKey: queryKey},
		"apiKeyCookie": {APIKey: cookieKey},
		"bearerAuth":   {Token: bearerTok},
	}})
	a := newAgentRun(t, ts,
		scripted.Call("list_pets", map[string]any{"limit": 2, "tags": []any{"dog", "cat", "fish"}, "x_request_id": "r-1"}),
		scripted.Call("create_pet", map[string]any{"name": "Nemo", "tag": "fish", "status": "available",
			"category": map[string]any{"name": "fish", "parent": map[string]any{"name": "animals"}}}),
		scripted.Call("get_pet_by_id", map[string]any{"pet_id": 42, "session": "visit-7"}),
		scripted.Call("update_pet_owner", map[string]any{"pet_id": 1, "name": "Ann", "email": "ann@example.com",
			"address": map[string]any{"street": "1 Main St", "city": "Oslo"}}),
		scripted.Call("stores_store_id_inventory_get", map[string]any{"store_id": "s 1"}),
		scripted.Call("delete_pet", map[string]any{"pet_id": 1}),
		scripted.Call("health", nil),
		scripted.Call("run_maintenance", map[string]any{}),
		scripted.Text("All done."),
	)
	evs := a.send(t, "s1", genai.NewContentFromText("tidy up the store", genai.RoleUser))
	if last := evs[len(evs)-1]; last.Text() != "All done." {
		t.Fatalf("final text %q", last.Text())
	}

	wantReqs := []request{
		{Method: "GET", Path: "/v1/pets", Query: "limit=2&tags=dog&tags=cat&tags=fish", APIKey: headerKey, RequestID: "r-1"},
		{Method: "POST", Path: "/v1/pets", Auth: "Bearer " + bearerTok, ContentType: "application/json",
			Body: `{"category":{"name":"fish","parent":{"name":"animals"}},"name":"Nemo","status":"available","tag":"fish"}`},
		{Method: "GET", Path: "/v1/pets/42", APIKey: headerKey, Cookie: "session=visit-7"},
		{Method: "PUT", Path: "/v1/pets/1/owner", Cookie: "store_key=" + cookieKey, ContentType: "application/json",
			Body: `{"address":{"city":"Oslo","street":"1 Main St"},"email":"ann@example.com","name":"Ann"}`},
		{Method: "GET", Path: "/v1/stores/s%201/inventory", Query: "api_key=" + queryKey},
		{Method: "DELETE", Path: "/v1/pets/1", Auth: "Bearer " + bearerTok},
		{Method: "GET", Path: "/v1/health"},
		{Method: "POST", Path: "/v1/maintenance"},
	}
	got := srv.requests()
	if !reflect.DeepEqual(got, wantReqs) {
		t.Errorf("server requests:\n got %+v\nwant %+v", got, wantReqs)
	}

	wantResps := []map[string]any{
		{"result": []any{map[string]any{"id": 1, "name": "Rex", "tag": "dog"}, map[string]any{"id": 2, "name": "Tom", "tag": "cat"}}},
		{"id": 4, "name": "Nemo", "tag": "fish", "status": "available", "category": map[string]any{"name": "fish", "parent": map[string]any{"name": "animals"}}},
		{"error": `get_pet_by_id: GET /v1/pets/42: HTTP 404 Not Found: {"code":404,"message":"pet 42 not found"}`},
		{"name": "Ann", "email": "ann@example.com", "address": map[string]any{"street": "1 Main St", "city": "Oslo"}, "pet": "1"},
		{"dog": 1, "cat": 1, "fish": 1},
		{"status_code": 204},
		{"text": "ok"},
		{"error": "run_maintenance: POST /v1/maintenance: HTTP 503 Service Unavailable: maintenance window: try again after 02:00"},
	}
	resps := a.functionResponses()
	if !jsonEqual(t, resps, wantResps) {
		gb, _ := json.MarshalIndent(resps, "", " ")
		t.Errorf("function responses:\n%s", gb)
	}

	stored := a.storedJSON(t, "s1")
	for _, secret := range allSecrets {
		if strings.Contains(stored, secret) {
			t.Errorf("secret %q is in the stored events", secret)
		}
	}
	for _, req := range a.m.Requests() {
		b, _ := json.Marshal(req.Contents)
		for _, secret := range allSecrets {
			if strings.Contains(string(b), secret) {
				t.Errorf("secret %q reached the model", secret)
			}
		}
	}
}

// TestCredentialFlow checks that an operation whose scheme has no
// configured credential asks the client with adk_request_credential, runs
// with the answer (in ADK's auth config shape), reuses it for the rest of
// the session without asking again, asks again in another session, and
// never writes it to the session log (CONFORMANCE T9).
func TestCredentialFlow(t *testing.T) {
	srv := newPetServer(t)
	ts := newToolset(t, srv, openapitool.Config{Name: "pets"})
	a := newAgentRun(t, ts,
		scripted.Call("create_pet", map[string]any{"name": "Nemo"}),
		scripted.Call("delete_pet", map[string]any{"pet_id": 4}),
		scripted.Text("Added and removed."),
		scripted.Call("delete_pet", map[string]any{"pet_id": 1}),
	)
	evs := a.send(t, "s1", genai.NewContentFromText("add then remove Nemo", genai.RoleUser))
	req := credentialRequest(t, evs)
	cfg, _ := req.Args["authConfig"].(map[string]any)
	wantCfg := map[string]any{"authScheme": map[string]any{"type": "http", "scheme": "bearer", "bearerFormat": "JWT"}, "credentialKey": "pets:bearerAuth"}
	if !jsonEqual(t, cfg, wantCfg) {
		t.Fatalf("auth config %v, want %v", cfg, wantCfg)
	}
	if n := len(srv.requests()); n != 0 {
		t.Fatalf("%d requests sent before the credential arrived", n)
	}

	answer := &genai.Content{Role: genai.RoleUser, Parts: []*genai.Part{{FunctionResponse: &genai.FunctionResponse{
		ID: req.ID, Name: event.FunctionRequestCredential, Response: map[string]any{
			"authScheme": wantCfg["authScheme"],
			"exchangedAuthCredential": map[string]any{"authType": "http",
				"http": map[string]any{"scheme": "bearer", "credentials": map[string]any{"token": bearerTok}}},
		}}}}}
	evs = a.send(t, "s1", answer)
	if last := evs[len(evs)-1]; last.Text() != "Added and removed." {
		t.Fatalf("final text %q", last.Text())
	}
	got := srv.requests()
	if len(got) != 2 || got[0].Method != "POST" || got[1].Method != "DELETE" || got[0].Auth != "Bearer "+bearerTok || got[1].Auth != "Bearer "+bearerTok {
		t.Fatalf("server requests %+v", got)
	}
	for _, e := range evs {
		for _, fc := range e.FunctionCalls() {
			if fc.Name == event.FunctionRequestCredential {
				t.Fatalf("asked again for a credential the session has: %+v", fc)
			}
		}
	}
	if stored := a.storedJSON(t, "s1"); strings.Contains(stored, bearerTok) {
		t.Fatal("the credential was written to the session log")
	}
	if resps := a.functionResponses(); !jsonEqual(t, resps, []map[string]any{{"id": 4, "name": "Nemo"}, {"status_code": 204}}) {
		t.Fatalf("function responses %v", resps)
	}

	// Another session has no credential yet.
	evs = a.send(t, "s2", genai.NewContentFromText("remove Rex", genai.RoleUser))
	credentialRequest(t, evs)
	if n := len(srv.requests()); n != 2 {
		t.Fatalf("%d requests, want 2: a session without a credential sent one", n)
	}
}

// credentialRequest returns the adk_request_credential call of the last
// event.
func credentialRequest(t *testing.T, evs []*event.Event) *genai.FunctionCall {
	t.Helper()
	last := evs[len(evs)-1]
	calls := last.FunctionCalls()
	if len(calls) != 1 || calls[0].Name != event.FunctionRequestCredential || len(last.LongRunningToolIDs) != 1 {
		t.Fatalf("want one adk_request_credential call, got %+v", last.Content)
	}
	return calls[0]
}

// TestRejectedCredentialIsForgotten checks that a credential the API
// rejects with 401 is dropped, so the next call asks the client again, and
// that a flat {"apiKey": ...} answer is accepted.
func TestRejectedCredentialIsForgotten(t *testing.T) {
	var mu sync.Mutex
	valid, seen := "k1", []string{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		defer mu.Unlock()
		seen = append(seen, r.Header.Get("X-Key"))
		if r.Header.Get("X-Key") != valid {
			http.Error(w, "unknown key", http.StatusUnauthorized)
			return
		}
		_, _ = w.Write([]byte(`{"user":"ann"}`))
	}))
	defer srv.Close()
	spec := `{"openapi": "3.0.3", "info": {"title": "me", "version": "1"},
	  "components": {"securitySchemes": {"key": {"type": "apiKey", "in": "header", "name": "X-Key"}}},
	  "security": [{"key": []}],
	  "paths": {"/me": {"get": {"operationId": "whoAmI", "responses": {"200": {"description": "ok"}}}}}}`
	ts, err := openapitool.New(context.Background(), openapitool.Config{Spec: []byte(spec), BaseURL: srv.URL})
	if err != nil {
		t.Fatal(err)
	}
	a := newAgentRun(t, ts,
		scripted.Call("who_am_i", nil), scripted.Text("You are ann."),
		scripted.Call("who_am_i", nil), scripted.Call("who_am_i", nil), scripted.Text("Still ann."))
	answer := func(id, key string) *genai.Content {
		return &genai.Content{Role: genai.RoleUser, Parts: []*genai.Part{{FunctionResponse: &genai.FunctionResponse{
			ID: id, Name: event.FunctionRequestCredential, Response: map[string]any{"apiKey": key}}}}}
	}
	req := credentialRequest(t, a.send(t, "s1", genai.NewContentFromText("who am I?", genai.RoleUser)))
	if evs := a.send(t, "s1", answer(req.ID, "k1")); evs[len(evs)-1].Text() != "You are ann." {
		t.Fatalf("final text %q", evs[len(evs)-1].Text())
	}
	mu.Lock()
	valid = "k2"
	mu.Unlock()
	req = credentialRequest(t, a.send(t, "s1", genai.NewContentFromText("and now?", genai.RoleUser)))
	if evs := a.send(t, "s1", answer(req.ID, "k2")); evs[len(evs)-1].Text() != "Still ann." {
		t.Fatalf("final text %q", evs[len(evs)-1].Text())
	}
	mu.Lock()
	defer mu.Unlock()
	if strings.Join(seen, ",") != "k1,k1,k2" {
		t.Fatalf("keys sent: %v", seen)
	}
	resps := a.functionResponses()
	want := []map[string]any{{"user": "ann"}, {"error": "who_am_i: GET /me: HTTP 401 Unauthorized: unknown key"}, {"user": "ann"}}
	if !jsonEqual(t, resps, want) {
		t.Fatalf("function responses %v", resps)
	}
	if stored := a.storedJSON(t, "s1"); strings.Contains(stored, `"k1"`) || strings.Contains(stored, `"k2"`) {
		t.Fatal("a key was written to the session log")
	}
}

// TestConcurrentCalls runs calls of several tools at once (under -race).
func TestConcurrentCalls(t *testing.T) {
	srv := newPetServer(t)
	tools := toolsByName(t, newToolset(t, srv, openapitool.Config{Credentials: map[string]openapitool.Credential{
		"apiKeyHeader": {APIKey: headerKey}, "apiKeyQuery": {APIKey: queryKey}}}))
	var wg sync.WaitGroup
	errs := make(chan error, 40)
	for i := range 20 {
		wg.Add(2)
		go func() {
			defer wg.Done()
			res, err := tools["get_pet_by_id"].Run(context.Background(), nil, map[string]any{"pet_id": 1 + i%3})
			if err == nil && res["id"] != float64(1+i%3) {
				err = fmt.Errorf("pet %v, want %d", res["id"], 1+i%3)
			}
			errs <- err
		}()
		go func() {
			defer wg.Done()
			_, err := tools["stores_store_id_inventory_get"].Run(context.Background(), nil, map[string]any{"store_id": fmt.Sprint(i)})
			errs <- err
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Error(err)
		}
	}
	if n := len(srv.requests()); n != 40 {
		t.Fatalf("%d requests, want 40", n)
	}
}
