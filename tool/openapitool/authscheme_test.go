package openapitool_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/loomkit/loom/tool/openapitool"
)

// TestAuthSchemeReplacesTheDocuments: Config.AuthScheme is the one
// requirement of every operation, whatever the document states, and its
// credential is keyed by AuthSchemeName; a scheme that is not a valid
// Security Scheme Object is refused.
func TestAuthSchemeReplacesTheDocuments(t *testing.T) {
	var gotAuth, gotKey string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		gotAuth, gotKey = r.Header.Get("Authorization"), r.Header.Get("X-Key")
		fmt.Fprint(w, `{"ok":true}`)
	}))
	defer srv.Close()
	spec := fmt.Sprintf(`{"openapi": "3.0.3", "info": {"title": "t", "version": "1"}, "servers": [{"url": %q}],
  "components": {"securitySchemes": {"key": {"type": "apiKey", "in": "header", "name": "X-Key"}}},
  "paths": {"/ping": {"get": {"operationId": "ping", "security": [{"key": []}], "responses": {"200": {"description": "ok"}}}}}}`, srv.URL)
	ctx := context.Background()
	ts, err := openapitool.New(ctx, openapitool.Config{Spec: []byte(spec),
		AuthScheme:  map[string]any{"type": "http", "scheme": "bearer"},
		Credentials: map[string]openapitool.Credential{openapitool.AuthSchemeName: {Token: "tok"}, "key": {APIKey: "k"}}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := toolsByName(t, ts)["ping"].Run(ctx, nil, nil); err != nil {
		t.Fatal(err)
	}
	if gotAuth != "Bearer tok" || gotKey != "" {
		t.Errorf("Authorization %q, X-Key %q; want the auth scheme's bearer token alone", gotAuth, gotKey)
	}
	_, err = openapitool.New(ctx, openapitool.Config{Spec: []byte(spec), AuthScheme: map[string]any{"type": "password"}})
	if !errors.Is(err, openapitool.ErrInvalidConfig) {
		t.Errorf("an invalid scheme: err = %v, want ErrInvalidConfig", err)
	}
}
