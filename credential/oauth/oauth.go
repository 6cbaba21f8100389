// Package oauth runs the OAuth2 authorization-code flow for tools, in
// ADK's shape: the tool asks for a token with [Token]; the first time, the
// runtime asks the client with adk_request_credential, whose auth config
// carries the authorization URL and a state; the client sends the user
// there and answers with the redirect URL the authorization server sent
// the user back to (exchangedAuthCredential.oauth2.authResponseUri, or
// authCode and state); the call runs again, and Token exchanges the code
// at the token URL, keeps the tokens for the user and returns them. Later
// calls, in any session of that user, get the kept token without asking,
// refreshed with its refresh token once it has expired; when the refresh
// fails the client is asked again.
//
// Tokens are kept in the runtime's credential service
// (runner.Config.Credentials), sealed under its key, per app, user and
// [Config.Name]; a runtime without one keeps nothing, and each call asks
// again. The client secret never leaves the tool's configuration: the
// request the client sees holds the client id, the authorization URL,
// the redirect URI and the state, and the exchange uses the tool's
// configuration, not the client's answer, for everything but the code.
//
// The state is the runtime's: a random value per request. An answer whose
// state is not the request's is refused before anything is stored (the
// ledger of pending calls asks [CheckAnswer]), and the request stays
// pending.
package oauth

import (
	"context"
	"crypto/rand"
	"crypto/subtle"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"golang.org/x/oauth2"

	"github.com/loomkit/loom/credential"
	"github.com/loomkit/loom/tool"
)

// ErrState is wrapped by the error of CheckAnswer for an answer whose state
// is not the request's.
var ErrState = errors.New("oauth: the authorization response's state is not the request's")

// DefaultTimeout bounds each request to the token URL when
// Config.HTTPClient is nil.
const DefaultTimeout = 30 * time.Second

// Config is one OAuth2 authorization a tool needs.
type Config struct {
	// Name keys the users' tokens in the credential service and is the
	// request's credentialKey; tools that share a Name share the tokens.
	// Required.
	Name string
	// OAuth2 is the client: ClientID, ClientSecret, Endpoint.AuthURL and
	// Endpoint.TokenURL (required), RedirectURL and Scopes. Without a
	// RedirectURL the redirect URI the client answers with is used (ADK's
	// clients may choose it).
	OAuth2 *oauth2.Config
	// HTTPClient makes the requests to the token URL; nil means a client
	// whose requests time out after DefaultTimeout.
	HTTPClient *http.Client
}

func (c Config) check() error {
	switch {
	case c.Name == "":
		return errors.New("oauth: Config.Name is required")
	case c.OAuth2 == nil || c.OAuth2.Endpoint.AuthURL == "" || c.OAuth2.Endpoint.TokenURL == "":
		return fmt.Errorf("oauth: %s: Config.OAuth2 needs an authorization URL and a token URL", c.Name)
	}
	return nil
}

var defaultClient = &http.Client{Timeout: DefaultTimeout}

func (c Config) context(ctx context.Context) context.Context {
	hc := c.HTTPClient
	if hc == nil {
		hc = defaultClient
	}
	return context.WithValue(ctx, oauth2.HTTPClient, hc)
}

// credentialContext is what Token needs of a tool context beyond
// tool.Context: the runtime's credential service (agent.CallbackContext
// has it).
type credentialContext interface {
	CredentialService() *credential.Service
}

// Token returns a token for the user of the call tc answers, in this
// order: the answer the client gave to this call's request, exchanged at
// the token URL; the user's kept token, refreshed first if it has
// expired; or none, after asking the client (tc.RequestCredential), in
// which case it returns nil and no error and the tool should return at
// once: the call runs again with the client's answer. A failed exchange,
// an answer without a code, or an authorization the user refused is an
// error the tool should return: its call is answered with it, and nothing
// kept is lost. A failed refresh forgets the kept token and asks again.
// It is safe for concurrent use; the calls of one user refresh one at a
// time within a process.
func Token(ctx context.Context, tc tool.Context, cfg Config) (*oauth2.Token, error) {
	if err := cfg.check(); err != nil {
		return nil, err
	}
	svc, key := serviceOf(tc, cfg)
	// An empty answer is what a call resumed after a restart gets (the
	// runtime keeps answers in memory only): it asks again.
	if answer := tc.Credential(); len(answer) > 0 {
		return exchange(cfg.context(ctx), svc, key, cfg, answer)
	}
	if tok, err := Kept(ctx, tc, cfg); tok != nil || err != nil {
		return tok, err
	}
	state, err := newState()
	if err != nil {
		return nil, err
	}
	tc.RequestCredential(AuthConfig(cfg, state))
	return nil, nil
}

// Kept returns the token kept for the user of tc under cfg.Name,
// refreshed first if it has expired, without asking the client: nil when
// there is none to use (none kept, no credential service, or a refresh
// the server refused, after which the kept token is forgotten). Token
// calls it; a tool that must not ask may call it alone.
func Kept(ctx context.Context, tc tool.Context, cfg Config) (*oauth2.Token, error) {
	if err := cfg.check(); err != nil {
		return nil, err
	}
	svc, key := serviceOf(tc, cfg)
	if svc == nil {
		return nil, nil
	}
	mu := lockFor(key)
	mu.Lock()
	defer mu.Unlock()
	return kept(cfg.context(ctx), svc, key, cfg)
}

// Forget forgets the token kept for the user of tc under cfg.Name, as
// when the API it opens answers 401: the next Token asks again.
func Forget(ctx context.Context, tc tool.Context, cfg Config) error {
	svc, key := serviceOf(tc, cfg)
	if svc == nil {
		return nil
	}
	return svc.Delete(ctx, key)
}

// Keeps reports whether the runtime of tc keeps users' tokens (it has a
// credential service, runner.Config.Credentials). Without one, a token
// lives as long as the caller holds it.
func Keeps(tc tool.Context) bool {
	svc, _ := serviceOf(tc, Config{})
	return svc != nil
}

// serviceOf returns the runtime's credential service, if tc reaches one,
// and the key of the user's token.
func serviceOf(tc tool.Context, cfg Config) (*credential.Service, credential.Key) {
	var svc *credential.Service
	if cc, ok := tc.(credentialContext); ok {
		svc = cc.CredentialService()
	}
	return svc, credential.Key{AppName: tc.AppName(), UserID: tc.UserID(), Name: cfg.Name}
}

// exchange trades the client's answer for tokens and keeps them.
func exchange(ctx context.Context, svc *credential.Service, key credential.Key, cfg Config, answer map[string]any) (*oauth2.Token, error) {
	resp, ok := ParseAnswer(answer)
	switch {
	case !ok:
		return nil, fmt.Errorf("oauth: %s: the client's answer holds no authorization response (exchangedAuthCredential.oauth2.authResponseUri or authCode)", cfg.Name)
	case resp.Error != "":
		return nil, fmt.Errorf("oauth: %s: the authorization was not granted: %s", cfg.Name, resp.Error)
	case resp.Code == "":
		return nil, fmt.Errorf("oauth: %s: the authorization response holds no code", cfg.Name)
	}
	var opts []oauth2.AuthCodeOption
	if cfg.OAuth2.RedirectURL == "" && resp.RedirectURI != "" {
		opts = append(opts, oauth2.SetAuthURLParam("redirect_uri", resp.RedirectURI))
	}
	tok, err := cfg.OAuth2.Exchange(ctx, resp.Code, opts...)
	if err != nil {
		return nil, fmt.Errorf("oauth: %s: exchanging the authorization code at the token URL: %s", cfg.Name, describe(err))
	}
	if svc != nil {
		if err := keep(ctx, svc, key, tok); err != nil {
			return nil, err
		}
	}
	return tok, nil
}

// kept returns the user's kept token, refreshed if it has expired, or nil
// when there is none to use (none kept, one that no longer opens, or one
// whose refresh failed: it is forgotten).
func kept(ctx context.Context, svc *credential.Service, key credential.Key, cfg Config) (*oauth2.Token, error) {
	b, err := svc.Get(ctx, key)
	switch {
	case errors.Is(err, credential.ErrNotFound), errors.Is(err, credential.ErrUnreadable):
		return nil, nil // asked again; the new token replaces an unreadable one
	case err != nil:
		return nil, fmt.Errorf("oauth: %s: %w", cfg.Name, err)
	}
	var tok oauth2.Token
	if err := json.Unmarshal(b, &tok); err != nil || tok.AccessToken == "" {
		return nil, svc.Delete(ctx, key)
	}
	if tok.Valid() {
		return &tok, nil
	}
	if tok.RefreshToken != "" {
		// An expired token with a refresh token: the token source
		// refreshes it (keeping the refresh token if the server sends
		// no new one).
		if fresh, err := cfg.OAuth2.TokenSource(ctx, &tok).Token(); err == nil {
			return fresh, keep(ctx, svc, key, fresh)
		}
	}
	return nil, svc.Delete(ctx, key)
}

func keep(ctx context.Context, svc *credential.Service, key credential.Key, tok *oauth2.Token) error {
	b, err := json.Marshal(tok)
	if err != nil {
		return err
	}
	if err := svc.Put(ctx, key, b); err != nil {
		return fmt.Errorf("oauth: %s: keeping the token: %w", key.Name, err)
	}
	return nil
}

// describe says why a token request failed: the status and RFC 6749's
// error code, not the response body or the error description, which the
// model and the session log would see and the server may fill with
// anything.
func describe(err error) string {
	var re *oauth2.RetrieveError
	if !errors.As(err, &re) {
		return err.Error()
	}
	s := "the token URL refused it"
	if re.Response != nil {
		s += fmt.Sprintf(" (status %d)", re.Response.StatusCode)
	}
	if re.ErrorCode != "" {
		s += ": " + re.ErrorCode
	}
	return s
}

// locks serialize the refreshes of one user's token within the process,
// so that two calls do not spend one refresh token twice.
var locks [64]sync.Mutex

func lockFor(k credential.Key) *sync.Mutex {
	h := fnv.New32a()
	for _, f := range []string{k.AppName, k.UserID, k.Name} {
		h.Write([]byte(f))
		h.Write([]byte{0})
	}
	return &locks[h.Sum32()%uint32(len(locks))]
}

func newState() (string, error) {
	var b [32]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", err
	}
	return base64.RawURLEncoding.EncodeToString(b[:]), nil
}

// AuthConfig returns the auth config of a request for cfg's authorization
// with the given state, in ADK's shape: the OAuth2 scheme
// (flows.authorizationCode with its URLs and scopes), the raw credential
// (client id and redirect URI, never the secret), the exchanged credential
// the client fills in (authUri, to send the user to, and state), and
// credentialKey, cfg.Name.
func AuthConfig(cfg Config, state string) map[string]any {
	o := cfg.OAuth2
	scopes := map[string]any{}
	for _, s := range o.Scopes {
		scopes[s] = ""
	}
	raw := map[string]any{"clientId": o.ClientID}
	if o.RedirectURL != "" {
		raw["redirectUri"] = o.RedirectURL
	}
	exchanged := map[string]any{
		"clientId": o.ClientID,
		"authUri":  o.AuthCodeURL(state, oauth2.AccessTypeOffline, oauth2.SetAuthURLParam("prompt", "consent")),
		"state":    state,
	}
	if o.RedirectURL != "" {
		exchanged["redirectUri"] = o.RedirectURL
	}
	return map[string]any{
		"authScheme": map[string]any{
			"type": "oauth2",
			"flows": map[string]any{"authorizationCode": map[string]any{
				"authorizationUrl": o.Endpoint.AuthURL,
				"tokenUrl":         o.Endpoint.TokenURL,
				"scopes":           scopes,
			}},
		},
		"rawAuthCredential":       map[string]any{"authType": "oauth2", "oauth2": raw},
		"exchangedAuthCredential": map[string]any{"authType": "oauth2", "oauth2": exchanged},
		"credentialKey":           cfg.Name,
	}
}

// Answer is the authorization response a client's answer carries.
type Answer struct {
	// Code is the authorization code; State the state the authorization
	// server sent back; Error its error parameter, if the user refused.
	Code, State, Error string
	// RedirectURI is the redirect URI the client says it used.
	RedirectURI string
}

// ParseAnswer reads the authorization response in a client's answer to a
// credential request: ADK's auth config (keys in camelCase or snake_case)
// whose exchangedAuthCredential.oauth2 holds authResponseUri, the URL the
// user was sent back to (its query, or for an implicit-style reply its
// fragment, holds code, state and error; the state is read from it
// alone), or else authCode and state. ok is false when the answer holds
// neither.
func ParseAnswer(answer map[string]any) (a Answer, ok bool) {
	o := oauth2Of(answer)
	if o == nil {
		return Answer{}, false
	}
	str := func(k string) string { s, _ := o[k].(string); return s }
	a.RedirectURI = str("redirecturi")
	if uri := str("authresponseuri"); uri != "" {
		u, err := url.Parse(uri)
		if err != nil {
			return a, true // an answer, without a code
		}
		q := u.Query()
		if q.Get("code") == "" && q.Get("error") == "" && u.Fragment != "" {
			q, _ = url.ParseQuery(u.Fragment)
		}
		// The state is the one the authorization server sent back, never
		// the request's, which the client echoes beside it.
		a.Code, a.State, a.Error = q.Get("code"), q.Get("state"), q.Get("error")
		return a, true
	}
	if code := str("authcode"); code != "" {
		a.Code, a.State = code, str("state")
		return a, true
	}
	return Answer{}, false
}

// oauth2Of returns the oauth2 object of an auth config's exchanged
// credential, its keys normalized (lower case, no underscores).
func oauth2Of(cfg map[string]any) map[string]any {
	ex, _ := normalize(cfg)["exchangedauthcredential"].(map[string]any)
	o, _ := ex["oauth2"].(map[string]any)
	return o
}

// RequestState returns the state of a request's auth config: the one the
// client must send back. It is "" for a request that names none.
func RequestState(authConfig map[string]any) string {
	s, _ := oauth2Of(authConfig)["state"].(string)
	return s
}

// CheckAnswer checks the client's answer to a credential request whose
// auth config is authConfig: when the request names a state (an OAuth2
// authorization the runtime started), the answer must hold an
// authorization response with that same state, or the error wraps
// ErrState. Requests without a state accept any answer.
func CheckAnswer(authConfig, answer map[string]any) error {
	want := RequestState(authConfig)
	if want == "" {
		return nil
	}
	a, ok := ParseAnswer(answer)
	if !ok {
		return fmt.Errorf("%w: the answer holds no authorization response", ErrState)
	}
	if subtle.ConstantTimeCompare([]byte(a.State), []byte(want)) != 1 {
		return fmt.Errorf("%w (credential %q)", ErrState, credentialKey(authConfig))
	}
	return nil
}

func credentialKey(authConfig map[string]any) string {
	s, _ := normalize(authConfig)["credentialkey"].(string)
	return s
}

// normalize returns a copy of m with its keys (at every depth) lower case
// and without underscores, so that camelCase and snake_case read alike.
func normalize(m map[string]any) map[string]any {
	out := make(map[string]any, len(m))
	for k, v := range m {
		if inner, ok := v.(map[string]any); ok {
			v = normalize(inner)
		}
		out[strings.ReplaceAll(strings.ToLower(k), "_", "")] = v
	}
	return out
}
