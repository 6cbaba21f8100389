package agentconfig_test

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/loomkit/loom/agent/agentconfig"
	"github.com/loomkit/loom/model"
	"github.com/loomkit/loom/model/fallback"
	"github.com/loomkit/loom/model/scripted"
)

// TestFallbackModelsAndAdvisorTool: fallback_models makes the agent's model
// a chain of the named models, and an AdvisorTool entry gives the agent an
// advisor (its own chain) within the budgets of its args. The primaries
// fail with 503, so the backups answer.
func TestFallbackModelsAndAdvisorTool(t *testing.T) {
	unavailable := &model.Error{Provider: "test", StatusCode: 503, Message: "unavailable", Retryable: true}
	var asked []string
	var smallCalls int
	responders := map[string]scripted.Responder{
		"small-primary": func(context.Context, *model.Request) (scripted.Turn, error) {
			return scripted.Turn{Err: unavailable}, nil
		},
		"big-primary": func(context.Context, *model.Request) (scripted.Turn, error) {
			return scripted.Turn{Err: unavailable}, nil
		},
		"big-backup": func(_ context.Context, req *model.Request) (scripted.Turn, error) {
			return scripted.Text("advice on: " + scripted.LastUserText(req)), nil
		},
		"small-backup": func(_ context.Context, req *model.Request) (scripted.Turn, error) {
			smallCalls++
			if smallCalls == 1 {
				return scripted.Call("consult_advisor", map[string]any{"question": "train or plane?"}), nil
			}
			return scripted.Text("done"), nil
		},
	}
	open := func(name string) (model.LLM, error) {
		asked = append(asked, name)
		return scripted.New(name, responders[name]), nil
	}
	app := load(t, "fallback", &agentconfig.Options{Model: open})
	if want := []string{"small-primary", "small-backup", "big-primary", "big-backup"}; !sameSet(asked, want) {
		t.Fatalf("models opened: %v, want %v", asked, want)
	}
	evs := run(t, app.Root, "plan my trip")
	var advice string
	for _, ev := range evs {
		for _, r := range ev.FunctionResponses() {
			advice, _ = r.Response["advice"].(string)
		}
	}
	if !strings.Contains(advice, "train or plane?") {
		t.Fatalf("advisor's answer: %q", advice)
	}
	last := evs[len(evs)-1]
	if last.Text() != "done" || last.CustomMetadata[fallback.KeyModel] != "small-backup" || last.CustomMetadata[fallback.KeyOriginal] != "small-primary" {
		t.Fatalf("final event %q, metadata %v", last.Text(), last.CustomMetadata)
	}
}

func sameSet(a, b []string) bool {
	a, b = slices.Clone(a), slices.Clone(b)
	slices.Sort(a)
	slices.Sort(b)
	return slices.Equal(a, b)
}
