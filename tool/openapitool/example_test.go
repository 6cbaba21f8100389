package openapitool_test

import (
	"context"
	"fmt"
	"github.com/loomkit/loom/tool"
	"log"
	"log/slog"
	"net/http"
	"net/http/httptest"

	"github.com/loomkit/loom/tool/openapitool"
)

// This example makes tools from a small OpenAPI document and calls one.
// A real agent gets the toolset through llmagent.Config.Toolsets, and the
// model makes the calls.
func Example() {
	api := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("X-API-Key") != "secret" {
			http.Error(w, "who are you?", http.StatusUnauthorized)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"city": %q, "celsius": 21}`, r.URL.Query().Get("city"))
	}))
	defer api.Close()

	spec := `
openapi: 3.0.3
info: {title: Weather, version: "1"}
security: [{key: []}]
components:
  securitySchemes:
    key: {type: apiKey, in: header, name: X-API-Key}
paths:
  /weather:
    get:
      operationId: getWeather
      description: Current weather of a city.
      parameters:
        - {name: city, in: query, required: true, schema: {type: string}}
      responses: {"200": {description: The weather.}}
`
	ctx := context.Background()
	weather, err := openapitool.New(ctx, openapitool.Config{
		Spec:        []byte(spec),
		BaseURL:     api.URL,
		Credentials: map[string]openapitool.Credential{"key": {APIKey: "secret"}},
	})
	if err != nil {
		log.Fatal(err)
	}
	tools, err := weather.Tools(ctx)
	if err != nil {
		log.Fatal(err)
	}
	for _, t := range tools {
		fmt.Printf("%s: %s %v\n", t.Name(), t.Description(), t.(tool.Function).Declaration().ParametersJsonSchema)
	}
	res, err := tools[0].(tool.Function).Run(ctx, nil, map[string]any{"city": "Oslo"})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(res)
	// Output:
	// get_weather: Current weather of a city. map[properties:map[city:map[type:string]] required:[city] type:object]
	// map[celsius:21 city:Oslo]
}

// This example loads a document as ADK's parser would after sanitising it:
// a connector's "Any" type and a missing title. Each guess is a warning.
func ExampleToolset_Warnings() {
	spec := `{"openapi": "3.0.1", "info": {"version": "1"}, "servers": [{"url": "http://connectors.example"}],
	  "paths": {"/run": {"post": {"operationId": "runAction",
	    "requestBody": {"content": {"application/json": {"schema": {"type": "object",
	      "properties": {"payload": {"type": "Any"}}}}}},
	    "responses": {"200": {"description": "ok"}}}}}}`
	ts, err := openapitool.New(context.Background(), openapitool.Config{Spec: []byte(spec), Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		log.Fatal(err)
	}
	for _, w := range ts.Warnings() {
		fmt.Println(w)
	}
	// Output:
	// info.title is missing: the document is titled "untitled"
	// #/paths/~1run/post/requestBody/content/application~1json/schema/properties/payload: schema type "Any" is not a JSON Schema type: the schema is left untyped
}

// This example gives every operation one security scheme of the caller's
// (ADK's auth_scheme), whatever the document states: its credential is
// keyed by AuthSchemeName.
func ExampleConfig_authScheme() {
	api := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, `{"authorization": %q}`, r.Header.Get("Authorization"))
	}))
	defer api.Close()
	spec := `{"openapi": "3.0.3", "info": {"title": "Echo", "version": "1"},
	  "paths": {"/echo": {"get": {"operationId": "echo", "responses": {"200": {"description": "ok"}}}}}}`
	ctx := context.Background()
	ts, err := openapitool.New(ctx, openapitool.Config{
		Spec:        []byte(spec),
		BaseURL:     api.URL,
		AuthScheme:  map[string]any{"type": "http", "scheme": "bearer"},
		Credentials: map[string]openapitool.Credential{openapitool.AuthSchemeName: {Token: "t0k3n"}},
	})
	if err != nil {
		log.Fatal(err)
	}
	tools, err := ts.Tools(ctx)
	if err != nil {
		log.Fatal(err)
	}
	res, err := tools[0].(tool.Function).Run(ctx, nil, nil)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(res)
	// Output:
	// map[authorization:Bearer t0k3n]
}
