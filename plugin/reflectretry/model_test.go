package reflectretry_test

import (
	"context"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/google/jsonschema-go/jsonschema"
	"google.golang.org/genai"

	"github.com/loomkit/loom/agent/llmagent"
	"github.com/loomkit/loom/model"
	"github.com/loomkit/loom/model/scripted"
	"github.com/loomkit/loom/plugin/reflectretry"
	"github.com/loomkit/loom/runner"
	"github.com/loomkit/loom/session/memsession"
)

func runAgent(t *testing.T, cfg llmagent.Config) (string, error) {
	t.Helper()
	a, err := llmagent.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	r, err := runner.New(runner.Config{AppName: "app", Agent: a, Sessions: memsession.NewService(), AutoCreateSession: true})
	if err != nil {
		t.Fatal(err)
	}
	evs, err := r.RunSync(context.Background(), "u", "s", genai.NewContentFromText("go", genai.RoleUser), nil)
	if err != nil {
		return "", err
	}
	return evs[len(evs)-1].Text(), nil
}

// TestT13MalformedFunctionCall: an answer the provider reports as a
// malformed function call is not passed on; the model is asked again with
// the problem, and its next answer is used, marked with the retries.
func TestT13MalformedFunctionCall(t *testing.T) {
	var n atomic.Int64
	var second *model.Request
	m := scripted.New("m", func(_ context.Context, req *model.Request) (scripted.Turn, error) {
		if n.Add(1) == 1 {
			return scripted.Turn{ErrorCode: "MALFORMED_FUNCTION_CALL", ErrorMessage: "unexpected token"}, nil
		}
		second = req
		return scripted.Text("fixed"), nil
	})
	got, err := runAgent(t, llmagent.Config{Name: "a", Model: reflectretry.WrapModel(m, reflectretry.ModelConfig{})})
	if err != nil || got != "fixed" {
		t.Fatalf("answer %q, err %v", got, err)
	}
	last := second.Contents[len(second.Contents)-1]
	if last.Role != genai.RoleUser || !strings.Contains(last.Parts[0].Text, "malformed function call: unexpected token") {
		t.Fatalf("retry request ends with %+v", last)
	}
}

// TestT13OutputSchema: an answer that is not JSON, then one that misses a
// required field, are each sent back; the third is valid and becomes the
// agent's output. Without the wrapper the first fails the invocation.
func TestT13OutputSchema(t *testing.T) {
	schema := &jsonschema.Schema{Type: "object", Required: []string{"city"}, Properties: map[string]*jsonschema.Schema{"city": {Type: "string"}}}
	answers := []string{"Paris, I think", `{"town":"Paris"}`, `{"city":"Paris"}`}
	newModel := func() *scripted.Model {
		return scripted.NewSequence("m", scripted.Text(answers[0]), scripted.Text(answers[1]), scripted.Text(answers[2]))
	}
	m := newModel()
	got, err := runAgent(t, llmagent.Config{Name: "a", Model: reflectretry.WrapModel(m, reflectretry.ModelConfig{}), OutputSchema: schema, OutputKey: "out"})
	if err != nil || got != `{"city":"Paris"}` {
		t.Fatalf("answer %q, err %v", got, err)
	}
	reqs := m.Requests()
	if len(reqs) != 3 {
		t.Fatalf("%d requests", len(reqs))
	}
	if p := reqs[1].Contents[len(reqs[1].Contents)-1].Parts[0].Text; !strings.Contains(p, "not valid JSON") {
		t.Fatalf("second request: %q", p)
	}
	if p := reqs[2].Contents[len(reqs[2].Contents)-1].Parts[0].Text; !strings.Contains(p, "does not match the response schema") {
		t.Fatalf("third request: %q", p)
	}
	if _, err := runAgent(t, llmagent.Config{Name: "a", Model: newModel(), OutputSchema: schema}); err == nil {
		t.Fatal("without the wrapper the malformed answer passed")
	}
}

// TestT13RetriesRunOut: past the bound the last answer is passed on as is.
func TestT13RetriesRunOut(t *testing.T) {
	m := scripted.New("m", func(context.Context, *model.Request) (scripted.Turn, error) {
		return scripted.Turn{ErrorCode: "MALFORMED_FUNCTION_CALL", ErrorMessage: "bad"}, nil
	}).Recording()
	var last *model.Response
	for resp, err := range reflectretry.WrapModel(m, reflectretry.ModelConfig{MaxRetries: 2}).Generate(context.Background(), &model.Request{}, false) {
		if err != nil {
			t.Fatal(err)
		}
		last = resp
	}
	if len(m.Requests()) != 3 || last.ErrorCode != "MALFORMED_FUNCTION_CALL" || last.CustomMetadata[reflectretry.KeyModelRetries] != 2 {
		t.Fatalf("%d requests, last %+v", len(m.Requests()), last)
	}
}
