package openapitool

import (
	"fmt"
	"maps"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/getkin/kin-openapi/openapi3"
	"google.golang.org/genai"

	"github.com/loomkit/loom/tool"
)

// methods lists the operations of a path item in the order tools are made.
var methods = []string{
	http.MethodGet, http.MethodPost, http.MethodPut, http.MethodDelete,
	http.MethodPatch, http.MethodHead, http.MethodOptions, http.MethodTrace,
}

// maxNameLen bounds a tool name made from an operation (before
// Config.NamePrefix), as ADK does; model APIs accept up to 64 characters.
const maxNameLen = 60

// Where an argument goes in the request.
const (
	inPath     = "path"
	inQuery    = "query"
	inHeader   = "header"
	inCookie   = "cookie"
	inBodyProp = "body property" // one property of an object body
	inBody     = "body"          // the whole body
)

// param is one argument of a tool and where it goes in the request.
type param struct {
	arg      string // argument name the model uses
	name     string // name in the request: parameter or body property name
	in       string
	required bool
	explode  bool // query arrays and objects: one pair per item
	style    string
	asJSON   bool   // a parameter given by content: sent as JSON text
	kind     string // the schema's single type, if it has one
}

// body describes the request body of an operation.
type body struct {
	mediaType string
	required  bool
}

// build makes the tools of the operations that pass the filters.
func (ts *Toolset) build(specURL *url.URL) ([]tool.Tool, error) {
	var tools []tool.Tool
	taken := map[string]bool{}
	paths := ts.doc.Paths.Map()
	for _, path := range slices.Sorted(maps.Keys(paths)) {
		item := paths[path]
		if item == nil {
			continue
		}
		for _, method := range methods {
			op := item.GetOperation(method)
			if op == nil {
				continue
			}
			info := Operation{
				ID: op.OperationID, Method: method, Path: path, Tags: slices.Clone(op.Tags),
				Summary: op.Summary, Description: op.Description,
			}
			// Every operation takes its name, kept or not, so that a tool's
			// name does not depend on the filters.
			info.ToolName = uniqueName(ts.cfg.NamePrefix+toolName(op.OperationID, path, method), taken)
			taken[info.ToolName] = true
			if !ts.keep(info) {
				continue
			}
			t, err := ts.newTool(info, item, op, specURL)
			if err != nil {
				return nil, fmt.Errorf("%w: %s %s: %w", ErrInvalidSpec, method, path, err)
			}
			tools = append(tools, t)
		}
	}
	return tools, nil
}

// keep reports whether an operation passes the configured filters.
func (ts *Toolset) keep(op Operation) bool {
	if len(ts.cfg.Operations) > 0 && !slices.Contains(ts.cfg.Operations, op.ToolName) &&
		(op.ID == "" || !slices.Contains(ts.cfg.Operations, op.ID)) {
		return false
	}
	if len(ts.cfg.Tags) > 0 && !slices.ContainsFunc(op.Tags, func(t string) bool { return slices.Contains(ts.cfg.Tags, t) }) {
		return false
	}
	return ts.cfg.Filter == nil || ts.cfg.Filter(op)
}

// newTool makes the tool of one operation.
func (ts *Toolset) newTool(info Operation, item *openapi3.PathItem, op *openapi3.Operation, specURL *url.URL) (*opTool, error) {
	base, err := ts.serverURL(item, op, specURL)
	if err != nil {
		return nil, err
	}
	t := &opTool{ts: ts, info: info, baseURL: base}
	if op.Security != nil {
		t.security = *op.Security
	} else {
		t.security = ts.doc.Security
	}
	for _, req := range t.security {
		for name := range req {
			if ts.doc.Components == nil || ts.doc.Components.SecuritySchemes[name] == nil || ts.doc.Components.SecuritySchemes[name].Value == nil {
				return nil, fmt.Errorf("security scheme %q is not defined in components.securitySchemes", name)
			}
		}
	}

	props := map[string]any{}
	var required []string
	var nodes int // schemas written into the declaration, against maxSchemaNodes
	used := map[string]int{}
	add := func(p param, schema map[string]any) {
		p.arg = dedupe(argName(p.name, p.in), used)
		t.params = append(t.params, p)
		props[p.arg] = schema
		if p.required {
			required = append(required, p.arg)
		}
	}
	for _, pr := range parameters(item, op) {
		p := param{name: pr.Name, in: pr.In, required: pr.Required || pr.In == inPath, style: pr.Style}
		switch pr.In {
		case inPath, inQuery, inHeader, inCookie:
		default:
			return nil, fmt.Errorf("parameter %q: unknown location %q", pr.Name, pr.In)
		}
		p.explode = pr.Explode == nil || *pr.Explode
		if pr.Style != "" && pr.Style != "form" && pr.Explode == nil {
			p.explode = false // only the form style explodes by default
		}
		schemaRef := pr.Schema
		if schemaRef == nil {
			for _, mt := range sortedContent(pr.Content) {
				schemaRef, p.asJSON = mt.Schema, true
				break
			}
		}
		if s := schemaOf(schemaRef); s != nil && s.Type.IsSingle() {
			p.kind = s.Type.Slice()[0]
		}
		add(p, jsonSchema(schemaRef, pr.Description, false, &nodes))
	}
	if op.RequestBody != nil && op.RequestBody.Value != nil {
		rb := op.RequestBody.Value
		mediaType, mt := pickMediaType(rb.Content)
		if mt != nil {
			t.body = &body{mediaType: mediaType, required: rb.Required}
			s := schemaOf(mt.Schema)
			switch {
			case s != nil && len(s.Properties) > 0 && (s.Type == nil || s.Type.Is(openapi3.TypeObject)) && canFlatten(mediaType):
				for _, name := range slices.Sorted(maps.Keys(s.Properties)) {
					prop := s.Properties[name]
					if ps := schemaOf(prop); ps != nil && ps.ReadOnly {
						continue // sent by the server, never by the client
					}
					add(param{name: name, in: inBodyProp, required: rb.Required && slices.Contains(s.Required, name)},
						jsonSchema(prop, "", true, &nodes))
				}
			case s != nil && s.Type != nil && s.Type.Is(openapi3.TypeArray):
				add(param{name: "array", in: inBody, required: rb.Required}, jsonSchema(mt.Schema, rb.Description, true, &nodes))
			default:
				add(param{name: "body", in: inBody, required: rb.Required}, jsonSchema(mt.Schema, rb.Description, true, &nodes))
			}
		}
	}
	schema := map[string]any{"type": "object", "properties": props}
	if len(required) > 0 {
		schema["required"] = required
	}
	desc := op.Description
	if desc == "" {
		desc = op.Summary
	}
	t.decl = &genai.FunctionDeclaration{Name: info.ToolName, Description: desc, ParametersJsonSchema: schema}
	return t, nil
}

// parameters returns the parameters of an operation: those of its path
// item, overridden by its own with the same name and location.
func parameters(item *openapi3.PathItem, op *openapi3.Operation) []*openapi3.Parameter {
	var out []*openapi3.Parameter
	seen := map[string]int{}
	for _, list := range []openapi3.Parameters{item.Parameters, op.Parameters} {
		for _, ref := range list {
			if ref == nil || ref.Value == nil {
				continue
			}
			p := ref.Value
			key := p.In + "\x00" + p.Name
			if i, ok := seen[key]; ok {
				out[i] = p
				continue
			}
			seen[key] = len(out)
			out = append(out, p)
		}
	}
	return out
}

// pickMediaType chooses the media type a body is sent as: JSON first, then a
// form, then text, then whatever comes first by name.
func pickMediaType(content openapi3.Content) (string, *openapi3.MediaType) {
	if len(content) == 0 {
		return "", nil
	}
	names := slices.Sorted(maps.Keys(content))
	for _, match := range []func(string) bool{
		isJSON,
		func(m string) bool { return m == "application/x-www-form-urlencoded" },
		func(m string) bool { return strings.HasPrefix(m, "text/") },
		func(string) bool { return true },
	} {
		for _, name := range names {
			if match(mediaBase(name)) {
				return mediaBase(name), content[name]
			}
		}
	}
	return "", nil
}

// sortedContent returns the media types of content in name order.
func sortedContent(content openapi3.Content) []*openapi3.MediaType {
	var out []*openapi3.MediaType
	for _, name := range slices.Sorted(maps.Keys(content)) {
		out = append(out, content[name])
	}
	return out
}

// canFlatten reports whether a body of this media type is built from named
// properties.
func canFlatten(mediaType string) bool {
	return isJSON(mediaType) || mediaType == "application/x-www-form-urlencoded"
}

// isJSON reports whether a media type (without parameters) is JSON.
func isJSON(mediaType string) bool {
	return mediaType == "application/json" || strings.HasSuffix(mediaType, "+json")
}

// mediaBase returns a media type without its parameters, lower case.
func mediaBase(m string) string {
	m, _, _ = strings.Cut(m, ";")
	return strings.ToLower(strings.TrimSpace(m))
}

// serverURL returns the base URL of an operation's requests.
func (ts *Toolset) serverURL(item *openapi3.PathItem, op *openapi3.Operation, specURL *url.URL) (string, error) {
	if ts.cfg.BaseURL != "" {
		return strings.TrimSuffix(ts.cfg.BaseURL, "/"), nil
	}
	var server *openapi3.Server
	for _, list := range []openapi3.Servers{ptrServers(op.Servers), item.Servers, ts.doc.Servers} {
		if len(list) > 0 && list[0] != nil {
			server = list[0]
			break
		}
	}
	raw := "/"
	if server != nil {
		raw = server.URL
		for name, v := range server.Variables {
			if v != nil {
				raw = strings.ReplaceAll(raw, "{"+name+"}", v.Default)
			}
		}
	}
	u, err := url.Parse(raw)
	if err != nil {
		return "", fmt.Errorf("server URL %q: %w", raw, err)
	}
	if !u.IsAbs() {
		if specURL == nil {
			return "", fmt.Errorf("server URL %q is not absolute; set Config.BaseURL", raw)
		}
		u = specURL.ResolveReference(u)
	}
	if u.Scheme != "http" && u.Scheme != "https" {
		return "", fmt.Errorf("server URL %q is not an http or https URL", raw)
	}
	return strings.TrimSuffix(u.String(), "/"), nil
}

func ptrServers(s *openapi3.Servers) openapi3.Servers {
	if s == nil {
		return nil
	}
	return *s
}

var (
	nonAlnum   = regexp.MustCompile(`[^a-zA-Z0-9]+`)
	lowerUpper = regexp.MustCompile(`([a-z0-9])([A-Z])`)
	acronym    = regexp.MustCompile(`([A-Z]+)([A-Z][a-z])`)
	underscore = regexp.MustCompile(`_+`)
)

// snakeCase turns an identifier into snake_case the way ADK names OpenAPI
// tools and arguments: "listPets" → "list_pets", "HTTPServer" →
// "http_server", "X-Request-ID" → "x_request_id".
func snakeCase(s string) string {
	s = nonAlnum.ReplaceAllString(s, "_")
	s = lowerUpper.ReplaceAllString(s, "${1}_${2}")
	s = acronym.ReplaceAllString(s, "${1}_${2}")
	s = underscore.ReplaceAllString(strings.ToLower(s), "_")
	return strings.Trim(s, "_")
}

// toolName names the tool of an operation: its id in snake_case, or its
// path and method when it has no id.
func toolName(operationID, path, method string) string {
	name := snakeCase(operationID)
	if name == "" {
		name = snakeCase(path + "_" + strings.ToLower(method))
	}
	if name == "" || name[0] >= '0' && name[0] <= '9' {
		name = "op_" + name
	}
	if len(name) > maxNameLen {
		name = name[:maxNameLen]
	}
	return name
}

// uniqueName returns name, or name with a numeric suffix when it is taken.
func uniqueName(name string, taken map[string]bool) string {
	if !taken[name] {
		return name
	}
	for i := 2; ; i++ {
		n := name + "_" + strconv.Itoa(i)
		if !taken[n] {
			return n
		}
	}
}

// argName names the argument of a parameter or body property.
func argName(name, in string) string {
	n := snakeCase(name)
	if n == "" {
		if in == inBody {
			return "body"
		}
		n = "param"
	}
	if n[0] >= '0' && n[0] <= '9' {
		n = "p_" + n
	}
	return n
}

// dedupe returns name, or name with a suffix (_0, _1, ...) when an earlier
// argument has it.
func dedupe(name string, used map[string]int) string {
	n, ok := used[name]
	if !ok {
		used[name] = 0
		return name
	}
	for {
		candidate := name + "_" + strconv.Itoa(n)
		n++
		if _, taken := used[candidate]; !taken {
			used[name] = n
			used[candidate] = 0
			return candidate
		}
	}
}
