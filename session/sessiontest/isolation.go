package sessiontest

import (
	"testing"

	"google.golang.org/genai"

	"github.com/loomkit/loom/session"
)

// testNoSharedMemory: nothing a caller passes in or gets back shares mutable
// memory with storage. The test mutates every map, slice and nested value it
// handed over or received, then reads the session again.
func testNoSharedMemory(t *testing.T, h *harness) {
	initial := map[string]any{
		"profile":   map[string]any{"name": "Ann", "tags": []any{"a", "b"}},
		"user:pref": map[string]any{"lang": "en"},
		"app:cfg":   []any{map[string]any{"x": 1}},
	}
	s := h.create(t, "u1", "s1", initial)
	wantInitial := canon(initial)

	// Mutate the creation input, including nested values.
	initial["profile"].(map[string]any)["name"] = "MUTATED"
	initial["profile"].(map[string]any)["tags"].([]any)[0] = "MUTATED"
	initial["user:pref"].(map[string]any)["lang"] = "MUTATED"
	initial["app:cfg"].([]any)[0].(map[string]any)["x"] = "MUTATED"
	initial["new"] = "MUTATED"
	if got := canon(h.get(t, s.Key()).State()); got != wantInitial {
		t.Errorf("mutating Create's input changed storage: %s, want %s", got, wantInitial)
	}

	// Mutate what reads return.
	st := s.State()
	st["profile"].(map[string]any)["name"] = "MUTATED"
	st["extra"] = 1
	if v, ok := s.Get("profile"); ok {
		v.(map[string]any)["tags"].([]any)[1] = "MUTATED"
	}
	if v, ok := s.Get("app:cfg"); ok {
		v.([]any)[0].(map[string]any)["x"] = "MUTATED"
	}
	if got := canon(s.State()); got != wantInitial {
		t.Errorf("mutating returned state changed the session copy: %s, want %s", got, wantInitial)
	}
	if got := canon(h.get(t, s.Key()).State()); got != wantInitial {
		t.Errorf("mutating returned state changed storage: %s, want %s", got, wantInitial)
	}

	// Mutate an appended event after the append.
	delta := map[string]any{"obj": map[string]any{"list": []any{"x"}}, "user:deep": map[string]any{"k": "v"}}
	ev := textEvent("ev-1", "original", delta)
	ev.Content.Parts = append(ev.Content.Parts, &genai.Part{FunctionCall: &genai.FunctionCall{Name: "f", Args: map[string]any{"a": map[string]any{"b": "c"}}}})
	ev.CustomMetadata = map[string]any{"m": map[string]any{"n": "o"}}
	ev.LongRunningToolIDs = []string{"lr"}
	h.appendEv(t, s, ev)
	stored := h.get(t, s.Key())
	wantEvent := canon(stored.Events()[0])
	wantState := canon(stored.State())

	ev.Content.Parts[0].Text = "MUTATED"
	ev.Content.Parts[1].FunctionCall.Args["a"].(map[string]any)["b"] = "MUTATED"
	ev.Actions.StateDelta["obj"].(map[string]any)["list"].([]any)[0] = "MUTATED"
	ev.Actions.StateDelta["user:deep"].(map[string]any)["k"] = "MUTATED"
	ev.Actions.StateDelta["added"] = "MUTATED"
	ev.CustomMetadata["m"].(map[string]any)["n"] = "MUTATED"
	ev.LongRunningToolIDs[0] = "MUTATED"
	checkStored(t, h, s.Key(), wantEvent, wantState, "mutating the appended event")
	if v, ok := s.Get("obj"); !ok || canon(v) != `{"list":["x"]}` {
		t.Errorf("mutating the appended event's delta changed the live state: %s", canon(v))
	}

	// Mutate events returned by a read.
	got := h.get(t, s.Key()).Events()[0]
	got.Content.Parts[0].Text = "MUTATED"
	got.Content.Parts[1].FunctionCall.Args["a"].(map[string]any)["b"] = "MUTATED"
	got.Actions.StateDelta["obj"].(map[string]any)["list"].([]any)[0] = "MUTATED"
	got.CustomMetadata["m"].(map[string]any)["n"] = "MUTATED"
	got.LongRunningToolIDs[0] = "MUTATED"
	got.ID = "MUTATED"
	checkStored(t, h, s.Key(), wantEvent, wantState, "mutating a read event")

	// Mutate sessions returned by List.
	res, err := h.svc.List(t.Context(), h.app, "u1", nil)
	if err != nil || len(res.Sessions) != 1 {
		t.Fatalf("List: %v, %v", res, err)
	}
	if v, ok := res.Sessions[0].Get("profile"); ok {
		v.(map[string]any)["name"] = "MUTATED"
	}
	res.Sessions[0].SetLocal("profile", "MUTATED")
	checkStored(t, h, s.Key(), wantEvent, wantState, "mutating a listed session")
}

func checkStored(t *testing.T, h *harness, key session.Key, wantEvent, wantState, what string) {
	t.Helper()
	fresh := h.get(t, key)
	if evs := fresh.Events(); len(evs) != 1 || canon(evs[0]) != wantEvent {
		t.Errorf("%s changed the stored event: %s, want %s", what, canon(evs), wantEvent)
	}
	if got := canon(fresh.State()); got != wantState {
		t.Errorf("%s changed stored state: %s, want %s", what, got, wantState)
	}
}
