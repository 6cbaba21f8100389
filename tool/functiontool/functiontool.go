// Package functiontool turns a Go function into a tool an LLM agent can
// call.
//
// The function takes a typed argument, usually a struct, and returns a typed
// result:
//
//	type WeatherArgs struct {
//		City string `json:"city" jsonschema:"the city to report on"`
//		Unit string `json:"unit,omitempty" jsonschema:"c or f; c by default"`
//	}
//
//	weather, err := functiontool.New(functiontool.Config{
//		Name:        "get_weather",
//		Description: "Reports the current weather in a city.",
//	}, func(ctx context.Context, tc tool.Context, args WeatherArgs) (Report, error) {
//		...
//	})
//
// # Schema
//
// The JSON schema of the parameters, which the model sees in the tool's
// function declaration, is inferred from the argument type with
// github.com/google/jsonschema-go: field names come from json tags, a
// jsonschema tag is the field's description, and every field without
// omitempty (or omitzero) is required. Config.InputSchema replaces the
// inferred schema, for example to add an enum or a default.
//
// # Running
//
// Before the function runs, the model's arguments are validated against the
// schema (after applying its defaults). Arguments that do not match produce
// an [*ArgumentError] naming the field and the problem; the LLM agent turns
// it into an error function response the model can read and correct. Valid
// arguments are decoded into the argument type by a JSON round trip, so the
// function gets its own copy.
//
// The result becomes the function response: a struct or map result is its
// JSON object, any other value v (a number, a string, a slice) is wrapped as
// {"result": v}, and a nil pointer, map or interface gives a nil response. A
// panic in the function is recovered and returned as a [*PanicError]; the
// process and the session are unaffected.
//
// # Media
//
// A function that returns [Media] gives the model images, audio or files
// (parts, or artifacts of the session by name) with its JSON response: they
// become the function response's Parts. The tool implements
// tool.MediaTool, through which the LLM agent receives them.
package functiontool

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"reflect"
	"unicode/utf8"

	"github.com/google/jsonschema-go/jsonschema"
	"google.golang.org/genai"

	"github.com/loomkit/loom/agent"
	"github.com/loomkit/loom/tool"
)

var (
	// ErrInvalidArguments is wrapped by every error reporting arguments that
	// do not match a tool's input schema.
	ErrInvalidArguments = errors.New("invalid arguments")
	// ErrPanic matches (with errors.Is) the [*PanicError] returned when the
	// tool's function panics.
	ErrPanic = errors.New("tool function panicked")
	// ErrInvalidConfig reports a tool that cannot be built: a bad name, or
	// an argument type with no JSON object schema.
	ErrInvalidConfig = errors.New("functiontool: invalid configuration")
)

// Config configures a function tool.
type Config struct {
	// Name is the function name the model calls. Required: letters, digits,
	// '_', '-', '.' and ':', starting with a letter or '_', at most 64
	// characters.
	Name string
	// Description tells the model what the tool does and when to use it.
	Description string
	// LongRunning marks a tool whose work continues after the function
	// returns (see tool.LongRunning). Its function typically starts the
	// work and returns a ticket or a status.
	LongRunning bool
	// RequireConfirmation makes every call wait for a person's approval
	// (see tool.Confirmable).
	RequireConfirmation bool
	// ConfirmationFunc, if set, decides per call whether approval is
	// needed, from the model's arguments. It overrides RequireConfirmation.
	ConfirmationFunc func(args map[string]any) bool
	// ConfirmationHint is shown to the person asked to approve (default: a
	// sentence naming the tool).
	ConfirmationHint string
	// InputSchema, if set, replaces the schema inferred from the argument
	// type. It must describe a JSON object that decodes into the argument
	// type.
	InputSchema *jsonschema.Schema
	// OutputSchema, if set, replaces the response schema inferred from the
	// result type.
	OutputSchema *jsonschema.Schema
}

// Func is the signature of a tool function. tc gives access to the session
// state, artifacts, memory and the response event's actions.
type Func[Args, Result any] func(ctx context.Context, tc tool.Context, args Args) (Result, error)

// Tool is a tool backed by a Go function. Create it with New. It is
// immutable and safe for concurrent use if its function is.
type Tool[Args, Result any] struct {
	cfg         Config
	fn          Func[Args, Result]
	schema      *jsonschema.Schema
	resolved    *jsonschema.Resolved
	flat        *flatSchema // nil unless the schema has the flat shape
	hint        string      // the confirmation hint
	hasDefaults bool
	response    *jsonschema.Schema
}

var (
	_ tool.Function    = (*Tool[struct{}, struct{}])(nil)
	_ tool.LongRunning = (*Tool[struct{}, struct{}])(nil)
	_ tool.Confirmable = (*Tool[struct{}, struct{}])(nil)
)

// validName reports whether name follows the function-name rule shared by
// the model providers: a letter or underscore, then up to 63 letters,
// digits, underscores, dots, colons or dashes. (Checked by hand: the
// equivalent regular expression costs every program that links this package
// half a millisecond at start-up to compile.)
func validName(name string) bool {
	if len(name) == 0 || len(name) > 64 {
		return false
	}
	for i := 0; i < len(name); i++ {
		switch c := name[i]; {
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', c == '_':
		case i > 0 && ('0' <= c && c <= '9' || c == '.' || c == ':' || c == '-'):
		default:
			return false
		}
	}
	return true
}

// New returns a tool that calls fn. Args must be a struct, a pointer to a
// struct or a map with string keys (for instance map[string]any), unless
// cfg.InputSchema is set.
func New[Args, Result any](cfg Config, fn Func[Args, Result]) (*Tool[Args, Result], error) {
	if !validName(cfg.Name) {
		return nil, fmt.Errorf("%w: bad tool name %q", ErrInvalidConfig, cfg.Name)
	}
	if fn == nil {
		return nil, fmt.Errorf("%w: tool %q has no function", ErrInvalidConfig, cfg.Name)
	}
	schema := cfg.InputSchema
	if schema == nil {
		s, err := jsonschema.For[Args](nil)
		if err != nil {
			return nil, fmt.Errorf("%w: tool %q: %v", ErrInvalidConfig, cfg.Name, err)
		}
		schema, err = objectSchema(s)
		if err != nil {
			return nil, fmt.Errorf("%w: tool %q: %v", ErrInvalidConfig, cfg.Name, err)
		}
	}
	resolved, err := schema.Resolve(nil)
	if err != nil {
		return nil, fmt.Errorf("%w: tool %q: input schema: %v", ErrInvalidConfig, cfg.Name, err)
	}
	response := cfg.OutputSchema
	if response == nil {
		response = responseSchema[Result]()
	}
	hint := cfg.ConfirmationHint
	if hint == "" {
		hint = "Please approve or reject the call to " + cfg.Name + "."
	}
	return &Tool[Args, Result]{
		cfg:         cfg,
		hint:        hint,
		fn:          fn,
		schema:      schema,
		resolved:    resolved,
		flat:        newFlatSchema(schema),
		hasDefaults: hasDefaults(schema),
		response:    response,
	}, nil
}

// objectSchema checks that an inferred schema describes an object and drops
// the "null" alternative a pointer type adds: the model always sends an
// object of arguments.
func objectSchema(s *jsonschema.Schema) (*jsonschema.Schema, error) {
	if s.Type == "" && len(s.Types) == 2 && s.Types[0] == "null" && s.Types[1] == "object" {
		s.Type, s.Types = "object", nil
	}
	if s.Type != "object" {
		return nil, errors.New("the argument type must be a struct, a pointer to a struct or a map with string keys")
	}
	return s, nil
}

// responseSchema infers the schema of what the model receives for a Result:
// the result's own object schema, or {"result": ...} for other values. It
// returns nil when the type says nothing useful (an interface, a generic
// map) or cannot be described.
func responseSchema[Result any]() *jsonschema.Schema {
	t := reflect.TypeFor[Result]()
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t == reflect.TypeFor[Media]() {
		return nil // the response's shape is Media.Response's, unknown here
	}
	if t.Kind() == reflect.Interface || t.Kind() == reflect.Map {
		return nil
	}
	s, err := jsonschema.ForType(t, nil)
	if err != nil {
		return nil
	}
	if t.Kind() == reflect.Struct {
		return s
	}
	return &jsonschema.Schema{
		Type:       "object",
		Properties: map[string]*jsonschema.Schema{"result": s},
	}
}

func hasDefaults(s *jsonschema.Schema) bool {
	if s == nil {
		return false
	}
	for _, p := range s.Properties {
		if p != nil && (p.Default != nil || hasDefaults(p)) {
			return true
		}
	}
	return false
}

// Name implements tool.Tool.
func (t *Tool[Args, Result]) Name() string { return t.cfg.Name }

// Description implements tool.Tool.
func (t *Tool[Args, Result]) Description() string { return t.cfg.Description }

// ConfirmationRequired implements tool.Confirmable.
func (t *Tool[Args, Result]) ConfirmationRequired(_ context.Context, args map[string]any) (bool, string) {
	required := t.cfg.RequireConfirmation
	if t.cfg.ConfirmationFunc != nil {
		required = t.cfg.ConfirmationFunc(args)
	}
	return required, t.hint
}

// IsLongRunning implements tool.LongRunning.
func (t *Tool[Args, Result]) IsLongRunning() bool { return t.cfg.LongRunning }

// InputSchema returns the JSON schema of the tool's arguments. It is shared
// and must not be modified.
func (t *Tool[Args, Result]) InputSchema() *jsonschema.Schema { return t.schema }

// Declaration implements tool.Function: the function declaration with the
// parameters' JSON schema and, when known, the response's. The schemas are
// shared and must not be modified.
func (t *Tool[Args, Result]) Declaration() *genai.FunctionDeclaration {
	d := &genai.FunctionDeclaration{
		Name:                 t.cfg.Name,
		Description:          t.cfg.Description,
		ParametersJsonSchema: t.schema,
	}
	if t.response != nil {
		d.ResponseJsonSchema = t.response
	}
	return d
}

// Run implements tool.Function: it validates args, decodes them, calls the
// function and encodes its result.
// The media of a [Media] result are checked but left out: the LLM agent
// calls RunMedia, which keeps them.
func (t *Tool[Args, Result]) Run(ctx context.Context, tc tool.Context, args map[string]any) (map[string]any, error) {
	res, _, err := t.RunMedia(ctx, tc, args)
	return res, err
}

// call runs the function, turning a panic into an error.
func (t *Tool[Args, Result]) call(ctx context.Context, tc tool.Context, in Args) (out Result, err error) {
	if p := agent.Safely(func() { out, err = t.fn(ctx, tc, in) }); p != nil {
		return out, &PanicError{Tool: t.cfg.Name, Value: p.Value, Stack: p.Stack}
	}
	return out, err
}

// decode validates the model's arguments against the schema and converts
// them to Args.
func (t *Tool[Args, Result]) decode(args map[string]any) (Args, error) {
	var in Args
	if args == nil {
		args = map[string]any{}
	}
	if t.hasDefaults {
		// ApplyDefaults writes into the map: work on a copy, the arguments
		// belong to the model's event.
		cp, err := jsonCopy(args)
		if err != nil {
			return in, t.argumentError("", err.Error(), err)
		}
		if err := t.resolved.ApplyDefaults(&cp); err != nil {
			return in, t.argumentError("", err.Error(), err)
		}
		args = cp
	}
	// Arguments the flat check accepts, the general validator accepts too;
	// it alone rejects and explains. The flat ones are also written as JSON
	// without encoding/json's reflection.
	var b []byte
	if t.flat.valid(args) {
		buf := jsonBuffers.Get().(*[]byte)
		defer putJSONBuffer(buf)
		var ok bool
		if *buf, ok = t.flat.appendJSON((*buf)[:0], args); ok {
			b = *buf
		}
	} else if err := t.resolved.Validate(args); err != nil {
		field, reason, ok := explain(t.schema, args, "")
		if !ok {
			field, reason = "", err.Error()
		}
		return in, t.argumentError(field, reason, err)
	}
	if b == nil {
		var err error
		if b, err = json.Marshal(args); err != nil {
			return in, t.argumentError("", err.Error(), err)
		}
	}
	if err := unmarshalArgs(b, &in); err != nil {
		field := ""
		var te *json.UnmarshalTypeError
		if errors.As(err, &te) {
			field = te.Field
		}
		return in, t.argumentError(field, err.Error(), err)
	}
	return in, nil
}

func (t *Tool[Args, Result]) argumentError(field, reason string, err error) *ArgumentError {
	return &ArgumentError{Tool: t.cfg.Name, Field: field, Reason: reason, Err: err}
}

func jsonCopy(m map[string]any) (map[string]any, error) {
	b, err := json.Marshal(m)
	if err != nil {
		return nil, err
	}
	var out map[string]any
	if err := json.Unmarshal(b, &out); err != nil {
		return nil, err
	}
	return out, nil
}

// scalarResult returns what the JSON round trip of encodeResult makes of a
// value of a predeclared integer, float64, bool or valid UTF-8 string type,
// without the round trip (a named type may marshal itself otherwise, and is
// not one of these).
func scalarResult(v any) (any, bool) {
	switch x := v.(type) {
	case int:
		return float64(x), true
	case int64:
		return float64(x), true
	case int32:
		return float64(x), true
	case uint:
		return float64(x), true
	case uint64:
		return float64(x), true
	case uint32:
		return float64(x), true
	case float64:
		if math.IsNaN(x) || math.IsInf(x, 0) {
			return nil, false // JSON has no such number: the round trip fails
		}
		return x, true
	case bool:
		return x, true
	case string:
		if !utf8.ValidString(x) {
			return nil, false // the round trip replaces invalid bytes
		}
		return x, true
	}
	return nil, false
}

// encodeResult converts a function result to the function response.
func encodeResult(v any) (map[string]any, error) {
	switch x := v.(type) {
	case nil:
		return nil, nil
	case map[string]any:
		return x, nil
	}
	if r, ok := scalarResult(v); ok {
		return map[string]any{"result": r}, nil
	}
	rv := reflect.ValueOf(v)
	switch rv.Kind() {
	case reflect.Pointer, reflect.Map, reflect.Interface:
		if rv.IsNil() {
			return nil, nil
		}
	}
	b, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	var out any
	if err := json.Unmarshal(b, &out); err != nil {
		return nil, err
	}
	if m, ok := out.(map[string]any); ok {
		return m, nil
	}
	return map[string]any{"result": out}, nil
}

// ArgumentError reports model arguments that do not match a tool's input
// schema. It wraps ErrInvalidArguments and the underlying validation or
// decoding error.
type ArgumentError struct {
	// Tool is the tool's name.
	Tool string
	// Field is the path of the offending argument, such as "city",
	// "address.zip" or "tags[2]"; empty when the problem is not tied to one
	// field.
	Field string
	// Reason describes the problem.
	Reason string
	// Err is the underlying error.
	Err error
}

// Error implements error.
func (e *ArgumentError) Error() string {
	if e.Field == "" {
		return fmt.Sprintf("tool %q: %v: %s", e.Tool, ErrInvalidArguments, e.Reason)
	}
	return fmt.Sprintf("tool %q: %v: argument %q %s", e.Tool, ErrInvalidArguments, e.Field, e.Reason)
}

// Unwrap returns ErrInvalidArguments and the underlying error.
func (e *ArgumentError) Unwrap() []error {
	if e.Err == nil {
		return []error{ErrInvalidArguments}
	}
	return []error{ErrInvalidArguments, e.Err}
}

// PanicError reports a panic in a tool's function. Its message, which the
// model receives, holds the panic value; the stack is kept for logs.
type PanicError struct {
	// Tool is the tool's name.
	Tool string
	// Value is the value passed to panic.
	Value any
	// Stack is the goroutine's stack at the panic.
	Stack []byte
}

// Error implements error.
func (e *PanicError) Error() string {
	return fmt.Sprintf("tool %q: %v: %v", e.Tool, ErrPanic, e.Value)
}

// Is reports whether target is ErrPanic.
func (e *PanicError) Is(target error) bool { return target == ErrPanic }

// Unwrap returns the panic value if it is an error.
func (e *PanicError) Unwrap() error {
	err, _ := e.Value.(error)
	return err
}
