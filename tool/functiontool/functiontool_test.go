package functiontool_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"iter"
	"strings"
	"sync"
	"testing"

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/loomkit/loom/agent"
	"github.com/loomkit/loom/event"
	"github.com/loomkit/loom/session"
	"github.com/loomkit/loom/session/memsession"
	"github.com/loomkit/loom/tool"
	"github.com/loomkit/loom/tool/functiontool"
)

// newToolContext returns the context a tool sees when an agent calls it in
// a fresh session.
func newToolContext(t testing.TB) *agent.CallbackContext {
	t.Helper()
	ctx := context.Background()
	svc := memsession.NewService()
	sess, err := svc.Create(ctx, session.Key{AppName: "app", UserID: "u1", SessionID: "s1"}, map[string]any{"greeting": "hi"})
	if err != nil {
		t.Fatal(err)
	}
	a, err := agent.New(agent.Config{Name: "caller", Run: func(context.Context, *agent.Invocation) iter.Seq2[*event.Event, error] {
		return func(func(*event.Event, error) bool) {}
	}})
	if err != nil {
		t.Fatal(err)
	}
	tree, err := agent.NewTree(a)
	if err != nil {
		t.Fatal(err)
	}
	inv := agent.NewInvocation(agent.InvocationConfig{Session: sess, Tree: tree})
	return agent.NewToolContext(inv.For(a), "call-1")
}

type Address struct {
	Street string `json:"street" jsonschema:"street and number"`
	Zip    int    `json:"zip"`
}

type OrderArgs struct {
	Customer string   `json:"customer" jsonschema:"the customer's full name"`
	Quantity int      `json:"quantity" jsonschema:"how many items"`
	Express  bool     `json:"express,omitempty"`
	Tags     []string `json:"tags,omitempty" jsonschema:"free-form labels"`
	Ship     Address  `json:"ship"`
	Note     *string  `json:"note,omitempty"`
	Priority uint8    `json:"priority,omitempty"`
	Internal string   `json:"-"`
}

type OrderResult struct {
	ID    string  `json:"id"`
	Total float64 `json:"total"`
}

func newOrderTool(t testing.TB) *functiontool.Tool[OrderArgs, OrderResult] {
	t.Helper()
	ot, err := functiontool.New(functiontool.Config{Name: "place_order", Description: "Places an order."},
		func(_ context.Context, _ tool.Context, args OrderArgs) (OrderResult, error) {
			return OrderResult{ID: "o-" + args.Customer, Total: float64(args.Quantity) * 2.5}, nil
		})
	if err != nil {
		t.Fatal(err)
	}
	return ot
}

// TestT1SchemaInference checks the schema inferred from the argument type:
// required fields are those without omitempty, descriptions come from
// jsonschema tags, nested structs and slices are described.
func TestT1SchemaInference(t *testing.T) {
	ot := newOrderTool(t)
	d := ot.Declaration()
	if d.Name != "place_order" || d.Description != "Places an order." {
		t.Fatalf("declaration name/description = %q/%q", d.Name, d.Description)
	}
	s, ok := d.ParametersJsonSchema.(*jsonschema.Schema)
	if !ok {
		t.Fatalf("ParametersJsonSchema is %T, want *jsonschema.Schema", d.ParametersJsonSchema)
	}
	if s.Type != "object" {
		t.Errorf("type = %q, want object", s.Type)
	}
	if got, want := strings.Join(s.Required, ","), "customer,quantity,ship"; got != want {
		t.Errorf("required = %s, want %s", got, want)
	}
	if _, ok := s.Properties["Internal"]; ok {
		t.Error(`a json:"-" field is in the schema`)
	}
	if got := s.Properties["customer"].Description; got != "the customer's full name" {
		t.Errorf("customer description = %q", got)
	}
	if got := s.Properties["quantity"].Type; got != "integer" {
		t.Errorf("quantity type = %q, want integer", got)
	}
	if got := s.Properties["express"].Type; got != "boolean" {
		t.Errorf("express type = %q, want boolean", got)
	}
	tags := s.Properties["tags"]
	if tags.Items == nil || tags.Items.Type != "string" || tags.Description != "free-form labels" {
		t.Errorf("tags schema = %+v", tags)
	}
	ship := s.Properties["ship"]
	if ship.Type != "object" || ship.Properties["street"].Description != "street and number" ||
		strings.Join(ship.Required, ",") != "street,zip" {
		t.Errorf("nested ship schema = %+v", ship)
	}
	// The declaration is what the model adapters marshal.
	b, err := json.Marshal(d.ParametersJsonSchema)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(b), `"required":["customer","quantity","ship"]`) {
		t.Errorf("marshaled schema lacks required list: %s", b)
	}
	r, ok := d.ResponseJsonSchema.(*jsonschema.Schema)
	if !ok || r.Properties["total"] == nil || r.Properties["total"].Type != "number" {
		t.Errorf("response schema = %#v", d.ResponseJsonSchema)
	}
}

func TestT1PointerAndMapArgs(t *testing.T) {
	ctx := context.Background()
	tc := newToolContext(t)
	pt, err := functiontool.New(functiontool.Config{Name: "ptr"}, func(_ context.Context, _ tool.Context, a *Address) (string, error) {
		if a == nil {
			return "", errors.New("nil args")
		}
		return fmt.Sprintf("%s %d", a.Street, a.Zip), nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if s := pt.InputSchema(); s.Type != "object" || len(s.Types) != 0 {
		t.Errorf("pointer args schema type = %q %q, want object", s.Type, s.Types)
	}
	res, err := pt.Run(ctx, tc, map[string]any{"street": "Main 1", "zip": 12345.0})
	if err != nil {
		t.Fatal(err)
	}
	if res["result"] != "Main 1 12345" {
		t.Errorf("result = %v", res)
	}

	mt, err := functiontool.New(functiontool.Config{Name: "echo"}, func(_ context.Context, _ tool.Context, a map[string]any) (map[string]any, error) {
		a["seen"] = true
		return a, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	args := map[string]any{"x": 1.0, "nested": map[string]any{"y": "z"}}
	res, err = mt.Run(ctx, tc, args)
	if err != nil {
		t.Fatal(err)
	}
	if res["x"] != 1.0 || res["seen"] != true || res["nested"].(map[string]any)["y"] != "z" {
		t.Errorf("result = %v", res)
	}
	if _, mutated := args["seen"]; mutated {
		t.Error("the function received the model's own argument map")
	}
	// Nil arguments are an empty object.
	if _, err := mt.Run(ctx, tc, nil); err != nil {
		t.Errorf("nil args: %v", err)
	}
}

func TestNewRejectsBadConfig(t *testing.T) {
	fn := func(context.Context, tool.Context, struct{}) (int, error) { return 0, nil }
	for _, name := range []string{"", "has space", "9lives", strings.Repeat("a", 65), "semi;colon"} {
		if _, err := functiontool.New(functiontool.Config{Name: name}, fn); !errors.Is(err, functiontool.ErrInvalidConfig) {
			t.Errorf("name %q: err = %v, want ErrInvalidConfig", name, err)
		}
	}
	if _, err := functiontool.New(functiontool.Config{Name: "ok_name.v1:x-y"}, fn); err != nil {
		t.Errorf("valid name rejected: %v", err)
	}
	_, err := functiontool.New(functiontool.Config{Name: "s"}, func(context.Context, tool.Context, string) (int, error) { return 0, nil })
	if !errors.Is(err, functiontool.ErrInvalidConfig) {
		t.Errorf("string args: err = %v, want ErrInvalidConfig", err)
	}
	_, err = functiontool.New(functiontool.Config{Name: "c"}, func(context.Context, tool.Context, struct{ C chan int }) (int, error) { return 0, nil })
	if !errors.Is(err, functiontool.ErrInvalidConfig) {
		t.Errorf("channel field: err = %v, want ErrInvalidConfig", err)
	}
	if _, err := functiontool.New[struct{}, int](functiontool.Config{Name: "nil"}, nil); !errors.Is(err, functiontool.ErrInvalidConfig) {
		t.Errorf("nil function: err = %v, want ErrInvalidConfig", err)
	}
}

// TestR9ArgumentErrors checks that arguments not matching the schema give
// an error naming the field and the problem, and that the function does not
// run.
func TestR9ArgumentErrors(t *testing.T) {
	called := false
	ot, err := functiontool.New(functiontool.Config{Name: "place_order"},
		func(_ context.Context, _ tool.Context, args OrderArgs) (OrderResult, error) {
			called = true
			return OrderResult{}, nil
		})
	if err != nil {
		t.Fatal(err)
	}
	valid := func() map[string]any {
		return map[string]any{"customer": "Ann", "quantity": 2.0, "ship": map[string]any{"street": "Main 1", "zip": 1000.0}}
	}
	tests := []struct {
		name   string
		edit   func(m map[string]any)
		field  string
		reason string
	}{
		{"missing required", func(m map[string]any) { delete(m, "customer") }, "customer", "required"},
		{"wrong type", func(m map[string]any) { m["quantity"] = "two" }, "quantity", `must be of type integer, got string "two"`},
		{"fraction for integer", func(m map[string]any) { m["quantity"] = 2.5 }, "quantity", "must be of type integer, got number 2.5"},
		{"nested missing", func(m map[string]any) { delete(m["ship"].(map[string]any), "zip") }, "ship.zip", "required"},
		{"nested wrong type", func(m map[string]any) { m["ship"].(map[string]any)["zip"] = true }, "ship.zip", "must be of type integer, got boolean true"},
		{"array item", func(m map[string]any) { m["tags"] = []any{"a", 3.0} }, "tags[1]", "must be of type string, got integer 3"},
		{"object for string", func(m map[string]any) { m["customer"] = map[string]any{} }, "customer", "got object"},
		{"unknown argument", func(m map[string]any) { m["colour"] = "red" }, "colour", "not a known argument"},
		{"below minimum", func(m map[string]any) { m["priority"] = -1.0 }, "priority", "must be at least 0, got -1"},
		{"above maximum", func(m map[string]any) { m["priority"] = 300.0 }, "priority", "must be at most 255, got 300"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			called = false
			args := valid()
			tt.edit(args)
			_, err := ot.Run(context.Background(), newToolContext(t), args)
			if !errors.Is(err, functiontool.ErrInvalidArguments) {
				t.Fatalf("err = %v, want ErrInvalidArguments", err)
			}
			var ae *functiontool.ArgumentError
			if !errors.As(err, &ae) {
				t.Fatalf("err %T is not an *ArgumentError", err)
			}
			if ae.Field != tt.field || !strings.Contains(ae.Reason, tt.reason) || ae.Tool != "place_order" {
				t.Errorf("error = {field %q reason %q}, want field %q reason containing %q", ae.Field, ae.Reason, tt.field, tt.reason)
			}
			if msg := err.Error(); !strings.Contains(msg, `"`+tt.field+`"`) || !strings.Contains(msg, "place_order") {
				t.Errorf("message %q does not name the tool and field", msg)
			}
			if called {
				t.Error("the function ran with invalid arguments")
			}
		})
	}
	if _, err := ot.Run(context.Background(), newToolContext(t), valid()); err != nil || !called {
		t.Errorf("valid args: err = %v, called = %v", err, called)
	}
}

// TestInputSchemaOverride uses a hand-written schema with an enum and a
// default, which tags cannot express.
func TestInputSchemaOverride(t *testing.T) {
	type Args struct {
		City string `json:"city"`
		Unit string `json:"unit"`
	}
	schema := &jsonschema.Schema{
		Type: "object",
		Properties: map[string]*jsonschema.Schema{
			"city": {Type: "string", Description: "city name"},
			"unit": {Type: "string", Enum: []any{"c", "f"}, Default: json.RawMessage(`"c"`)},
		},
		Required: []string{"city"},
	}
	wt, err := functiontool.New(functiontool.Config{Name: "weather", InputSchema: schema},
		func(_ context.Context, _ tool.Context, a Args) (string, error) { return a.City + "/" + a.Unit, nil })
	if err != nil {
		t.Fatal(err)
	}
	if wt.Declaration().ParametersJsonSchema != schema {
		t.Error("declaration does not use the override schema")
	}
	ctx := context.Background()
	args := map[string]any{"city": "Oslo"}
	res, err := wt.Run(ctx, newToolContext(t), args)
	if err != nil {
		t.Fatal(err)
	}
	if res["result"] != "Oslo/c" {
		t.Errorf("default not applied: %v", res)
	}
	if _, ok := args["unit"]; ok {
		t.Error("applying defaults modified the model's arguments")
	}
	_, err = wt.Run(ctx, newToolContext(t), map[string]any{"city": "Oslo", "unit": "k"})
	var ae *functiontool.ArgumentError
	if !errors.As(err, &ae) || ae.Field != "unit" || !strings.Contains(ae.Reason, `one of ["c","f"]`) {
		t.Errorf("enum violation: err = %v", err)
	}
}

// TestResultWrapping checks ADK's convention: objects are the response,
// anything else is wrapped as {"result": value}.
func TestResultWrapping(t *testing.T) {
	ctx := context.Background()
	tc := newToolContext(t)
	run := func(t *testing.T, tl tool.Function) map[string]any {
		t.Helper()
		res, err := tl.Run(ctx, tc, map[string]any{})
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	type empty struct{}
	must := func(tl tool.Function, err error) tool.Function {
		if err != nil {
			t.Fatal(err)
		}
		return tl
	}
	intTool := must(functiontool.New(functiontool.Config{Name: "int"}, func(context.Context, tool.Context, empty) (int, error) { return 42, nil }))
	strTool := must(functiontool.New(functiontool.Config{Name: "str"}, func(context.Context, tool.Context, empty) (string, error) { return "hi", nil }))
	sliceTool := must(functiontool.New(functiontool.Config{Name: "slice"}, func(context.Context, tool.Context, empty) ([]int, error) { return []int{1, 2}, nil }))
	structTool := must(functiontool.New(functiontool.Config{Name: "struct"}, func(context.Context, tool.Context, empty) (OrderResult, error) {
		return OrderResult{ID: "x", Total: 1.5}, nil
	}))
	ptrTool := must(functiontool.New(functiontool.Config{Name: "ptr"}, func(context.Context, tool.Context, empty) (*OrderResult, error) {
		return &OrderResult{ID: "y"}, nil
	}))
	nilTool := must(functiontool.New(functiontool.Config{Name: "nil"}, func(context.Context, tool.Context, empty) (*OrderResult, error) { return nil, nil }))
	anyTool := must(functiontool.New(functiontool.Config{Name: "any"}, func(context.Context, tool.Context, empty) (any, error) { return true, nil }))

	if got := run(t, intTool); got["result"] != 42.0 || len(got) != 1 {
		t.Errorf("int result = %v", got)
	}
	if got := run(t, strTool); got["result"] != "hi" {
		t.Errorf("string result = %v", got)
	}
	if got := run(t, sliceTool); fmt.Sprint(got["result"]) != "[1 2]" {
		t.Errorf("slice result = %v", got)
	}
	if got := run(t, structTool); got["id"] != "x" || got["total"] != 1.5 || len(got) != 2 {
		t.Errorf("struct result = %v", got)
	}
	if got := run(t, ptrTool); got["id"] != "y" {
		t.Errorf("pointer result = %v", got)
	}
	if got := run(t, nilTool); got != nil {
		t.Errorf("nil pointer result = %v, want nil", got)
	}
	if got := run(t, anyTool); got["result"] != true {
		t.Errorf("any result = %v", got)
	}
	r := intTool.Declaration().ResponseJsonSchema.(*jsonschema.Schema)
	if r.Properties["result"].Type != "integer" {
		t.Errorf("int response schema = %+v", r)
	}
	if anyTool.Declaration().ResponseJsonSchema != nil {
		t.Error("an interface result has a response schema")
	}
}

// TestR8PanicRecovered checks that a panicking function becomes an error and
// the tool stays usable.
func TestR8PanicRecovered(t *testing.T) {
	pt, err := functiontool.New(functiontool.Config{Name: "boom"}, func(_ context.Context, _ tool.Context, a struct {
		Panic bool `json:"panic"`
	}) (string, error) {
		if a.Panic {
			panic("kaboom")
		}
		return "fine", nil
	})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	_, err = pt.Run(ctx, newToolContext(t), map[string]any{"panic": true})
	if !errors.Is(err, functiontool.ErrPanic) {
		t.Fatalf("err = %v, want ErrPanic", err)
	}
	var pe *functiontool.PanicError
	if !errors.As(err, &pe) || pe.Value != "kaboom" || len(pe.Stack) == 0 || pe.Tool != "boom" {
		t.Errorf("panic error = %+v", pe)
	}
	if !strings.Contains(err.Error(), "kaboom") || strings.Contains(err.Error(), "goroutine") {
		t.Errorf("message %q should hold the panic value and no stack", err)
	}
	errFire := errors.New("disk on fire")
	et, err := functiontool.New(functiontool.Config{Name: "fire"}, func(context.Context, tool.Context, struct{}) (int, error) {
		panic(errFire)
	})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := et.Run(ctx, newToolContext(t), nil); !errors.Is(err, errFire) || !errors.Is(err, functiontool.ErrPanic) {
		t.Errorf("panic with an error value: err = %v, want it to wrap the value and ErrPanic", err)
	}
	res, err := pt.Run(ctx, newToolContext(t), map[string]any{"panic": false})
	if err != nil || res["result"] != "fine" {
		t.Errorf("after a panic: %v, %v", res, err)
	}
}

func TestFunctionErrorReturned(t *testing.T) {
	errOut := errors.New("out of stock")
	et, err := functiontool.New(functiontool.Config{Name: "fail"}, func(context.Context, tool.Context, struct{}) (int, error) {
		return 0, errOut
	})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := et.Run(context.Background(), newToolContext(t), nil); !errors.Is(err, errOut) {
		t.Errorf("err = %v, want %v", err, errOut)
	}
}

func TestLongRunningFlag(t *testing.T) {
	fn := func(context.Context, tool.Context, struct{}) (string, error) { return "pending", nil }
	lt, err := functiontool.New(functiontool.Config{Name: "approve", LongRunning: true}, fn)
	if err != nil {
		t.Fatal(err)
	}
	st, err := functiontool.New(functiontool.Config{Name: "quick"}, fn)
	if err != nil {
		t.Fatal(err)
	}
	var tl tool.Tool = lt
	lr, ok := tl.(tool.LongRunning)
	if !ok || !lr.IsLongRunning() {
		t.Error("LongRunning config not reported")
	}
	if st.IsLongRunning() {
		t.Error("a plain tool reports long-running")
	}
}

// TestToolContextState checks that the function's state writes are staged
// in the tool context's actions.
func TestToolContextState(t *testing.T) {
	st, err := functiontool.New(functiontool.Config{Name: "remember"}, func(_ context.Context, tc tool.Context, a struct {
		Fact string `json:"fact"`
	}) (map[string]any, error) {
		g, _ := tc.State().Get("greeting")
		tc.State().Set("fact", a.Fact)
		return map[string]any{"greeting": g, "call": tc.FunctionCallID()}, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	tc := newToolContext(t)
	res, err := st.Run(context.Background(), tc, map[string]any{"fact": "sky is blue"})
	if err != nil {
		t.Fatal(err)
	}
	if res["greeting"] != "hi" || res["call"] != "call-1" {
		t.Errorf("result = %v", res)
	}
	if got := tc.Actions().StateDelta["fact"]; got != "sky is blue" {
		t.Errorf("staged delta = %v", tc.Actions().StateDelta)
	}
}

// TestConcurrentRun runs one tool from many goroutines (the calls of one
// model response run concurrently); run with -race.
func TestConcurrentRun(t *testing.T) {
	ot := newOrderTool(t)
	var wg sync.WaitGroup
	errs := make(chan error, 32)
	for i := range 32 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			tc := newToolContext(t)
			args := map[string]any{"customer": fmt.Sprint("c", i), "quantity": float64(i), "ship": map[string]any{"street": "s", "zip": 1.0}}
			if i%4 == 0 {
				delete(args, "customer")
			}
			res, err := ot.Run(context.Background(), tc, args)
			switch {
			case i%4 == 0 && !errors.Is(err, functiontool.ErrInvalidArguments):
				errs <- fmt.Errorf("call %d: err = %v, want invalid arguments", i, err)
			case i%4 != 0 && (err != nil || res["id"] != fmt.Sprint("o-c", i)):
				errs <- fmt.Errorf("call %d: %v, %v", i, res, err)
			}
			_ = ot.Declaration()
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

func BenchmarkRun(b *testing.B) {
	ot := newOrderTool(b)
	tc := newToolContext(b)
	args := map[string]any{"customer": "Ann", "quantity": 3.0, "tags": []any{"a", "b"}, "ship": map[string]any{"street": "s", "zip": 1.0}}
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := ot.Run(ctx, tc, args); err != nil {
			b.Fatal(err)
		}
	}
}
