package functiontool

import (
	"context"
	"encoding/json"
	"errors"
	"math"
	"math/rand/v2"
	"reflect"
	"testing"

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/loomkit/loom/tool"
)

// TestFlatSchemaShapes: only schemas whose every keyword the flat check
// understands get the fast path.
func TestFlatSchemaShapes(t *testing.T) {
	type args struct {
		A int     `json:"a"`
		S string  `json:"s,omitempty"`
		F float64 `json:"f,omitempty"`
		B bool    `json:"b,omitempty"`
	}
	inferred, err := jsonschema.For[args](nil)
	if err != nil {
		t.Fatal(err)
	}
	if newFlatSchema(inferred) == nil {
		t.Errorf("the inferred schema of a struct of scalars is not flat")
	}
	min := 0.0
	notFlat := map[string]*jsonschema.Schema{
		"minimum":          {Type: "object", Properties: map[string]*jsonschema.Schema{"a": {Type: "integer", Minimum: &min}}},
		"enum":             {Type: "object", Properties: map[string]*jsonschema.Schema{"a": {Type: "string", Enum: []any{"x"}}}},
		"nested object":    {Type: "object", Properties: map[string]*jsonschema.Schema{"a": {Type: "object"}}},
		"array":            {Type: "object", Properties: map[string]*jsonschema.Schema{"a": {Type: "array"}}},
		"type list":        {Type: "object", Properties: map[string]*jsonschema.Schema{"a": {Types: []string{"null", "integer"}}}},
		"untyped property": {Type: "object", Properties: map[string]*jsonschema.Schema{"a": {}}},
		"default":          {Type: "object", Properties: map[string]*jsonschema.Schema{"a": {Type: "integer", Default: json.RawMessage("1")}}},
		"additional true":  {Type: "object", AdditionalProperties: &jsonschema.Schema{}},
		"maxProperties":    {Type: "object", MaxProperties: new(1)},
		"not an object":    {Type: "string"},
		"ref":              {Type: "object", Ref: "#"},
	}
	for name, s := range notFlat {
		if newFlatSchema(s) != nil {
			t.Errorf("%s: schema %+v taken as flat", name, s)
		}
	}
}

// TestFlatSchemaAgreesWithValidator: whatever arguments the flat check
// accepts, the general validator accepts too, over random arguments built
// from values of every JSON type and edge numbers.
func TestFlatSchemaAgreesWithValidator(t *testing.T) {
	schema := &jsonschema.Schema{
		Type: "object",
		Properties: map[string]*jsonschema.Schema{
			"i": {Type: "integer"}, "n": {Type: "number", Description: "a number"},
			"s": {Type: "string"}, "b": {Type: "boolean"},
		},
		Required:             []string{"i", "s"},
		AdditionalProperties: &jsonschema.Schema{Not: &jsonschema.Schema{}},
	}
	flat := newFlatSchema(schema)
	if flat == nil {
		t.Fatal("schema not flat")
	}
	resolved, err := schema.Resolve(nil)
	if err != nil {
		t.Fatal(err)
	}
	values := []any{nil, 0.0, 1.0, -3.0, 1.5, 1e300, math.NaN(), math.Inf(1), math.Copysign(0, -1),
		7, int64(-2), int32(4), uint(3), "x", "", json.Number("1"), true, false,
		[]any{1.0}, map[string]any{"i": 1.0}, struct{}{}}
	names := []string{"i", "n", "s", "b", "extra"}
	rng := rand.New(rand.NewPCG(1, 2))
	accepted := 0
	for range 20000 {
		args := map[string]any{}
		for _, name := range names {
			if rng.IntN(3) > 0 {
				args[name] = values[rng.IntN(len(values))]
			}
		}
		if flat.valid(args) {
			accepted++
			if err := resolved.Validate(args); err != nil {
				t.Fatalf("flat check accepts %v, validator rejects it: %v", args, err)
			}
		}
	}
	if accepted == 0 {
		t.Fatal("the flat check accepted nothing")
	}
}

// TestFlatSchemaSavesValidation: valid arguments of the flat shape are
// validated and decoded without the general validator's allocations.
func TestFlatSchemaSavesValidation(t *testing.T) {
	type addArgs struct {
		A int `json:"a"`
		B int `json:"b"`
	}
	tl, err := New(Config{Name: "add"}, func(_ context.Context, _ tool.Context, a addArgs) (int, error) { return a.A + a.B, nil })
	if err != nil {
		t.Fatal(err)
	}
	args := map[string]any{"a": 1.0, "b": 2.0}
	fast := testing.AllocsPerRun(100, func() { _, _ = tl.decode(args) })
	slow := testing.AllocsPerRun(100, func() { _ = tl.resolved.Validate(args) })
	if got, err := tl.decode(args); err != nil || got != (addArgs{1, 2}) {
		t.Fatalf("decode = %+v, %v", got, err)
	}
	if _, err := tl.decode(map[string]any{"a": 1.5, "b": 2.0}); err == nil {
		t.Errorf("decode accepts a fractional integer")
	}
	if _, err := tl.decode(map[string]any{"a": 1.0}); err == nil {
		t.Errorf("decode accepts a missing required argument")
	}
	if _, err := tl.decode(map[string]any{"a": 1.0, "b": 2.0, "c": 3.0}); err == nil {
		t.Errorf("decode accepts an unknown argument")
	}
	if fast >= slow {
		t.Errorf("decode allocates %v times, validation alone %v", fast, slow)
	}
}

// TestScalarResultMatchesRoundTrip: a scalar result becomes exactly what
// its JSON round trip makes of it, and values the round trip would change
// or reject (and named types, which may marshal themselves) take it.
func TestScalarResultMatchesRoundTrip(t *testing.T) {
	type celsius int
	values := []any{0, 3, -7, math.MaxInt64, math.MinInt64, int64(1<<53 + 1), int32(-5), uint(7), uint64(math.MaxUint64), uint32(9),
		0.0, math.Copysign(0, -1), 1.5, 1e300, 5e-324, 1e21, 123456789.125, true, false,
		"", "x", "<a&b>", "line\u2028sep", "é\u00a0\n\t\"\\"}
	for _, v := range values {
		got, ok := scalarResult(v)
		if !ok {
			t.Errorf("%T %v: no fast path", v, v)
			continue
		}
		b, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		var want any
		if err := json.Unmarshal(b, &want); err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(got, want) || math.Signbit(toFloat(got)) != math.Signbit(toFloat(want)) {
			t.Errorf("%T %v: fast path %#v, round trip %#v", v, v, got, want)
		}
	}
	for _, v := range []any{math.NaN(), math.Inf(-1), "\xff", celsius(3), float32(0.1), int8(1), []int{1}, struct{}{}} {
		if _, ok := scalarResult(v); ok {
			t.Errorf("%T %v: fast path taken", v, v)
		}
	}
	if n := testing.AllocsPerRun(100, func() { _, _ = encodeResult(3) }); n > 3 && !raceEnabled {
		t.Errorf("encoding an int result allocates %v times", n)
	}
}

func toFloat(v any) float64 {
	f, _ := v.(float64)
	return f
}

// TestConfirmationHint: the hint is the configured one or, by default, names
// the tool.
func TestConfirmationHint(t *testing.T) {
	fn := func(context.Context, tool.Context, struct{}) (int, error) { return 0, nil }
	def, err := New(Config{Name: "add", RequireConfirmation: true}, fn)
	if err != nil {
		t.Fatal(err)
	}
	if req, hint := def.ConfirmationRequired(context.Background(), nil); !req || hint != "Please approve or reject the call to add." {
		t.Errorf("ConfirmationRequired = %v, %q", req, hint)
	}
	own, err := New(Config{Name: "add", ConfirmationHint: "Sure?"}, fn)
	if err != nil {
		t.Fatal(err)
	}
	if req, hint := own.ConfirmationRequired(context.Background(), nil); req || hint != "Sure?" {
		t.Errorf("ConfirmationRequired = %v, %q", req, hint)
	}
}

// TestFlatSchemaJSONMatchesMarshal: arguments the flat check accepts are
// written exactly as json.Marshal writes them, or left to it.
func TestFlatSchemaJSONMatchesMarshal(t *testing.T) {
	schema := &jsonschema.Schema{
		Type: "object",
		Properties: map[string]*jsonschema.Schema{
			"i": {Type: "integer"}, "n": {Type: "number"}, "s": {Type: "string"}, "b": {Type: "boolean"}, "A": {Type: "integer"},
		},
	}
	flat := newFlatSchema(schema)
	values := map[string][]any{
		"i": {0.0, math.Copysign(0, -1), 3.0, -7.0, 1e20, 1e21, 1e300, -1e22, 7, int64(math.MinInt64), int64(1) << 60},
		"A": {1.0, 2},
		"n": {0.5, 1e-6, 1e-7, 9.999e-7, 123456.789, -2.5e-300, 5e-324, math.MaxFloat64, 1e21, 0.1 + 0.2},
		"s": {"", "x", "hello world", "<tag>", "a&b", "quote\"", "back\\slash", "tab\t", "é", "\u2028", "~"},
		"b": {true, false},
	}
	rng := rand.New(rand.NewPCG(3, 4))
	fast := 0
	for range 5000 {
		args := map[string]any{}
		for name, vs := range values {
			if rng.IntN(2) == 0 {
				args[name] = vs[rng.IntN(len(vs))]
			}
		}
		if !flat.valid(args) {
			t.Fatalf("flat check rejects %v", args)
		}
		want, err := json.Marshal(args)
		if err != nil {
			t.Fatal(err)
		}
		got, ok := flat.appendJSON(nil, args)
		if !ok {
			continue
		}
		fast++
		if string(got) != string(want) {
			t.Fatalf("appendJSON(%v) = %s, json.Marshal %s", args, got, want)
		}
	}
	if fast < 1000 {
		t.Errorf("only %d of 5000 written without encoding/json", fast)
	}
}

// TestUnmarshalArgsMatchesUnmarshal: the reused decoders of arguments give
// json.Unmarshal's value or error for every input, and a decoder reused
// after any of them still does.
func TestUnmarshalArgsMatchesUnmarshal(t *testing.T) {
	type args struct {
		A int               `json:"a"`
		S string            `json:"s"`
		L []float64         `json:"l"`
		M map[string]string `json:"m"`
	}
	inputs := []string{
		`{"a":1,"s":"x","l":[1.5,2],"m":{"k":"v"}}`,
		`{"a":1.5}`,
		`{"a":"one"}`,
		`{"s":"é\u00e9","A":7}`,
		`{"a":1}}`,
		`{"a":1} {"a":2}`,
		`{"a":1} `,
		`{"a":`,
		`[1]`,
		`null`,
		``,
		`{"l":[1,"x",3],"a":2}`,
	}
	for round := range 3 {
		for _, in := range inputs {
			var want, got args
			wantErr := json.Unmarshal([]byte(in), &want)
			gotErr := unmarshalArgs([]byte(in), &got)
			if (wantErr == nil) != (gotErr == nil) || (wantErr != nil && wantErr.Error() != gotErr.Error()) {
				t.Fatalf("round %d, %q: error %v, json.Unmarshal %v", round, in, gotErr, wantErr)
			}
			if wantErr == nil && !reflect.DeepEqual(got, want) {
				t.Fatalf("round %d, %q: %+v, json.Unmarshal %+v", round, in, got, want)
			}
			var te, gte *json.UnmarshalTypeError
			if errors.As(wantErr, &te) && (!errors.As(gotErr, &gte) || gte.Field != te.Field) {
				t.Fatalf("round %d, %q: type error %v, json.Unmarshal %v", round, in, gotErr, wantErr)
			}
		}
	}
}
