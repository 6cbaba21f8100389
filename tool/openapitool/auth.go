package openapitool

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"

	"github.com/getkin/kin-openapi/openapi3"
	"golang.org/x/oauth2"

	"github.com/loomkit/loom/credential/oauth"
	"github.com/loomkit/loom/tool"
)

// maxCachedCredentials bounds the credentials a toolset keeps from the
// credential flow; the oldest is dropped first.
const maxCachedCredentials = 1024

// authorization is what a call sends to authenticate.
type authorization struct {
	creds  map[string]Credential // by scheme name
	doc    *openapi3.T
	cached []credKey      // the credentials that came from the cache
	kept   []oauth.Config // the OAuth2 tokens kept for the user
}

// oauthConfigs checks Config.OAuth2 against the document and returns the
// flow of each scheme it names.
func (ts *Toolset) oauthConfigs() (map[string]oauth.Config, error) {
	out := map[string]oauth.Config{}
	for name, c := range ts.cfg.OAuth2 {
		var flow *openapi3.OAuthFlow
		if ref := ts.doc.Components.SecuritySchemes[name]; ref != nil && ref.Value != nil && ref.Value.Type == "oauth2" && ref.Value.Flows != nil {
			flow = ref.Value.Flows.AuthorizationCode
		}
		if flow == nil || flow.AuthorizationURL == "" || flow.TokenURL == "" {
			return nil, fmt.Errorf("%w: OAuth2 names %q, which is not an oauth2 scheme of the document with an authorizationCode flow", ErrInvalidConfig, name)
		}
		out[name] = oauth.Config{
			Name: ts.cfg.Name + ":" + name,
			OAuth2: &oauth2.Config{
				ClientID: c.ClientID, ClientSecret: c.ClientSecret, RedirectURL: c.RedirectURL,
				Endpoint: oauth2.Endpoint{AuthURL: flow.AuthorizationURL, TokenURL: flow.TokenURL},
				Scopes:   slices.Sorted(maps.Keys(flow.Scopes)),
			},
			HTTPClient: ts.cfg.HTTPClient,
		}
	}
	return out, nil
}

// resolveAfterAnswer resolves the call's credentials once the client's
// answer is kept: a requirement with a scheme still missing is an error.
func (t *opTool) resolveAfterAnswer(ctx context.Context, tc tool.Context) (authorization, bool, error) {
	auth, ok, err := t.resolve(ctx, tc)
	if ok || err != nil {
		return auth, false, err
	}
	name, err := t.missingScheme(ctx, tc)
	if err != nil {
		return auth, false, err
	}
	return auth, false, fmt.Errorf("security scheme %q needs a credential too; set it in the toolset's Credentials", name)
}

// authorize finds the credentials of a call: for the first security
// requirement all of whose schemes have one, from the configuration or
// from an earlier answer of the client in the same session. When none is
// complete it takes the client's answer to this call's credential request,
// or asks the client (asked is true) unless asking is turned off.
func (t *opTool) authorize(ctx context.Context, tc tool.Context) (auth authorization, asked bool, err error) {
	auth.doc = t.ts.doc
	if len(t.security) == 0 {
		return auth, false, nil
	}
	if auth, ok, err := t.resolve(ctx, tc); ok || err != nil {
		return auth, false, err
	}
	name, err := t.missingScheme(ctx, tc)
	if err != nil {
		return auth, false, err
	}
	if oc, ok := t.ts.oauth[name]; ok && tc != nil && (tc.Credential() != nil || !t.ts.cfg.NoCredentialRequests) {
		// The authorization-code flow: the answer exchanged, or the
		// client asked.
		tok, err := oauth.Token(ctx, tc, oc)
		if tok == nil {
			return auth, err == nil, err
		}
		if !oauth.Keeps(tc) {
			// A runtime that keeps no tokens: the toolset's memory
			// keeps it for the session, as it keeps other answers.
			t.ts.creds.put(keyOf(tc, t.ts.cfg.Name, name), Credential{Token: tok.AccessToken})
		}
		return t.resolveAfterAnswer(ctx, tc)
	}
	if tc != nil && tc.Credential() != nil {
		cred := parseCredential(tc.Credential())
		if cred == (Credential{}) {
			return auth, false, fmt.Errorf("the credential received for security scheme %q holds no API key, token or user name", name)
		}
		t.ts.creds.put(keyOf(tc, t.ts.cfg.Name, name), cred)
		return t.resolveAfterAnswer(ctx, tc)
	}
	if tc == nil || t.ts.cfg.NoCredentialRequests {
		return auth, false, fmt.Errorf("security scheme %q needs a credential and none is configured", name)
	}
	tc.RequestCredential(t.authConfig(name))
	return auth, true, nil
}

// resolve returns the credentials of the first security requirement that
// can be met without asking.
func (t *opTool) resolve(ctx context.Context, tc tool.Context) (authorization, bool, error) {
	for _, req := range t.security {
		auth := authorization{creds: map[string]Credential{}, doc: t.ts.doc}
		complete := true
		for _, name := range slices.Sorted(maps.Keys(req)) {
			c, from, err := t.known(ctx, tc, name)
			if err != nil {
				return authorization{}, false, err
			}
			switch from {
			case fromNowhere:
				complete = false
			case fromKept:
				auth.kept = append(auth.kept, t.ts.oauth[name])
			case fromCache:
				auth.cached = append(auth.cached, keyOf(tc, t.ts.cfg.Name, name))
			}
			if !complete {
				break
			}
			auth.creds[name] = c
		}
		if complete {
			return auth, true, nil
		}
	}
	return authorization{}, false, nil
}

// Where a scheme's credential comes from.
const (
	fromNowhere = iota
	fromConfig
	fromKept  // an OAuth2 token kept for the user (Config.OAuth2)
	fromCache // the client's answer, in the toolset's memory
)

// known returns the credential of a scheme that needs no asking, and where
// it comes from.
func (t *opTool) known(ctx context.Context, tc tool.Context, name string) (Credential, int, error) {
	if !supported(t.scheme(name)) {
		return Credential{}, fromNowhere, nil
	}
	if c, ok := t.ts.cfg.Credentials[name]; ok {
		return c, fromConfig, nil
	}
	if tc == nil {
		return Credential{}, fromNowhere, nil
	}
	if oc, ok := t.ts.oauth[name]; ok && oauth.Keeps(tc) {
		// The runtime keeps the user's tokens: they are the only source.
		tok, err := oauth.Kept(ctx, tc, oc)
		if err != nil || tok == nil {
			return Credential{}, fromNowhere, err
		}
		return Credential{Token: tok.AccessToken}, fromKept, nil
	}
	if c, ok := t.ts.creds.get(keyOf(tc, t.ts.cfg.Name, name)); ok {
		return c, fromCache, nil
	}
	return Credential{}, fromNowhere, nil
}

// missingScheme names the scheme to ask for: the first one without a
// credential in the first requirement whose schemes are all supported.
func (t *opTool) missingScheme(ctx context.Context, tc tool.Context) (string, error) {
	var unsupported []string
	for _, req := range t.security {
		names := slices.Sorted(maps.Keys(req))
		if i := slices.IndexFunc(names, func(n string) bool { return !supported(t.scheme(n)) }); i >= 0 {
			unsupported = append(unsupported, names[i])
			continue
		}
		for _, name := range names {
			_, from, err := t.known(ctx, tc, name)
			if err != nil {
				return "", err
			}
			if from == fromNowhere {
				return name, nil
			}
		}
	}
	return "", fmt.Errorf("no supported security scheme: %s (supported: apiKey, http bearer and basic, oauth2 and openIdConnect tokens)", strings.Join(unsupported, ", "))
}

// scheme returns a security scheme of the document by name.
func (t *opTool) scheme(name string) *openapi3.SecurityScheme {
	ref := t.ts.doc.Components.SecuritySchemes[name]
	if ref == nil {
		return nil
	}
	return ref.Value
}

// supported reports whether a call can authenticate with a scheme.
func supported(s *openapi3.SecurityScheme) bool {
	if s == nil {
		return false
	}
	switch s.Type {
	case "apiKey":
		return s.In == "header" || s.In == "query" || s.In == "cookie"
	case "http":
		return strings.EqualFold(s.Scheme, "bearer") || strings.EqualFold(s.Scheme, "basic")
	case "oauth2", "openIdConnect":
		return true
	}
	return false
}

// authConfig describes a scheme to the client asking for its credential,
// in the shape of ADK's auth config.
func (t *opTool) authConfig(name string) map[string]any {
	scheme := map[string]any{}
	if b, err := json.Marshal(t.scheme(name)); err == nil {
		_ = json.Unmarshal(b, &scheme)
	}
	return map[string]any{
		"authScheme":    scheme,
		"credentialKey": t.ts.cfg.Name + ":" + name,
	}
}

// apply adds the credentials to a request and returns the cookies they
// need.
func (a authorization) apply(req *http.Request, query url.Values) []string {
	var cookies []string
	for _, name := range slices.Sorted(maps.Keys(a.creds)) {
		c := a.creds[name]
		s := a.doc.Components.SecuritySchemes[name].Value
		switch s.Type {
		case "apiKey":
			key := first(c.APIKey, c.Token)
			switch s.In {
			case "header":
				req.Header.Set(s.Name, key)
			case "query":
				query.Set(s.Name, key)
			case "cookie":
				cookies = append(cookies, s.Name+"="+cookieValue(key))
			}
		case "http":
			if strings.EqualFold(s.Scheme, "basic") {
				req.SetBasicAuth(c.Username, c.Password)
			} else {
				req.Header.Set("Authorization", "Bearer "+first(c.Token, c.APIKey))
			}
		default: // oauth2, openIdConnect
			req.Header.Set("Authorization", "Bearer "+first(c.Token, c.APIKey))
		}
	}
	return cookies
}

func first(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// parseCredential reads a client's answer to a credential request. It
// accepts a flat object ({"apiKey": ...}, {"token": ...},
// {"username": ..., "password": ...}) and ADK's auth config, whose
// exchangedAuthCredential or rawAuthCredential holds "apiKey",
// "http.credentials.token" (or username and password) or
// "oauth2.accessToken"; keys may be in camelCase or snake_case.
func parseCredential(answer map[string]any) Credential {
	m := normalize(answer)
	for _, key := range []string{"exchangedauthcredential", "rawauthcredential"} {
		if inner, ok := m[key].(map[string]any); ok {
			if c := credentialFrom(inner); c != (Credential{}) {
				return c
			}
		}
	}
	return credentialFrom(m)
}

// credentialFrom reads one credential object with normalized keys.
func credentialFrom(m map[string]any) Credential {
	str := func(m map[string]any, key string) string {
		s, _ := m[key].(string)
		return s
	}
	c := Credential{
		APIKey:   str(m, "apikey"),
		Token:    first(str(m, "token"), first(str(m, "accesstoken"), str(m, "bearertoken"))),
		Username: str(m, "username"),
		Password: str(m, "password"),
	}
	if h, ok := m["http"].(map[string]any); ok {
		if hc, ok := h["credentials"].(map[string]any); ok {
			c.Token = first(c.Token, str(hc, "token"))
			c.Username = first(c.Username, str(hc, "username"))
			c.Password = first(c.Password, str(hc, "password"))
		}
	}
	if o, ok := m["oauth2"].(map[string]any); ok {
		c.Token = first(c.Token, str(o, "accesstoken"))
	}
	return c
}

// normalize returns a copy of m with its keys (at every depth) lower case
// and without underscores and hyphens.
func normalize(m map[string]any) map[string]any {
	out := make(map[string]any, len(m))
	for k, v := range m {
		if inner, ok := v.(map[string]any); ok {
			v = normalize(inner)
		}
		out[strings.NewReplacer("_", "", "-", "").Replace(strings.ToLower(k))] = v
	}
	return out
}

// credKey identifies a credential the client gave: per session and scheme.
type credKey struct {
	toolset, app, user, session, scheme string
}

func keyOf(tc tool.Context, toolset, scheme string) credKey {
	return credKey{toolset: toolset, app: tc.AppName(), user: tc.UserID(), session: tc.SessionID(), scheme: scheme}
}

// credentialCache keeps the credentials clients gave, in memory only,
// bounded: the oldest entry goes first.
type credentialCache struct {
	mu    sync.Mutex
	max   int
	m     map[credKey]Credential
	order []credKey
}

func newCredentialCache(max int) *credentialCache {
	return &credentialCache{max: max, m: map[credKey]Credential{}}
}

func (c *credentialCache) get(k credKey) (Credential, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	v, ok := c.m[k]
	return v, ok
}

func (c *credentialCache) put(k credKey, v Credential) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.m[k]; !ok {
		c.order = append(c.order, k)
	}
	c.m[k] = v
	for len(c.order) > c.max {
		delete(c.m, c.order[0])
		c.order = c.order[1:]
	}
}

func (c *credentialCache) forget(keys []credKey) {
	if len(keys) == 0 {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, k := range keys {
		delete(c.m, k)
		if i := slices.Index(c.order, k); i >= 0 {
			c.order = slices.Delete(c.order, i, i+1)
		}
	}
}

// AuthSchemeName is the name Config.AuthScheme takes among the document's
// security schemes (replacing one the document names so).
const AuthSchemeName = "auth_scheme"

// applyAuthScheme makes scheme the one security requirement of every
// operation of doc.
func applyAuthScheme(ctx context.Context, doc *openapi3.T, scheme map[string]any) error {
	b, err := json.Marshal(scheme)
	if err != nil {
		return fmt.Errorf("%w: AuthScheme: %w", ErrInvalidConfig, err)
	}
	var s openapi3.SecurityScheme
	if err := json.Unmarshal(b, &s); err != nil {
		return fmt.Errorf("%w: AuthScheme: %w", ErrInvalidConfig, err)
	}
	if err := s.Validate(ctx); err != nil {
		return fmt.Errorf("%w: AuthScheme: %w", ErrInvalidConfig, err)
	}
	if doc.Components == nil {
		doc.Components = &openapi3.Components{}
	}
	if doc.Components.SecuritySchemes == nil {
		doc.Components.SecuritySchemes = openapi3.SecuritySchemes{}
	}
	doc.Components.SecuritySchemes[AuthSchemeName] = &openapi3.SecuritySchemeRef{Value: &s}
	doc.Security = openapi3.SecurityRequirements{{AuthSchemeName: []string{}}}
	if doc.Paths != nil {
		for _, item := range doc.Paths.Map() {
			for _, op := range item.Operations() {
				op.Security = nil
			}
		}
	}
	return nil
}
