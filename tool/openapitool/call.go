package openapitool

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/getkin/kin-openapi/openapi3"
	"google.golang.org/genai"

	"github.com/loomkit/loom/credential/oauth"
	"github.com/loomkit/loom/tool"
)

// excerptLen bounds the part of an error response's body shown to the model.
const excerptLen = 512

// HTTPError is the error of a call answered with a status other than 2xx.
// The model receives its message: the method, the path, the status and the
// start of the response body.
type HTTPError struct {
	// Method and Path are the request's method and path (no query).
	Method string
	Path   string
	// StatusCode and Status are the response's status, such as 404 and
	// "404 Not Found".
	StatusCode int
	Status     string
	// Body is the start of the response body, at most 512 bytes.
	Body string
}

// Error implements error: "GET /pets/42: HTTP 404 Not Found: <body excerpt>".
func (e *HTTPError) Error() string {
	msg := fmt.Sprintf("%s %s: HTTP %s", e.Method, e.Path, e.Status)
	if e.Body != "" {
		msg += ": " + e.Body
	}
	return msg
}

// opTool is the tool of one operation.
type opTool struct {
	ts       *Toolset
	info     Operation
	baseURL  string
	params   []param
	body     *body
	security openapi3.SecurityRequirements
	decl     *genai.FunctionDeclaration
}

var _ tool.Function = (*opTool)(nil)

func (t *opTool) Name() string                            { return t.info.ToolName }
func (t *opTool) Description() string                     { return t.decl.Description }
func (t *opTool) Declaration() *genai.FunctionDeclaration { return t.decl }

// Run sends the operation's request and returns its response. A call that
// needs a credential nobody configured asks the client for it and returns
// nothing; it runs again with the answer.
func (t *opTool) Run(ctx context.Context, tc tool.Context, args map[string]any) (map[string]any, error) {
	if err := t.checkArgs(args); err != nil {
		return nil, fmt.Errorf("%s: %w", t.info.ToolName, err)
	}
	auth, asked, err := t.authorize(ctx, tc)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", t.info.ToolName, err)
	}
	if asked {
		return nil, nil
	}
	req, err := t.request(ctx, args, auth)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", t.info.ToolName, err)
	}
	if t.ts.cfg.Timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, t.ts.cfg.Timeout)
		defer cancel()
		req = req.WithContext(ctx)
	}
	res, err := t.send(ctx, req)
	var he *HTTPError
	if errors.As(err, &he) && he.StatusCode == http.StatusUnauthorized {
		t.ts.creds.forget(auth.cached) // a stale credential: ask again next time
		for _, oc := range auth.kept {
			_ = oauth.Forget(ctx, tc, oc) // best effort: the next call refreshes or asks
		}
	}
	if err != nil {
		return nil, fmt.Errorf("%s: %w", t.info.ToolName, err)
	}
	return res, nil
}

// checkArgs rejects unknown arguments and missing required ones, naming
// them and where they go.
func (t *opTool) checkArgs(args map[string]any) error {
	known := map[string]bool{}
	var missing []string
	for _, p := range t.params {
		known[p.arg] = true
		if v, ok := args[p.arg]; p.required && (!ok || v == nil) {
			missing = append(missing, fmt.Sprintf("%s (%s %q)", p.arg, p.in, p.name))
		}
	}
	var unknown []string
	for name := range args {
		if !known[name] {
			unknown = append(unknown, name)
		}
	}
	slices.Sort(unknown)
	var problems []string
	if len(missing) > 0 {
		problems = append(problems, "missing required arguments: "+strings.Join(missing, ", "))
	}
	if len(unknown) > 0 {
		accepted := slices.Sorted(maps.Keys(known))
		problems = append(problems, fmt.Sprintf("unknown arguments: %s (accepted: %s)", strings.Join(unknown, ", "), strings.Join(accepted, ", ")))
	}
	if len(problems) > 0 {
		return fmt.Errorf("invalid arguments, no request sent: %s", strings.Join(problems, "; "))
	}
	return nil
}

// request builds the HTTP request of a call.
func (t *opTool) request(ctx context.Context, args map[string]any, auth authorization) (*http.Request, error) {
	// A template may carry a query of its own ("/get?petId={petId}"): its
	// placeholders take path parameters too, query-escaped.
	path, fixedQuery, _ := strings.Cut(t.info.Path, "?")
	query := url.Values{}
	header := http.Header{}
	var cookies []string
	bodyProps := map[string]any{}
	var whole any
	hasWhole := false
	for _, p := range t.params {
		v, ok := args[p.arg]
		if !ok || v == nil {
			continue
		}
		err := checkKind(v, p.kind)
		switch {
		case err != nil:
		case p.in == inPath:
			var s string
			if err = checkPathValue(v, p); err == nil {
				s, err = paramText(v, p, ",", url.PathEscape)
			}
			if err == nil && strings.Contains(fixedQuery, "{"+p.name+"}") {
				var q string
				if q, err = paramText(v, p, ",", url.QueryEscape); err == nil {
					fixedQuery = strings.ReplaceAll(fixedQuery, "{"+p.name+"}", q)
				}
			}
			if err == nil {
				path = strings.ReplaceAll(path, "{"+p.name+"}", s)
			}
		case p.in == inQuery:
			err = addQuery(query, v, p)
		case p.in == inHeader:
			var s string
			if s, err = paramText(v, p, ",", nil); err == nil {
				if err = checkHeaderValue(s); err == nil {
					header.Set(p.name, s)
				}
			}
		case p.in == inCookie:
			var s string
			if s, err = paramText(v, p, ",", nil); err == nil {
				cookies = append(cookies, p.name+"="+cookieValue(s))
			}
		case p.in == inBodyProp:
			bodyProps[p.name] = v
		case p.in == inBody:
			whole, hasWhole = v, true
		}
		if err != nil {
			return nil, fmt.Errorf("argument %s (%s %q): %w", p.arg, p.in, p.name, err)
		}
	}
	body, err := t.encodeBody(bodyProps, whole, hasWhole)
	if err != nil {
		return nil, err
	}
	if fixedQuery != "" {
		fixed, err := url.ParseQuery(fixedQuery)
		if err != nil {
			return nil, fmt.Errorf("the query of the path template: %w", err)
		}
		for k, vs := range fixed {
			query[k] = append(query[k], vs...)
		}
	}
	u, err := url.Parse(t.baseURL + path)
	if err != nil {
		return nil, fmt.Errorf("request URL: %w", err)
	}
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, t.info.Method, u.String(), rd)
	if err != nil {
		return nil, fmt.Errorf("request: %w", err)
	}
	for k, v := range t.ts.cfg.Headers {
		req.Header.Set(k, v)
	}
	maps.Copy(req.Header, header)
	if body != nil {
		req.Header.Set("Content-Type", t.body.mediaType)
	}
	if req.Header.Get("Accept") == "" {
		req.Header.Set("Accept", "application/json, */*;q=0.5")
	}
	cookies = append(cookies, auth.apply(req, query)...)
	if len(cookies) > 0 {
		req.Header.Set("Cookie", strings.Join(cookies, "; "))
	}
	req.URL.RawQuery = query.Encode()
	return req, nil
}

// encodeBody encodes the request body, or returns nil when the call sends
// none.
func (t *opTool) encodeBody(props map[string]any, whole any, hasWhole bool) ([]byte, error) {
	if t.body == nil {
		return nil, nil
	}
	var v any
	switch {
	case hasWhole:
		v = whole
	case len(props) > 0 || t.body.required:
		v = props
	default:
		return nil, nil
	}
	switch mt := t.body.mediaType; {
	case isJSON(mt):
		b, err := json.Marshal(v)
		if err != nil {
			return nil, fmt.Errorf("request body: %w", err)
		}
		return b, nil
	case mt == "application/x-www-form-urlencoded":
		m, ok := v.(map[string]any)
		if !ok {
			return nil, fmt.Errorf("request body: a form needs an object, got %T", v)
		}
		form := url.Values{}
		for _, k := range slices.Sorted(maps.Keys(m)) {
			if err := addQuery(form, m[k], param{name: k, explode: true}); err != nil {
				return nil, fmt.Errorf("request body field %q: %w", k, err)
			}
		}
		return []byte(form.Encode()), nil
	default:
		if s, ok := v.(string); ok {
			return []byte(s), nil
		}
		b, err := json.Marshal(v)
		if err != nil {
			return nil, fmt.Errorf("request body: %w", err)
		}
		return b, nil
	}
}

// send performs the request and decodes the response.
func (t *opTool) send(ctx context.Context, req *http.Request) (map[string]any, error) {
	where := req.Method + " " + req.URL.EscapedPath()
	resp, err := t.ts.http.Do(req)
	if err != nil {
		if ctx.Err() == context.DeadlineExceeded && t.ts.cfg.Timeout > 0 {
			return nil, fmt.Errorf("%s: no response within %v", where, t.ts.cfg.Timeout)
		}
		return nil, fmt.Errorf("%s: request failed: %w", where, transportCause(err))
	}
	defer resp.Body.Close()
	limit := t.ts.cfg.MaxResponseBytes
	if resp.ContentLength > limit {
		return nil, fmt.Errorf("%s: response of %d bytes exceeds the limit of %d bytes", where, resp.ContentLength, limit)
	}
	data, err := io.ReadAll(io.LimitReader(resp.Body, limit+1))
	if err != nil {
		if ctx.Err() == context.DeadlineExceeded && t.ts.cfg.Timeout > 0 {
			return nil, fmt.Errorf("%s: response not read within %v", where, t.ts.cfg.Timeout)
		}
		return nil, fmt.Errorf("%s: reading the response: %w", where, err)
	}
	if int64(len(data)) > limit {
		return nil, fmt.Errorf("%s: response exceeds the limit of %d bytes", where, limit)
	}
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return nil, &HTTPError{Method: req.Method, Path: req.URL.EscapedPath(), StatusCode: resp.StatusCode, Status: resp.Status, Body: excerpt(data)}
	}
	return decodeResponse(resp.StatusCode, resp.Header.Get("Content-Type"), data), nil
}

// decodeResponse turns a successful response into a function response.
func decodeResponse(status int, contentType string, data []byte) map[string]any {
	if len(bytes.TrimSpace(data)) == 0 {
		return map[string]any{"status_code": status}
	}
	ct := mediaBase(contentType)
	trimmed := bytes.TrimSpace(data)
	// Servers often label JSON as text/plain; an object or array there is
	// taken as JSON, other text stays text.
	if isJSON(ct) || ct == "" || ct == "text/plain" && (trimmed[0] == '{' || trimmed[0] == '[') {
		var v any
		if err := json.Unmarshal(data, &v); err == nil {
			if m, ok := v.(map[string]any); ok {
				return m
			}
			return map[string]any{"result": v}
		}
	}
	if utf8.Valid(data) {
		return map[string]any{"text": string(data)}
	}
	return map[string]any{"content_type": ct, "size_bytes": len(data), "note": "binary content, not shown"}
}

// excerpt returns the start of a response body for an error message.
func excerpt(data []byte) string {
	s := strings.Join(strings.Fields(string(data)), " ")
	if len(s) <= excerptLen {
		return strings.ToValidUTF8(s, "?")
	}
	cut := excerptLen
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return strings.ToValidUTF8(s[:cut], "?") + "…"
}

// transportCause returns the error behind a failed request without the
// request URL, which may carry an API key in its query.
func transportCause(err error) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		return ue.Err
	}
	return err
}

// redactURL returns a URL without user information or query, for messages.
func redactURL(u *url.URL) string {
	c := *u
	c.User, c.RawQuery, c.Fragment = nil, "", ""
	return c.String()
}

// checkKind rejects an array or object given for a parameter whose schema
// is a scalar.
func checkKind(v any, kind string) error {
	switch kind {
	case openapi3.TypeString, openapi3.TypeInteger, openapi3.TypeNumber, openapi3.TypeBoolean:
		switch v.(type) {
		case []any, map[string]any:
			return fmt.Errorf("want a %s, got %s", kind, jsonKind(v))
		}
	}
	return nil
}

// jsonKind names the JSON kind of a value.
func jsonKind(v any) string {
	switch v.(type) {
	case []any:
		return "an array"
	case map[string]any:
		return "an object"
	}
	return fmt.Sprintf("%T", v)
}

// scalarText formats a scalar argument value.
func scalarText(v any) (string, error) {
	switch x := v.(type) {
	case string:
		return x, nil
	case bool:
		return strconv.FormatBool(x), nil
	case float64:
		return strconv.FormatFloat(x, 'f', -1, 64), nil
	case float32:
		return strconv.FormatFloat(float64(x), 'f', -1, 32), nil
	case int:
		return strconv.Itoa(x), nil
	case int64:
		return strconv.FormatInt(x, 10), nil
	case json.Number:
		return x.String(), nil
	}
	return "", fmt.Errorf("want a string, number or boolean, got %T", v)
}

// paramText formats a path, header or cookie value: a scalar, or the items
// of an array (or the keys and values of an object) joined with sep. esc,
// if not nil, escapes each part.
func paramText(v any, p param, sep string, esc func(string) string) (string, error) {
	if esc == nil {
		esc = func(s string) string { return s }
	}
	if p.asJSON {
		b, err := json.Marshal(v)
		return esc(string(b)), err
	}
	switch x := v.(type) {
	case []any:
		parts := make([]string, len(x))
		for i, item := range x {
			s, err := scalarText(item)
			if err != nil {
				return "", fmt.Errorf("item %d: %w", i, err)
			}
			parts[i] = esc(s)
		}
		return strings.Join(parts, sep), nil
	case map[string]any:
		var parts []string
		for _, k := range slices.Sorted(maps.Keys(x)) {
			s, err := scalarText(x[k])
			if err != nil {
				return "", fmt.Errorf("field %q: %w", k, err)
			}
			if p.explode {
				parts = append(parts, esc(k)+"="+esc(s))
			} else {
				parts = append(parts, esc(k), esc(s))
			}
		}
		return strings.Join(parts, sep), nil
	}
	s, err := scalarText(v)
	return esc(s), err
}

// checkPathValue refuses a path parameter value that would move the
// request to another path: an empty value (the segment disappears), or a
// value with a "." or ".." segment. Escaping keeps a slash from splitting the
// segment, but servers commonly decode %2F (and treat a backslash as a
// slash) before resolving dot segments, so "../admin" is refused as well as
// "..".
func checkPathValue(v any, p param) error {
	raw, err := paramText(v, p, ",", nil)
	if err != nil {
		return err
	}
	if raw == "" {
		return errors.New("a path parameter cannot be empty")
	}
	for seg := range strings.FieldsFuncSeq(raw, func(r rune) bool { return r == '/' || r == '\\' }) {
		if seg == "." || seg == ".." {
			return fmt.Errorf("%q would change the request path: a path parameter cannot hold a %q segment", raw, seg)
		}
	}
	return nil
}

// checkHeaderValue refuses a header value holding a control character
// other than a tab: CR or LF would end the header and start another, and
// the check must not depend on the transport of Config.HTTPClient.
func checkHeaderValue(s string) error {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < ' ' && c != '\t' || c == 0x7f {
			return fmt.Errorf("a header value cannot hold the control character %q", c)
		}
	}
	return nil
}

// addQuery adds a query (or form) parameter following its style.
func addQuery(q url.Values, v any, p param) error {
	if p.asJSON {
		b, err := json.Marshal(v)
		if err != nil {
			return err
		}
		q.Add(p.name, string(b))
		return nil
	}
	switch x := v.(type) {
	case []any:
		if p.explode {
			for i, item := range x {
				s, err := scalarText(item)
				if err != nil {
					return fmt.Errorf("item %d: %w", i, err)
				}
				q.Add(p.name, s)
			}
			return nil
		}
		sep := ","
		switch p.style {
		case "spaceDelimited":
			sep = " "
		case "pipeDelimited":
			sep = "|"
		}
		s, err := paramText(x, p, sep, nil)
		if err != nil {
			return err
		}
		q.Add(p.name, s)
		return nil
	case map[string]any:
		if p.style == "deepObject" || p.explode {
			for _, k := range slices.Sorted(maps.Keys(x)) {
				s, err := scalarText(x[k])
				if err != nil {
					return fmt.Errorf("field %q: %w", k, err)
				}
				if p.style == "deepObject" {
					q.Add(p.name+"["+k+"]", s)
				} else {
					q.Add(k, s)
				}
			}
			return nil
		}
		s, err := paramText(x, p, ",", nil)
		if err != nil {
			return err
		}
		q.Add(p.name, s)
		return nil
	}
	s, err := scalarText(v)
	if err != nil {
		return err
	}
	q.Add(p.name, s)
	return nil
}

// cookieValue returns s if it is a valid cookie value, or s percent-encoded.
func cookieValue(s string) string {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c <= ' ' || c >= 0x7f || c == '"' || c == ',' || c == ';' || c == '\\' {
			return url.QueryEscape(s)
		}
	}
	return s
}
