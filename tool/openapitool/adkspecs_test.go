package openapitool_test

import (
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/loomkit/loom/tool/openapitool"
)

// TestPathTemplateWithQuery: a path template holding a query string, as in
// the simulated pet store of ADK's documentation, keeps that query, its
// placeholders filled from the path parameters (query-escaped), next to
// the query parameters of the operation.
func TestPathTemplateWithQuery(t *testing.T) {
	var mu sync.Mutex
	var got []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		got = append(got, r.URL.EscapedPath()+"?"+r.URL.RawQuery)
		mu.Unlock()
		json.NewEncoder(w).Encode(map[string]any{"args": r.URL.Query()})
	}))
	t.Cleanup(srv.Close)
	spec := `{"openapi": "3.0.0", "info": {"title": "Simulated pets", "version": "1"}, "servers": [{"url": "` + srv.URL + `"}],
	  "paths": {
	    "/get?petId={petId}": {"get": {"operationId": "showPetById",
	      "parameters": [{"name": "petId", "in": "path", "required": true, "schema": {"type": "integer", "format": "int64"}}],
	      "responses": {"200": {"description": "ok"}}}},
	    "/find/{kind}?sort=name&q={q}": {"get": {"operationId": "findPets",
	      "parameters": [{"name": "kind", "in": "path", "required": true, "schema": {"type": "string"}},
	        {"name": "q", "in": "path", "required": true, "schema": {"type": "string"}},
	        {"name": "limit", "in": "query", "schema": {"type": "integer"}}],
	      "responses": {"200": {"description": "ok"}}}}}}`
	ts, err := openapitool.New(context.Background(), openapitool.Config{Spec: []byte(spec)})
	if err != nil {
		t.Fatal(err)
	}
	tools := toolsByName(t, ts)
	res, err := tools["show_pet_by_id"].Run(context.Background(), nil, map[string]any{"pet_id": 7})
	if err != nil {
		t.Fatal(err)
	}
	if args, _ := res["args"].(map[string]any); args == nil || args["petId"] == nil {
		t.Errorf("response %v, want the server to see petId", res)
	}
	if _, err := tools["find_pets"].Run(context.Background(), nil, map[string]any{"kind": "big cats", "q": "a&b=c", "limit": 2}); err != nil {
		t.Fatal(err)
	}
	want := []string{"/get?petId=7", "/find/big%20cats?limit=2&q=a%26b%3Dc&sort=name"}
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("requests %q, want %q", got, want)
	}
}

// TestSanitisedSpecs: documents ADK's parser loads after sanitising them
// load here too, each guess reported as a warning: schema types outside
// JSON Schema's seven ("Any", "Unknown") are dropped, known ones in another
// case are lower-cased, type lists keep their valid entries, and a missing
// info (or its title or version) is filled in, and so are missing paths. OpenAPI 3.1 keeps lists of
// types; 3.0, which has none, reads a list as nullable and anyOf.
func TestSanitisedSpecs(t *testing.T) {
	quiet := slog.New(slog.DiscardHandler)
	spec := `
openapi: 3.0.1
info: {description: Connector actions}
servers: [{url: 'http://api.example'}]
paths:
  /run:
    post:
      operationId: runAction
      parameters:
        - {name: mode, in: query, schema: {type: String}}
      requestBody:
        content:
          application/json:
            schema:
              type: object
              properties:
                payload: {type: Any, description: Anything at all.}
                rows: {type: array, items: {type: Unknown}}
                id: {type: [string, Any, integer, string]}
                junk: {type: [Any]}
      responses:
        '200':
          description: ok
          content:
            application/json:
              schema: {$ref: '#/components/schemas/Result'}
components:
  schemas:
    Result: {type: OBJECT, properties: {value: {type: Any}}}
`
	ts, err := openapitool.New(context.Background(), openapitool.Config{Spec: []byte(spec), Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	warnings := strings.Join(ts.Warnings(), "\n")
	for _, want := range []string{`"Any"`, `"Unknown"`, "info.title", "info.version"} {
		if !strings.Contains(warnings, want) {
			t.Errorf("warnings %q do not mention %s", warnings, want)
		}
	}
	d := toolsByName(t, ts)["run_action"].Declaration()
	b, _ := json.Marshal(d.ParametersJsonSchema)
	var got struct {
		Properties map[string]map[string]any
	}
	if err := json.Unmarshal(b, &got); err != nil {
		t.Fatal(err)
	}
	p := got.Properties
	if _, typed := p["payload"]["type"]; typed || p["payload"]["description"] != "Anything at all." {
		t.Errorf("payload %v, want no type and its description", p["payload"])
	}
	if items, _ := p["rows"]["items"].(map[string]any); p["rows"]["type"] != "array" || items == nil || items["type"] != nil {
		t.Errorf("rows %v, want an array of untyped items", p["rows"])
	}
	// OpenAPI 3.0 has no lists of types: several are alternatives.
	if alts, _ := json.Marshal(p["id"]["anyOf"]); string(alts) != `[{"type":"string"},{"type":"integer"}]` || p["id"]["type"] != nil {
		t.Errorf("id %v, want anyOf string, integer", p["id"])
	}
	if _, typed := p["junk"]["type"]; typed {
		t.Errorf("junk %v, want no type", p["junk"])
	}
	if p["mode"]["type"] != "string" {
		t.Errorf("mode %v, want type string", p["mode"])
	}

	spec31 := strings.Replace(strings.Replace(spec, "3.0.1", "3.1.0", 1), "info: {description: Connector actions}", "info: {title: t, version: '1'}", 1)
	ts31, err := openapitool.New(context.Background(), openapitool.Config{Spec: []byte(spec31), Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	b, _ = json.Marshal(toolsByName(t, ts31)["run_action"].Declaration().ParametersJsonSchema)
	if !strings.Contains(string(b), `"id":{"type":["string","integer"]}`) {
		t.Errorf("3.1 declaration %s, want id of type [string integer]", b)
	}
	if w := strings.Join(ts31.Warnings(), "\n"); strings.Contains(w, "info.") || !strings.Contains(w, `"Any"`) {
		t.Errorf("3.1 warnings %q", w)
	}

	// Nothing is guessed for a clean document.
	clean, err := openapitool.New(context.Background(), openapitool.Config{Spec: []byte(petSpec)})
	if err != nil {
		t.Fatal(err)
	}
	if w := clean.Warnings(); len(w) != 0 {
		t.Errorf("warnings for a clean document: %q", w)
	}
	// A document without paths has no operations.
	empty, err := openapitool.New(context.Background(), openapitool.Config{Spec: []byte(`{"openapi": "3.0.0", "info": {"title": "Integration"}}`), Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	if w := strings.Join(empty.Warnings(), "\n"); len(names(t, empty)) != 0 || !strings.Contains(w, "paths is missing") || !strings.Contains(w, "info.version") {
		t.Errorf("no paths: tools %v, warnings %q", names(t, empty), w)
	}
	// Still refused: what ADK cannot use either.
	if _, err := openapitool.New(context.Background(), openapitool.Config{Spec: []byte("openapi: 3.0.3\ninfo: {title: t, version: '1'}\npaths: []\n")}); err == nil {
		t.Error("paths as a list was accepted")
	}
}
