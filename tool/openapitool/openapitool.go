// Package openapitool turns the operations of an HTTP API described by an
// OpenAPI 3.x document into Loom tools.
//
// # Tools
//
// [New] loads the document (from bytes, a file or a URL, in JSON or YAML),
// resolves its local $ref references and makes one tool per operation. The
// tool's name is the operation id in snake_case ("listPets" becomes
// "list_pets"), cut to 60 characters; an operation without an id is named
// from its path and method ("/pets/{petId}" GET becomes "pets_pet_id_get").
// A name an earlier operation (by path, then method) already has gets a
// suffix ("get_pet_2"), whether or not the filters keep that operation, so
// names do not change with the filters. The description is the operation's description, or its summary.
//
// The function declaration's parameters are a JSON schema with one property
// per OpenAPI parameter (path, query, header and cookie), named in
// snake_case and carrying the parameter's schema and description. A request
// body whose schema is an object with properties contributes one property
// per body property; an array body is the argument "array"; any other body
// is the argument "body". Read-only body properties are left out. Names
// that collide get a suffix (_0, _1, ...). Required parameters, and the
// required properties of a required body, are listed as required.
//
// # Calls
//
// A call builds the HTTP request from the arguments: path parameters are
// escaped into the path, query parameters are added to the query string
// (arrays repeated, or joined with commas when explode is false), header and
// cookie parameters are set, and the body is sent as JSON (or, when the
// operation accepts no JSON, as a form, as text or as it is). A missing
// required argument or an argument the operation does not have is an error
// the model can read, and no request is sent; so is a path parameter that is
// empty or holds a "." or ".." segment, which would move the request to
// another path, and a header value with a control character such as CR or
// LF, which would add a header (cookie values are percent-encoded).
//
// A 2xx response becomes the function response: a JSON object as is, other
// JSON under "result", text under "text", and an empty body as
// {"status_code": N}. Any other status is returned as an [*HTTPError] (the
// model sees {"error": "..."} with the status and the start of the body).
// Responses larger than [Config.MaxResponseBytes] are refused with an
// error, and each call is bounded by [Config.Timeout].
//
// # Lenient documents
//
// Documents that ADK's own parser accepts after sanitising them load here
// too, and each guess is reported by [Toolset.Warnings] (and logged to
// [Config.Logger]): in schemas, a type in another case ("String") is
// lower-cased, a type that is not one of JSON Schema's seven ("Any",
// "Unknown") is dropped, leaving the schema untyped, and a list of types
// keeps its valid entries; a missing info, info.title or info.version is
// filled in, and a document without paths has no operations. A path template may carry a query string
// ("/get?petId={petId}"): it is sent with the request, its placeholders
// filled from path parameters.
//
// # Authentication
//
// The security requirements of each operation (or of the document) are
// honoured for apiKey schemes (header, query or cookie) and for http bearer
// and basic schemes; oauth2 and openIdConnect schemes take an access token
// sent as a bearer token. A call uses the first requirement it has every
// credential for. Credentials come from [Config.Credentials], keyed by
// security scheme name. When a call needs a credential that is not
// configured, the tool asks the client through Loom's credential flow
// (adk_request_credential, see tool.Context.RequestCredential, with the
// scheme under "authScheme") and runs again with the answer. The client
// answers with {"apiKey": ...}, {"token": ...}, {"username": ...,
// "password": ...} or ADK's auth config holding an exchangedAuthCredential.
// The answer is kept in the toolset's memory for the rest of the session
// (and dropped on a 401 response), never in events or state.
//
// An oauth2 scheme whose client is in [Config.OAuth2] goes through the
// authorization-code flow instead (credential/oauth): the client is asked
// to send the user to the flow's authorizationUrl, its answer (the redirect
// URL) is exchanged at the tokenUrl, and the user's tokens are kept in the
// runtime's credential service, refreshed when they expire and forgotten on
// a 401 response.
package openapitool

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/getkin/kin-openapi/openapi3"

	"github.com/loomkit/loom/credential/oauth"
	"github.com/loomkit/loom/tool"
)

// DefaultTimeout bounds one call (and the loading of a spec from a URL) when
// Config.Timeout is zero.
const DefaultTimeout = 30 * time.Second

// DefaultMaxResponseBytes is the largest response body a call accepts when
// Config.MaxResponseBytes is zero.
const DefaultMaxResponseBytes = 1 << 20

// maxResponseBytes is the largest Config.MaxResponseBytes.
const maxResponseBytes = 1 << 40

// maxSpecBytes bounds the size of a spec read from a file or URL.
const maxSpecBytes = 16 << 20

// ErrInvalidConfig is returned by New for a configuration it cannot use.
var ErrInvalidConfig = errors.New("openapitool: invalid config")

// ErrInvalidSpec is returned by New for a document that is not a usable
// OpenAPI 3.x document.
var ErrInvalidSpec = errors.New("openapitool: invalid spec")

// Config configures a Toolset. Exactly one of Spec, SpecFile and SpecURL
// must be set.
type Config struct {
	// Name identifies the toolset; it defaults to "openapi".
	Name string

	// Spec is the OpenAPI document itself, JSON or YAML.
	Spec []byte
	// SpecFile is the path of a file holding the document.
	SpecFile string
	// SpecURL is an http or https URL the document is fetched from (with
	// HTTPClient, within Timeout). A relative server URL in the document is
	// resolved against it.
	SpecURL string

	// BaseURL, if set, replaces the server URLs of the document: every
	// operation path is appended to it.
	BaseURL string
	// HTTPClient makes the requests; nil means a client of the toolset's
	// own, which follows redirects only within the same host.
	HTTPClient *http.Client
	// Headers are added to every API request (not to the fetching of the
	// spec).
	Headers map[string]string
	// Timeout bounds each call, from sending the request to reading the
	// whole response. Zero means DefaultTimeout; negative means no limit
	// beyond the caller's context.
	Timeout time.Duration
	// MaxResponseBytes bounds the response body of a call; a larger one is
	// an error. Zero means DefaultMaxResponseBytes.
	MaxResponseBytes int64

	// AuthScheme, if set, is the security scheme of every operation, in
	// place of the requirements the document states (ADK's auth_scheme):
	// an OpenAPI Security Scheme Object, as decoded from JSON or YAML
	// ({"type": "oauth2", "flows": {"authorizationCode": {...}}}, say). It
	// joins the document's schemes as AuthSchemeName, the key of its entry
	// in Credentials or OAuth2.
	AuthScheme map[string]any

	// Credentials holds the credentials of security schemes, keyed by the
	// scheme's name in components.securitySchemes. A scheme without an
	// entry is asked for through the credential flow.
	Credentials map[string]Credential
	// OAuth2 holds the clients of oauth2 security schemes with an
	// authorizationCode flow, keyed by scheme name: for those schemes the
	// toolset signs each user in itself (credential/oauth), asking the
	// client for the authorization, exchanging the code at the flow's
	// tokenUrl, and keeping the user's tokens in the runtime's credential
	// service (refreshed when they expire) rather than in its memory.
	OAuth2 map[string]OAuth2Client
	// NoCredentialRequests turns off asking the client for credentials: a
	// call that needs one not in Credentials fails with an error instead.
	NoCredentialRequests bool

	// Operations, if not empty, keeps only the operations whose operation
	// id or tool name is listed.
	Operations []string
	// Tags, if not empty, keeps only the operations with at least one of
	// these tags.
	Tags []string
	// Filter, if set, keeps only the operations for which it returns true.
	// All filters apply together.
	Filter func(Operation) bool
	// NamePrefix is prepended to every tool name.
	NamePrefix string

	// Logger receives a warning for each guess New makes loading a
	// lenient document (see Toolset.Warnings); nil means slog.Default().
	Logger *slog.Logger
}

// Credential is the secret of one security scheme. Set the field its scheme
// uses: APIKey for apiKey schemes, Token for http bearer, oauth2 and
// openIdConnect schemes, Username and Password for http basic.
type Credential struct {
	APIKey   string
	Token    string
	Username string
	Password string
}

// OAuth2Client is the OAuth2 client of a security scheme (Config.OAuth2).
type OAuth2Client struct {
	ClientID     string
	ClientSecret string
	// RedirectURL is the redirect URI registered with the authorization
	// server; empty means the one the client answers with.
	RedirectURL string
}

// Operation describes one operation of the document, as seen by
// Config.Filter.
type Operation struct {
	// ToolName is the name of the tool made from the operation.
	ToolName string
	// ID is the operation id; it is empty when the document gives none.
	ID string
	// Method is the HTTP method, upper case.
	Method string
	// Path is the path template, such as "/pets/{petId}".
	Path string
	// Tags are the operation's tags.
	Tags []string
	// Summary and Description are the operation's texts.
	Summary     string
	Description string
}

// Toolset is a tool.Toolset with one tool per operation of an OpenAPI
// document. It is safe for concurrent use.
type Toolset struct {
	cfg   Config
	doc   *openapi3.T
	http  *http.Client
	tools []tool.Tool
	creds *credentialCache
	oauth map[string]oauth.Config // by scheme name (Config.OAuth2)
	// warnings are the guesses made loading the document.
	warnings []string
}

var _ tool.Toolset = (*Toolset)(nil)

// New loads the document cfg names and builds its tools. A document that
// cannot be read, parsed or validated, or that has no usable server URL,
// is an error wrapping ErrInvalidSpec.
func New(ctx context.Context, cfg Config) (*Toolset, error) {
	n := 0
	for _, set := range []bool{cfg.Spec != nil, cfg.SpecFile != "", cfg.SpecURL != ""} {
		if set {
			n++
		}
	}
	if n != 1 {
		return nil, fmt.Errorf("%w: exactly one of Spec, SpecFile and SpecURL must be set", ErrInvalidConfig)
	}
	if cfg.MaxResponseBytes < 0 || cfg.MaxResponseBytes > maxResponseBytes {
		return nil, fmt.Errorf("%w: MaxResponseBytes %d is not between 0 and %d", ErrInvalidConfig, cfg.MaxResponseBytes, int64(maxResponseBytes))
	}
	if cfg.Name == "" {
		cfg.Name = "openapi"
	}
	if cfg.Timeout == 0 {
		cfg.Timeout = DefaultTimeout
	}
	if cfg.MaxResponseBytes == 0 {
		cfg.MaxResponseBytes = DefaultMaxResponseBytes
	}
	cfg.Operations = slices.Clone(cfg.Operations)
	cfg.Tags = slices.Clone(cfg.Tags)
	ts := &Toolset{cfg: cfg, http: cfg.HTTPClient, creds: newCredentialCache(maxCachedCredentials)}
	if ts.http == nil {
		ts.http = defaultClient()
	}
	data, base, err := ts.readSpec(ctx)
	if err != nil {
		return nil, err
	}
	data, ts.warnings = sanitize(data)
	logger := cfg.Logger
	if logger == nil {
		logger = slog.Default()
	}
	for _, w := range ts.warnings {
		logger.Warn("openapitool: "+w, "toolset", cfg.Name)
	}
	doc, err := parseSpec(ctx, data)
	if err != nil {
		return nil, err
	}
	ts.doc = doc
	if cfg.AuthScheme != nil {
		if err := applyAuthScheme(ctx, doc, cfg.AuthScheme); err != nil {
			return nil, err
		}
	}
	if ts.oauth, err = ts.oauthConfigs(); err != nil {
		return nil, err
	}
	if ts.tools, err = ts.build(base); err != nil {
		return nil, err
	}
	return ts, nil
}

// Name implements tool.Toolset.
func (ts *Toolset) Name() string { return ts.cfg.Name }

// Tools implements tool.Toolset: the tools of the operations that pass the
// filters, by path (sorted) and then by method (GET, POST, PUT, DELETE,
// PATCH, HEAD, OPTIONS, TRACE). They are made once, by New.
func (ts *Toolset) Tools(context.Context) ([]tool.Tool, error) {
	return slices.Clone(ts.tools), nil
}

// readSpec returns the document's bytes and the URL relative server URLs
// are resolved against (nil when there is none).
func (ts *Toolset) readSpec(ctx context.Context) ([]byte, *url.URL, error) {
	switch {
	case ts.cfg.Spec != nil:
		return ts.cfg.Spec, nil, nil
	case ts.cfg.SpecFile != "":
		f, err := os.Open(ts.cfg.SpecFile)
		if err != nil {
			return nil, nil, fmt.Errorf("%w: %w", ErrInvalidSpec, err)
		}
		defer f.Close()
		data, err := readLimited(f, maxSpecBytes)
		if err != nil {
			return nil, nil, fmt.Errorf("%w: %s: %w", ErrInvalidSpec, ts.cfg.SpecFile, err)
		}
		return data, nil, nil
	}
	u, err := url.Parse(ts.cfg.SpecURL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, nil, fmt.Errorf("%w: SpecURL %q is not an http or https URL", ErrInvalidConfig, ts.cfg.SpecURL)
	}
	if ts.cfg.Timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, ts.cfg.Timeout)
		defer cancel()
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return nil, nil, fmt.Errorf("%w: %w", ErrInvalidConfig, err)
	}
	req.Header.Set("Accept", "application/json, application/yaml, text/yaml, */*")
	resp, err := ts.http.Do(req)
	if err != nil {
		return nil, nil, fmt.Errorf("%w: fetch %s: %w", ErrInvalidSpec, redactURL(u), transportCause(err))
	}
	defer resp.Body.Close()
	data, err := readLimited(resp.Body, maxSpecBytes)
	if err != nil {
		return nil, nil, fmt.Errorf("%w: fetch %s: %w", ErrInvalidSpec, redactURL(u), err)
	}
	if resp.StatusCode != http.StatusOK {
		return nil, nil, fmt.Errorf("%w: fetch %s: HTTP %s: %s", ErrInvalidSpec, redactURL(u), resp.Status, excerpt(data))
	}
	return data, u, nil
}

// parseSpec parses and validates an OpenAPI 3.x document. References to
// other files or URLs are refused.
func parseSpec(ctx context.Context, data []byte) (*openapi3.T, error) {
	loader := openapi3.NewLoader()
	loader.Context = ctx
	loader.IsExternalRefsAllowed = false
	doc, err := loader.LoadFromData(data)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalidSpec, err)
	}
	if !strings.HasPrefix(doc.OpenAPI, "3.") {
		return nil, fmt.Errorf("%w: openapi version %q is not 3.x", ErrInvalidSpec, doc.OpenAPI)
	}
	// Examples, defaults and patterns are not checked: they do not change
	// the tools, and many published documents get them slightly wrong (or
	// use regular expression features Go lacks).
	err = doc.Validate(ctx, openapi3.DisableExamplesValidation(), openapi3.DisableSchemaDefaultsValidation(),
		openapi3.DisableSchemaPatternValidation())
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalidSpec, err)
	}
	return doc, nil
}

// maxRedirects bounds the redirects the default client follows.
const maxRedirects = 10

// defaultClient returns the client of a toolset without Config.HTTPClient.
// It follows redirects only within the same scheme and host, so that a
// credential sent in a header or the query never reaches another server.
func defaultClient() *http.Client {
	rt := http.DefaultTransport
	if t, ok := rt.(*http.Transport); ok {
		rt = t.Clone()
	}
	return &http.Client{Transport: rt, CheckRedirect: func(req *http.Request, via []*http.Request) error {
		if len(via) >= maxRedirects {
			return fmt.Errorf("stopped after %d redirects", maxRedirects)
		}
		if req.URL.Scheme != via[0].URL.Scheme || req.URL.Host != via[0].URL.Host {
			return http.ErrUseLastResponse // answered as a 3xx error: credentials stay home
		}
		return nil
	}}
}

// readLimited reads r whole, failing when it holds more than limit bytes.
func readLimited(r io.Reader, limit int64) ([]byte, error) {
	data, err := io.ReadAll(io.LimitReader(r, limit+1))
	if err != nil {
		return nil, err
	}
	if int64(len(data)) > limit {
		return nil, fmt.Errorf("larger than %d bytes", limit)
	}
	return data, nil
}

// Warnings returns what New guessed while loading the document (see
// "Lenient documents" in the package documentation), in document order;
// empty for a clean document.
func (ts *Toolset) Warnings() []string { return slices.Clone(ts.warnings) }
