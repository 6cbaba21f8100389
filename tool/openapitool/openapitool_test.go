package openapitool_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/loomkit/loom/tool"
	"github.com/loomkit/loom/tool/openapitool"
)

// toolsByName lists a toolset's tools by name.
func toolsByName(t *testing.T, ts *openapitool.Toolset) map[string]tool.Function {
	t.Helper()
	tools, err := ts.Tools(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	m := map[string]tool.Function{}
	for _, tl := range tools {
		m[tl.Name()] = tl.(tool.Function)
	}
	return m
}

func names(t *testing.T, ts *openapitool.Toolset) []string {
	t.Helper()
	tools, err := ts.Tools(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, tl := range tools {
		out = append(out, tl.Name())
	}
	return out
}

// TestToolNames checks one tool per operation, named from the operation id
// in snake_case or, without an id, from the path and method.
func TestToolNames(t *testing.T) {
	ts := newToolset(t, newPetServer(t), openapitool.Config{})
	want := []string{"health", "run_maintenance", "list_pets", "create_pet", "get_pet_by_id", "delete_pet",
		"update_pet_owner", "stores_store_id_inventory_get"}
	if got := names(t, ts); strings.Join(got, ",") != strings.Join(want, ",") {
		t.Fatalf("tools %v, want %v", got, want)
	}
	if ts.Name() != "openapi" {
		t.Fatalf("default toolset name %q", ts.Name())
	}
}

// TestDeclarations checks the function declarations: parameters of every
// location with their descriptions, a body built from $ref schemas (nested
// and recursive) flattened into arguments, read-only properties left out,
// and required arguments.
//
// (CONFORMANCE O1)
func TestDeclarations(t *testing.T) {
	tools := toolsByName(t, newToolset(t, newPetServer(t), openapitool.Config{}))
	schemaOf := func(name string) map[string]any {
		d := tools[name].Declaration()
		if d == nil || d.Name != name {
			t.Fatalf("declaration of %s: %+v", name, d)
		}
		b, _ := json.Marshal(d.ParametersJsonSchema)
		var m map[string]any
		if err := json.Unmarshal(b, &m); err != nil {
			t.Fatal(err)
		}
		return m
	}

	list := schemaOf("list_pets")
	if d := tools["list_pets"].Declaration().Description; d != "Lists the pets of the store, oldest first." {
		t.Errorf("description %q", d)
	}
	wantList := map[string]any{
		"type": "object",
		"properties": map[string]any{
			"limit":        map[string]any{"type": "integer", "minimum": 1, "maximum": 100, "description": "How many pets to return at most."},
			"tags":         map[string]any{"type": "array", "items": map[string]any{"type": "string"}, "description": "Only pets with one of these tags."},
			"x_request_id": map[string]any{"type": "string", "description": "Correlates the request in the store's logs."},
		},
		"required": []any{"x_request_id"},
	}
	if !jsonEqual(t, list, wantList) {
		t.Errorf("list_pets schema %v", list)
	}

	create := schemaOf("create_pet")
	if d := tools["create_pet"].Declaration().Description; d != "Add a pet to the store." {
		t.Errorf("a summary stands in for a missing description: %q", d)
	}
	props := create["properties"].(map[string]any)
	if _, ok := props["id"]; ok {
		t.Error("the read-only id is an argument")
	}
	if !jsonEqual(t, props["name"], map[string]any{"type": "string", "description": "The pet's name."}) ||
		!jsonEqual(t, props["status"], map[string]any{"type": "string", "enum": []any{"available", "pending", "sold"}}) {
		t.Errorf("create_pet properties %v", props)
	}
	// The recursive Category: expanded once, then cut.
	wantCategory := map[string]any{"type": "object", "description": "A category, inside its parent category.", "properties": map[string]any{
		"name":   map[string]any{"type": "string"},
		"parent": map[string]any{"type": "object", "description": "A category, inside its parent category."},
	}}
	if !jsonEqual(t, props["category"], wantCategory) {
		t.Errorf("category %v", props["category"])
	}
	if !jsonEqual(t, create["required"], []any{"name"}) {
		t.Errorf("create_pet required %v", create["required"])
	}

	owner := schemaOf("update_pet_owner")
	wantOwner := map[string]any{
		"type": "object",
		"properties": map[string]any{
			"pet_id": map[string]any{"type": "integer"},
			"name":   map[string]any{"type": "string", "description": "The owner's full name."},
			"email":  map[string]any{"type": "string", "format": "email"},
			"address": map[string]any{"type": "object", "description": "A postal address.", "required": []any{"city"},
				"properties": map[string]any{"street": map[string]any{"type": "string"}, "city": map[string]any{"type": "string"}}},
		},
		"required": []any{"pet_id", "name"},
	}
	if !jsonEqual(t, owner, wantOwner) {
		t.Errorf("update_pet_owner schema %v", owner)
	}

	get := schemaOf("get_pet_by_id")
	wantGet := map[string]any{"type": "object", "properties": map[string]any{
		"pet_id":  map[string]any{"type": "integer", "format": "int64", "description": "The pet's id."},
		"session": map[string]any{"type": "string", "description": "The visitor's session, for the store's statistics."},
	}, "required": []any{"pet_id"}}
	if !jsonEqual(t, get, wantGet) {
		t.Errorf("get_pet_by_id schema %v", get)
	}
	if h := schemaOf("health"); !jsonEqual(t, h, map[string]any{"type": "object", "properties": map[string]any{}}) {
		t.Errorf("health schema %v", h)
	}
}

// creds are the credentials of every scheme of the test API.
var creds = map[string]openapitool.Credential{
	"apiKeyHeader": {APIKey: headerKey},
	"apiKeyQuery":  {APIKey: queryKey},
	"apiKeyCookie": {APIKey: cookieKey},
	"bearerAuth":   {Token: bearerTok},
}

// TestInvalidArguments checks that a missing required argument or an
// argument the operation does not have is a clear error and sends nothing.
//
// (CONFORMANCE O2)
func TestInvalidArguments(t *testing.T) {
	srv := newPetServer(t)
	tools := toolsByName(t, newToolset(t, srv, openapitool.Config{Credentials: creds}))
	ctx := context.Background()
	_, err := tools["list_pets"].Run(ctx, nil, map[string]any{"limit": 3})
	want := `list_pets: invalid arguments, no request sent: missing required arguments: x_request_id (header "X-Request-ID")`
	if err == nil || err.Error() != want {
		t.Errorf("missing argument: %v\nwant %s", err, want)
	}
	_, err = tools["update_pet_owner"].Run(ctx, nil, map[string]any{"name": "Ann", "colour": "red"})
	want = `update_pet_owner: invalid arguments, no request sent: missing required arguments: pet_id (path "petId"); ` +
		`unknown arguments: colour (accepted: address, email, name, pet_id)`
	if err == nil || err.Error() != want {
		t.Errorf("unknown argument: %v\nwant %s", err, want)
	}
	_, err = tools["get_pet_by_id"].Run(ctx, nil, map[string]any{"pet_id": map[string]any{"id": 1}, "session": []any{"a", map[string]any{}}})
	if err == nil || !strings.Contains(err.Error(), `argument pet_id (path "petId")`) {
		t.Errorf("an object for a path parameter: %v", err)
	}
	if n := len(srv.requests()); n != 0 {
		t.Fatalf("%d requests sent for invalid calls", n)
	}
}

// TestPathParametersStayInTheirSegment checks that a path parameter value
// cannot move the request to another path: a slash is escaped, and a value
// that is empty, "." or "..", or holds a dot segment (which servers resolve
// after decoding %2F), is refused before anything is sent.
//
// (CONFORMANCE O2)
func TestPathParametersStayInTheirSegment(t *testing.T) {
	srv := newPetServer(t)
	tools := toolsByName(t, newToolset(t, srv, openapitool.Config{Credentials: creds}))
	ctx := context.Background()
	for _, v := range []any{"", ".", "..", "../../pets", "a/../b", "a/.", `..\admin`, []any{".."}} {
		_, err := tools["stores_store_id_inventory_get"].Run(ctx, nil, map[string]any{"store_id": v})
		if err == nil || !strings.Contains(err.Error(), `argument store_id (path "storeId")`) {
			t.Errorf("store_id %q: err = %v, want an error naming the argument", v, err)
		}
	}
	if reqs := srv.requests(); len(reqs) != 0 {
		t.Fatalf("requests sent for path-changing values: %+v", reqs)
	}
	for _, v := range []string{"north/east", "v1.2", "...", ".hidden"} {
		if _, err := tools["stores_store_id_inventory_get"].Run(ctx, nil, map[string]any{"store_id": v}); err != nil {
			t.Errorf("store_id %q: %v", v, err)
		}
	}
	var paths []string
	for _, r := range srv.requests() {
		paths = append(paths, r.Path)
	}
	want := []string{"/v1/stores/north%2Feast/inventory", "/v1/stores/v1.2/inventory", "/v1/stores/.../inventory", "/v1/stores/.hidden/inventory"}
	if !slices.Equal(paths, want) {
		t.Fatalf("paths = %q, want %q", paths, want)
	}
}

// TestHeaderValuesCannotInjectHeaders: a header or cookie argument holding
// CR, LF or another control character cannot add a header, whatever
// transport Config.HTTPClient uses: a header value is refused before the
// request is built (nothing is sent) and a cookie value is percent-encoded.
//
// (CONFORMANCE O2)
func TestHeaderValuesCannotInjectHeaders(t *testing.T) {
	spec := `
openapi: 3.0.3
info: {title: headers, version: "1"}
servers: [{url: "http://api.example"}]
paths:
  /notes:
    get:
      operationId: listNotes
      parameters:
        - {name: X-Trace, in: header, schema: {type: string}}
        - {name: X-Tags, in: header, schema: {type: array, items: {type: string}}}
        - {name: pref, in: cookie, schema: {type: string}}
      responses: {"200": {description: ok}}
`
	var sent []http.Header
	hc := &http.Client{Transport: roundTrip(func(r *http.Request) (*http.Response, error) {
		sent = append(sent, r.Header.Clone())
		return &http.Response{StatusCode: 204, Status: "204 No Content", Header: http.Header{}, Body: http.NoBody, Request: r}, nil
	})}
	ts, err := openapitool.New(context.Background(), openapitool.Config{Spec: []byte(spec), HTTPClient: hc})
	if err != nil {
		t.Fatal(err)
	}
	notes := toolsByName(t, ts)["list_notes"]
	for _, args := range []map[string]any{
		{"x_trace": "a\r\nX-Evil: 1"},
		{"x_trace": "a\nX-Evil: 1"},
		{"x_trace": "a\x00b"},
		{"x_tags": []any{"ok", "b\r\nX-Evil: 1"}},
	} {
		_, err := notes.Run(context.Background(), nil, args)
		if err == nil || !strings.Contains(err.Error(), "argument x_") || !strings.Contains(err.Error(), "control character") {
			t.Errorf("%q: err = %v, want an error naming the argument", args, err)
		}
	}
	if len(sent) != 0 {
		t.Fatalf("requests sent with control characters in headers: %q", sent)
	}
	if _, err := notes.Run(context.Background(), nil, map[string]any{"x_trace": "tab\tand ünïcode", "pref": "a\r\nX-Evil: 1"}); err != nil {
		t.Fatal(err)
	}
	if len(sent) != 1 || sent[0].Get("X-Trace") != "tab\tand ünïcode" || sent[0].Get("Cookie") != "pref=a%0D%0AX-Evil%3A+1" || sent[0].Get("X-Evil") != "" {
		t.Fatalf("sent %q", sent)
	}
}

// TestMissingCredential checks that without a tool context (or with
// requests turned off) a call needing a credential fails clearly.
func TestMissingCredential(t *testing.T) {
	srv := newPetServer(t)
	tools := toolsByName(t, newToolset(t, srv, openapitool.Config{NoCredentialRequests: true}))
	_, err := tools["delete_pet"].Run(context.Background(), nil, map[string]any{"pet_id": 1})
	if err == nil || err.Error() != `delete_pet: security scheme "bearerAuth" needs a credential and none is configured` {
		t.Fatalf("err = %v", err)
	}
	if res, err := tools["health"].Run(context.Background(), nil, nil); err != nil || res["text"] != "ok" {
		t.Fatalf("an operation without security: %v, %v", res, err)
	}
	if n := len(srv.requests()); n != 1 {
		t.Fatalf("%d requests, want 1", n)
	}
}

// miniAPI serves a small spec with the given paths and handlers.
func miniAPI(t *testing.T, paths string, handler http.HandlerFunc) (*httptest.Server, []byte) {
	t.Helper()
	srv := httptest.NewServer(handler)
	t.Cleanup(srv.Close)
	spec := "openapi: 3.1.0\ninfo: {title: mini, version: '1'}\npaths:\n" + paths
	return srv, []byte(spec)
}

const miniPaths = `
  /big:
    get:
      operationId: big
      parameters:
        - {name: chunked, in: query, schema: {type: boolean}}
      responses: {"200": {description: ok}}
  /slow:
    get:
      operationId: slow
      responses: {"200": {description: ok}}
  /fail/{code}:
    get:
      operationId: fail
      parameters:
        - {name: code, in: path, required: true, schema: {type: integer}}
      responses: {default: {description: error}}
`

func miniHandler(w http.ResponseWriter, r *http.Request) {
	switch {
	case r.URL.Path == "/big":
		w.Header().Set("Content-Type", "application/json")
		body := `{"data":"` + strings.Repeat("x", 2000) + `"}`
		if r.URL.Query().Get("chunked") == "true" {
			for i := 0; i < len(body); i += 100 {
				_, _ = w.Write([]byte(body[i:min(i+100, len(body))]))
				w.(http.Flusher).Flush()
			}
			return
		}
		_, _ = w.Write([]byte(body))
	case r.URL.Path == "/slow":
		select {
		case <-r.Context().Done():
		case <-time.After(5 * time.Second):
		}
	case strings.HasPrefix(r.URL.Path, "/fail/"):
		code := 400
		if r.URL.Path == "/fail/500" {
			code = 500
		}
		w.WriteHeader(code)
		_, _ = w.Write([]byte("  oops:\n" + strings.Repeat("é", 400)))
	}
}

// TestResponseTooLarge checks that a response over MaxResponseBytes is a
// clear error, whether its length is announced or not.
//
// (CONFORMANCE O2)
func TestResponseTooLarge(t *testing.T) {
	srv, spec := miniAPI(t, miniPaths, miniHandler)
	ts, err := openapitool.New(context.Background(), openapitool.Config{Spec: spec, BaseURL: srv.URL, MaxResponseBytes: 1000})
	if err != nil {
		t.Fatal(err)
	}
	big := toolsByName(t, ts)["big"]
	_, err = big.Run(context.Background(), nil, map[string]any{})
	if err == nil || err.Error() != "big: GET /big: response of 2011 bytes exceeds the limit of 1000 bytes" {
		t.Errorf("announced length: %v", err)
	}
	_, err = big.Run(context.Background(), nil, map[string]any{"chunked": true})
	if err == nil || err.Error() != "big: GET /big: response exceeds the limit of 1000 bytes" {
		t.Errorf("chunked: %v", err)
	}
	ts, err = openapitool.New(context.Background(), openapitool.Config{Spec: spec, BaseURL: srv.URL})
	if err != nil {
		t.Fatal(err)
	}
	res, err := toolsByName(t, ts)["big"].Run(context.Background(), nil, map[string]any{"chunked": true})
	if err != nil || len(res["data"].(string)) != 2000 {
		t.Errorf("within the default limit: %v", err)
	}
}

// TestTimeout checks that a call is bounded by Config.Timeout.
//
// (CONFORMANCE O2)
func TestTimeout(t *testing.T) {
	srv, spec := miniAPI(t, miniPaths, miniHandler)
	ts, err := openapitool.New(context.Background(), openapitool.Config{Spec: spec, BaseURL: srv.URL, Timeout: 100 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	_, err = toolsByName(t, ts)["slow"].Run(context.Background(), nil, nil)
	if err == nil || err.Error() != "slow: GET /slow: no response within 100ms" {
		t.Errorf("err = %v", err)
	}
	if d := time.Since(start); d > 3*time.Second {
		t.Errorf("the call took %v", d)
	}
}

// TestHTTPErrors checks that 4xx and 5xx responses are *HTTPError values
// carrying the status and a short excerpt of the body.
//
// (CONFORMANCE O2)
func TestHTTPErrors(t *testing.T) {
	srv, spec := miniAPI(t, miniPaths, miniHandler)
	ts, err := openapitool.New(context.Background(), openapitool.Config{Spec: spec, BaseURL: srv.URL})
	if err != nil {
		t.Fatal(err)
	}
	fail := toolsByName(t, ts)["fail"]
	for _, code := range []int{400, 500} {
		_, err := fail.Run(context.Background(), nil, map[string]any{"code": code})
		var he *openapitool.HTTPError
		if !errors.As(err, &he) {
			t.Fatalf("%d: err = %v", code, err)
		}
		if he.StatusCode != code || he.Method != "GET" || he.Path != "/fail/"+strconv.Itoa(code) {
			t.Errorf("%d: %+v", code, he)
		}
		wantBody := "oops: " + strings.Repeat("é", 253) + "…" // 512 bytes, cut at a rune boundary
		if he.Body != wantBody {
			t.Errorf("%d: body excerpt %q", code, he.Body)
		}
		if !strings.HasPrefix(err.Error(), "fail: GET /fail/"+strconv.Itoa(code)+": HTTP "+strconv.Itoa(code)+" "+http.StatusText(code)+": oops: éé") {
			t.Errorf("%d: message %q", code, err)
		}
	}
}

// TestFilters checks the operation filters: by operation id or tool name,
// by tag and by predicate, together, and the name prefix.
func TestFilters(t *testing.T) {
	srv := newPetServer(t)
	cases := []struct {
		name string
		cfg  openapitool.Config
		want string
	}{
		{"ids", openapitool.Config{Operations: []string{"listPets", "health", "stores_store_id_inventory_get", "nope"}},
			"health,list_pets,stores_store_id_inventory_get"},
		{"tags", openapitool.Config{Tags: []string{"ops", "owners"}}, "health,run_maintenance,update_pet_owner"},
		{"predicate", openapitool.Config{Filter: func(op openapitool.Operation) bool { return op.Method == http.MethodDelete }}, "delete_pet"},
		{"together", openapitool.Config{Tags: []string{"pets"}, Filter: func(op openapitool.Operation) bool {
			return op.Method == http.MethodGet && op.Path == "/pets/{petId}" && op.ID == "getPetById" && op.Description == "Returns one pet."
		}}, "get_pet_by_id"},
		{"prefix", openapitool.Config{NamePrefix: "store_", Tags: []string{"ops"}}, "store_health,store_run_maintenance"},
		{"none", openapitool.Config{Tags: []string{"nope"}}, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := names(t, newToolset(t, srv, c.cfg))
			slices.Sort(got)
			if strings.Join(got, ",") != c.want {
				t.Fatalf("tools %v, want %s", got, c.want)
			}
		})
	}
}

// TestToolNamesDoNotDependOnFilters: when two operations' ids make the
// same name, the second one's tool is get_pet_2 whatever the filters keep,
// so the names an unfiltered toolset lists select its tools in
// Config.Operations, and a filter does not rename the tools it keeps.
func TestToolNamesDoNotDependOnFilters(t *testing.T) {
	spec := `
openapi: 3.0.3
info: {title: twins, version: "1"}
servers: [{url: "http://api.example"}]
paths:
  /a:
    get: {operationId: getPet, tags: [old], responses: {"200": {description: ok}}}
  /b:
    get: {operationId: get_pet, tags: [new], responses: {"200": {description: ok}}}
`
	for _, c := range []struct {
		name string
		cfg  openapitool.Config
		want string
	}{
		{"none", openapitool.Config{}, "get_pet,get_pet_2"},
		{"by name", openapitool.Config{Operations: []string{"get_pet_2"}}, "get_pet_2"},
		{"by tag", openapitool.Config{Tags: []string{"new"}}, "get_pet_2"},
		{"by predicate", openapitool.Config{Filter: func(op openapitool.Operation) bool { return op.Path == "/b" }}, "get_pet_2"},
	} {
		t.Run(c.name, func(t *testing.T) {
			c.cfg.Spec = []byte(spec)
			ts, err := openapitool.New(context.Background(), c.cfg)
			if err != nil {
				t.Fatal(err)
			}
			if got := strings.Join(names(t, ts), ","); got != c.want {
				t.Fatalf("tools %s, want %s", got, c.want)
			}
		})
	}
}

// TestLoadFromURL checks a spec fetched over HTTP whose relative server URL
// resolves against the spec's URL.
func TestLoadFromURL(t *testing.T) {
	srv := newPetServer(t)
	spec := strings.Replace(petSpec, "  - url: https://{region}.pets.example/v1\n    variables:\n      region:\n        default: eu\n", "  - url: /v1\n", 1)
	mux := http.NewServeMux()
	mux.HandleFunc("/openapi.yaml", func(w http.ResponseWriter, r *http.Request) { _, _ = w.Write([]byte(spec)) })
	mux.Handle("/", srv.Config.Handler)
	specSrv := httptest.NewServer(mux)
	defer specSrv.Close()
	ts, err := openapitool.New(context.Background(), openapitool.Config{SpecURL: specSrv.URL + "/openapi.yaml"})
	if err != nil {
		t.Fatal(err)
	}
	res, err := toolsByName(t, ts)["health"].Run(context.Background(), nil, nil)
	if err != nil || res["text"] != "ok" {
		t.Fatalf("health: %v, %v", res, err)
	}
	if reqs := srv.requests(); len(reqs) != 1 || reqs[0].Path != "/v1/health" {
		t.Fatalf("requests %+v", reqs)
	}
}

// TestLoadFromFile checks a spec read from a file.
func TestLoadFromFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "pets.yaml")
	if err := os.WriteFile(path, []byte(petSpec), 0o600); err != nil {
		t.Fatal(err)
	}
	ts, err := openapitool.New(context.Background(), openapitool.Config{SpecFile: path, Name: "pets"})
	if err != nil {
		t.Fatal(err)
	}
	if n := len(names(t, ts)); n != 8 || ts.Name() != "pets" {
		t.Fatalf("%d tools, name %q", n, ts.Name())
	}
}

// roundTrip is an http.RoundTripper made of a function.
type roundTrip func(*http.Request) (*http.Response, error)

func (f roundTrip) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// TestServerVariables checks that the document's server URL, with its
// variables at their defaults, is where requests go.
func TestServerVariables(t *testing.T) {
	var got string
	hc := &http.Client{Transport: roundTrip(func(r *http.Request) (*http.Response, error) {
		got = r.URL.String()
		return &http.Response{StatusCode: 200, Status: "200 OK", Header: http.Header{"Content-Type": {"application/json"}},
			Body: http.NoBody, Request: r}, nil
	})}
	ts, err := openapitool.New(context.Background(), openapitool.Config{Spec: []byte(petSpec), HTTPClient: hc})
	if err != nil {
		t.Fatal(err)
	}
	res, err := toolsByName(t, ts)["health"].Run(context.Background(), nil, nil)
	if err != nil || got != "https://eu.pets.example/v1/health" || res["status_code"] != 200 {
		t.Fatalf("request to %s: %v, %v", got, res, err)
	}
}

// TestTransportErrorHidesKey checks that a failed request's error does not
// show the request URL, whose query may hold an API key.
func TestTransportErrorHidesKey(t *testing.T) {
	dead := httptest.NewServer(http.NotFoundHandler())
	dead.Close()
	ts, err := openapitool.New(context.Background(), openapitool.Config{Spec: []byte(petSpec), BaseURL: dead.URL, Credentials: creds})
	if err != nil {
		t.Fatal(err)
	}
	_, err = toolsByName(t, ts)["stores_store_id_inventory_get"].Run(context.Background(), nil, map[string]any{"store_id": "s1"})
	if err == nil || !strings.HasPrefix(err.Error(), "stores_store_id_inventory_get: GET /stores/s1/inventory: request failed: ") || strings.Contains(err.Error(), queryKey) {
		t.Fatalf("err = %v", err)
	}
}

// TestBadSpecs checks that documents and configurations New cannot use are
// clear errors.
func TestBadSpecs(t *testing.T) {
	notFound := httptest.NewServer(http.NotFoundHandler())
	defer notFound.Close()
	const head = "openapi: 3.0.3\ninfo: {title: t, version: '1'}\nservers: [{url: 'http://api.example'}]\n"
	cases := []struct {
		name string
		cfg  openapitool.Config
		is   error
		msg  string
	}{
		{"no source", openapitool.Config{}, openapitool.ErrInvalidConfig, "exactly one of Spec"},
		{"two sources", openapitool.Config{Spec: []byte(petSpec), SpecFile: "x.yaml"}, openapitool.ErrInvalidConfig, "exactly one of Spec"},
		{"negative limit", openapitool.Config{Spec: []byte(petSpec), MaxResponseBytes: -1}, openapitool.ErrInvalidConfig, "MaxResponseBytes -1"},
		{"not a document", openapitool.Config{Spec: []byte("{{{ not yaml")}, openapitool.ErrInvalidSpec, ""},
		{"swagger 2", openapitool.Config{Spec: []byte(`{"swagger": "2.0", "info": {"title": "t", "version": "1"}, "paths": {}}`)},
			openapitool.ErrInvalidSpec, "not 3.x"},
		{"info not an object", openapitool.Config{Spec: []byte("openapi: 3.0.3\ninfo: nope\npaths: {}\n")}, openapitool.ErrInvalidSpec, "Info"},
		{"dangling ref", openapitool.Config{Spec: []byte(head + "paths:\n  /a:\n    get:\n      responses:\n        '200':\n          description: ok\n          content:\n            application/json:\n              schema: {$ref: '#/components/schemas/Nope'}\n")},
			openapitool.ErrInvalidSpec, "Nope"},
		{"external ref", openapitool.Config{Spec: []byte(head + "paths:\n  /a:\n    get:\n      responses:\n        '200':\n          description: ok\n          content:\n            application/json:\n              schema: {$ref: 'other.yaml#/X'}\n")},
			openapitool.ErrInvalidSpec, "other.yaml"},
		{"undefined scheme", openapitool.Config{Spec: []byte(head + "paths:\n  /a:\n    get:\n      security: [{nope: []}]\n      responses: {'200': {description: ok}}\n")},
			openapitool.ErrInvalidSpec, ""},
		{"relative server", openapitool.Config{Spec: []byte("openapi: 3.0.3\ninfo: {title: t, version: '1'}\nservers: [{url: /v1}]\npaths:\n  /a:\n    get:\n      responses: {'200': {description: ok}}\n")},
			openapitool.ErrInvalidSpec, "set Config.BaseURL"},
		{"missing file", openapitool.Config{SpecFile: filepath.Join(t.TempDir(), "none.yaml")}, openapitool.ErrInvalidSpec, "none.yaml"},
		{"URL not found", openapitool.Config{SpecURL: notFound.URL + "/openapi.json"}, openapitool.ErrInvalidSpec, "HTTP 404"},
		{"not an http URL", openapitool.Config{SpecURL: "file:///etc/passwd"}, openapitool.ErrInvalidConfig, "not an http or https URL"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ts, err := openapitool.New(context.Background(), c.cfg)
			if err == nil {
				t.Fatalf("no error; %d tools", len(names(t, ts)))
			}
			if !errors.Is(err, c.is) || !strings.Contains(err.Error(), c.msg) {
				t.Fatalf("err = %v, want %v containing %q", err, c.is, c.msg)
			}
		})
	}
}

// TestRedirects checks that the default client follows a redirect within
// the API's host but not to another host, where the API key would go.
//
// (CONFORMANCE O2)
func TestRedirects(t *testing.T) {
	var otherSaw []string
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		otherSaw = append(otherSaw, r.Header.Get("X-API-Key"))
	}))
	defer other.Close()
	api := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/v1/health":
			http.Redirect(w, r, "/v1/pets?x_request_id=r", http.StatusFound)
		case "/v1/pets/1":
			http.Redirect(w, r, other.URL+"/steal", http.StatusFound)
		case "/v1/pets":
			_, _ = w.Write([]byte(`{"moved": true}`))
		}
	}))
	defer api.Close()
	tools := toolsByName(t, newToolset(t, &petServer{Server: api}, openapitool.Config{Credentials: creds}))
	if res, err := tools["health"].Run(context.Background(), nil, nil); err != nil || res["moved"] != true {
		t.Fatalf("same-host redirect: %v, %v", res, err)
	}
	_, err := tools["get_pet_by_id"].Run(context.Background(), nil, map[string]any{"pet_id": 1})
	var he *openapitool.HTTPError
	if !errors.As(err, &he) || he.StatusCode != http.StatusFound {
		t.Fatalf("cross-host redirect: %v", err)
	}
	if len(otherSaw) != 0 {
		t.Fatalf("the other host was called: %q", otherSaw)
	}
}

// TestLenientValidation checks that parts of a document that do not change
// the tools (a pattern Go cannot compile, an example of the wrong type) do
// not make it unusable.
func TestLenientValidation(t *testing.T) {
	spec := `{"openapi": "3.0.3", "info": {"title": "t", "version": "1"}, "servers": [{"url": "http://api.example"}],
	  "paths": {"/users/{name}": {"get": {"operationId": "getUser",
	    "parameters": [{"name": "name", "in": "path", "required": true,
	      "schema": {"type": "string", "pattern": "^(?!admin)[a-z]+$", "example": 7}}],
	    "responses": {"200": {"description": "ok"}}}}}}`
	ts, err := openapitool.New(context.Background(), openapitool.Config{Spec: []byte(spec)})
	if err != nil {
		t.Fatal(err)
	}
	if got := names(t, ts); len(got) != 1 || got[0] != "get_user" {
		t.Fatalf("tools %v", got)
	}
}

// TestParameterStyles checks how arguments are serialized: query styles
// (exploded and joined arrays, deepObject, form objects), a parameter given
// by content (JSON text), a form body, a text body and colliding names.
func TestParameterStyles(t *testing.T) {
	spec := `
openapi: 3.0.3
info: {title: styles, version: "1"}
servers: [{url: "http://api.example"}]
paths:
  /search/{id}:
    post:
      operationId: search
      parameters:
        - {name: id, in: path, required: true, schema: {type: array, items: {type: integer}}}
        - {name: ids, in: query, explode: false, schema: {type: array, items: {type: integer}}}
        - {name: kinds, in: query, style: pipeDelimited, schema: {type: array, items: {type: string}}}
        - {name: filter, in: query, style: deepObject, schema: {type: object}}
        - {name: page, in: query, schema: {type: object}}
        - {name: where, in: query, content: {application/json: {schema: {type: object}}}}
        - {name: X-Tags, in: header, schema: {type: array, items: {type: string}}}
        - {name: pref, in: cookie, schema: {type: string}}
      requestBody:
        content:
          application/x-www-form-urlencoded:
            schema:
              type: object
              properties:
                id: {type: string}
                tags: {type: array, items: {type: string}}
      responses: {"200": {description: ok}}
  /notes:
    put:
      operationId: putNote
      requestBody:
        required: true
        content:
          text/plain:
            schema: {type: string}
      responses: {"204": {description: ok}}
`
	var got []string
	hc := &http.Client{Transport: roundTrip(func(r *http.Request) (*http.Response, error) {
		b, _ := io.ReadAll(r.Body)
		got = append(got, r.Method+" "+r.URL.String()+" | "+r.Header.Get("X-Tags")+" | "+r.Header.Get("Cookie")+" | "+
			r.Header.Get("Content-Type")+" | "+string(b))
		return &http.Response{StatusCode: 204, Status: "204 No Content", Header: http.Header{}, Body: http.NoBody, Request: r}, nil
	})}
	ts, err := openapitool.New(context.Background(), openapitool.Config{Spec: []byte(spec), HTTPClient: hc})
	if err != nil {
		t.Fatal(err)
	}
	tools := toolsByName(t, ts)
	decl, _ := json.Marshal(tools["search"].Declaration().ParametersJsonSchema)
	for _, arg := range []string{`"id"`, `"id_0"`, `"ids"`, `"kinds"`, `"filter"`, `"page"`, `"where"`, `"x_tags"`, `"pref"`, `"tags"`} {
		if !strings.Contains(string(decl), arg) {
			t.Errorf("declaration lacks %s: %s", arg, decl)
		}
	}
	_, err = tools["search"].Run(context.Background(), nil, map[string]any{
		"id": []any{1, 2}, "ids": []any{3, 4}, "kinds": []any{"a", "b"},
		"filter": map[string]any{"age": 3, "name": "x y"}, "page": map[string]any{"size": 10},
		"where": map[string]any{"k": "v"}, "x_tags": []any{"t1", "t2"}, "pref": "dark mode",
		"id_0": "form id", "tags": []any{"f1", "f2"},
	})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tools["put_note"].Run(context.Background(), nil, map[string]any{"body": "remember the milk"}); err != nil {
		t.Fatal(err)
	}
	want := []string{
		"POST http://api.example/search/1,2?filter%5Bage%5D=3&filter%5Bname%5D=x+y&ids=3%2C4&kinds=a%7Cb&size=10&where=%7B%22k%22%3A%22v%22%7D" +
			" | t1,t2 | pref=dark+mode | application/x-www-form-urlencoded | id=form+id&tags=f1&tags=f2",
		"PUT http://api.example/notes |  |  | text/plain | remember the milk",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("requests:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// TestNaming checks how operation ids become valid, unique function names.
func TestNaming(t *testing.T) {
	long := strings.Repeat("veryLong", 10)
	ops := []string{"getPet", "get_pet", "pets.list-all", "HTTPServerStatus", "2fa/verify", long}
	var paths strings.Builder
	for i, id := range ops {
		fmt.Fprintf(&paths, "  /p%d:\n    get:\n      operationId: %q\n      responses: {'200': {description: ok}}\n", i, id)
	}
	spec := "openapi: 3.0.3\ninfo: {title: t, version: '1'}\nservers: [{url: 'http://api.example'}]\npaths:\n" + paths.String()
	ts, err := openapitool.New(context.Background(), openapitool.Config{Spec: []byte(spec)})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"get_pet", "get_pet_2", "pets_list_all", "http_server_status", "op_2fa_verify",
		strings.Repeat("very_long", 10)[:60]}
	if got := names(t, ts); strings.Join(got, ",") != strings.Join(want, ",") {
		t.Fatalf("names %v\nwant %v", got, want)
	}
}

// TestSharedSchemasBounded: a small document whose schemas each refer to
// the next through eight properties would spell out 8^depth schemas in a
// declaration; the conversion stops at its size bound instead.
func TestSharedSchemasBounded(t *testing.T) {
	var b strings.Builder
	b.WriteString(`{"openapi":"3.0.3","info":{"title":"fan","version":"1"},"paths":{"/x":{"post":{"operationId":"fan",` +
		`"requestBody":{"content":{"application/json":{"schema":{"$ref":"#/components/schemas/S0"}}}},` +
		`"responses":{"200":{"description":"ok"}}}}},"components":{"schemas":{`)
	writeFanOut(&b, 0)
	b.WriteString("}}}")
	ts, err := openapitool.New(context.Background(), openapitool.Config{Spec: []byte(b.String()), BaseURL: "http://127.0.0.1:1"})
	if err != nil {
		t.Fatal(err)
	}
	d := toolsByName(t, ts)["fan"].Declaration()
	out, err := json.Marshal(d.ParametersJsonSchema)
	if err != nil {
		t.Fatal(err)
	}
	if len(out) > 1<<20 || !strings.Contains(string(out), `"p7"`) {
		t.Fatalf("a %d-byte document made a %d-byte declaration", b.Len(), len(out))
	}
}

// writeFanOut writes the component schemas S<from> to S7: each an object
// of 8 properties that refer to the next, the last's strings, so that a
// few hundred bytes describe 8^7 leaves.
func writeFanOut(b *strings.Builder, from int) {
	const levels = 8
	for i := from; i < levels; i++ {
		if i > from {
			b.WriteString(",")
		}
		fmt.Fprintf(b, `"S%d":{"type":"object","properties":{`, i)
		for p := range 8 {
			if p > 0 {
				b.WriteString(",")
			}
			if i == levels-1 {
				fmt.Fprintf(b, `"p%d":{"type":"string"}`, p)
			} else {
				fmt.Fprintf(b, `"p%d":{"$ref":"#/components/schemas/S%d"}`, p, i+1)
			}
		}
		b.WriteString("}}")
	}
}

// TestWideSchemasBoundedPerTool: the size bound holds for a tool's whole
// declaration, not for each of its arguments, and an argument past it
// keeps its type. A body of 200 properties (or
// 200 parameters) that each refer to a shared fan-out schema would
// otherwise reach the bound 200 times over: a 10 kB document made a
// 10 MB declaration, and seconds of work, per operation.
func TestWideSchemasBoundedPerTool(t *testing.T) {
	const wide = 200
	var props, params strings.Builder
	for p := range wide {
		if p > 0 {
			props.WriteString(",")
			params.WriteString(",")
		}
		fmt.Fprintf(&props, `"p%d":{"$ref":"#/components/schemas/S1"}`, p)
		fmt.Fprintf(&params, `{"name":"q%d","in":"query","content":{"application/json":{"schema":{"$ref":"#/components/schemas/S1"}}}}`, p)
	}
	var b strings.Builder
	fmt.Fprintf(&b, `{"openapi":"3.0.3","info":{"title":"wide","version":"1"},"paths":{`+
		`"/body":{"post":{"operationId":"body","requestBody":{"content":{"application/json":{"schema":{"$ref":"#/components/schemas/S0"}}}},"responses":{"200":{"description":"ok"}}}},`+
		`"/query":{"get":{"operationId":"query","parameters":[%s,{"name":"last","in":"query","schema":{"type":"integer"}}],"responses":{"200":{"description":"ok"}}}}},`+
		`"components":{"schemas":{"S0":{"type":"object","properties":{%s}}`, params.String(), props.String())
	b.WriteString(",")
	writeFanOut(&b, 1)
	b.WriteString("}}}")
	ts, err := openapitool.New(context.Background(), openapitool.Config{Spec: []byte(b.String()), BaseURL: "http://127.0.0.1:1"})
	if err != nil {
		t.Fatal(err)
	}
	tools := toolsByName(t, ts)
	for name, last := range map[string]string{"body": `"p199"`, "query": `"q199"`} {
		out, err := json.Marshal(tools[name].Declaration().ParametersJsonSchema)
		if err != nil {
			t.Fatal(err)
		}
		if len(out) > 1<<20 {
			t.Errorf("%s: a %d-byte document made a %d-byte declaration", name, b.Len(), len(out))
		}
		if !strings.Contains(string(out), last) {
			t.Errorf("%s: the declaration lost the argument %s", name, last)
		}
		// An argument past the bound keeps its type.
		if name == "query" && !strings.Contains(string(out), `"last":{"type":"integer"}`) {
			t.Errorf("query: the argument past the bound lost its type: ...%s", out[max(0, len(out)-200):])
		}
	}
}
