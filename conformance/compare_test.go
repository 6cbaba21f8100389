package conformance_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/loomkit/loom/conformance"
)

func events(t *testing.T, s string) []any {
	t.Helper()
	var evs []any
	if err := json.Unmarshal([]byte(s), &evs); err != nil {
		t.Fatal(err)
	}
	return evs
}

// TestCompareIgnoresRepeatedCallIDs checks that the function call ids a
// call's arguments repeat (a confirmation's original call, an input
// request's interrupt_id) are ignored as the call ids are, and that other
// arguments still count.
func TestCompareIgnoresRepeatedCallIDs(t *testing.T) {
	const tmpl = `[{"author":"a","content":{"role":"model","parts":[
		{"function_call":{"id":"ID1","name":"adk_request_confirmation","args":{"originalFunctionCall":{"id":"ID2","name":"delete_file","args":{"path":"P"}}}}},
		{"function_call":{"id":"ID3","name":"adk_request_input","args":{"interrupt_id":"ID3","message":"M"}}}]}}]`
	want := events(t, strings.NewReplacer("ID1", "c-1", "ID2", "c-2", "ID3", "c-3", "P", "x", "M", "ok?").Replace(tmpl))
	got := events(t, strings.NewReplacer("ID1", "d-1", "ID2", "d-2", "ID3", "d-3", "P", "x", "M", "ok?").Replace(tmpl))
	if m := conformance.CompareEvents(got, want); m != nil {
		t.Fatalf("events differing only in call ids: %v", m)
	}
	got = events(t, strings.NewReplacer("ID1", "d-1", "ID2", "d-2", "ID3", "d-3", "P", "y", "M", "ok?").Replace(tmpl))
	if m := conformance.CompareEvents(got, want); m == nil || !strings.Contains(m.Error(), "originalFunctionCall.args.path") {
		t.Errorf("a different original argument: %v", m)
	}
	// An interrupt_id that is not the call's own id is compared.
	other := strings.Replace(tmpl, `"interrupt_id":"ID3"`, `"interrupt_id":"X"`, 1)
	want = events(t, strings.NewReplacer("ID1", "c-1", "ID2", "c-2", "ID3", "c-3", "X", "i-1", "P", "x", "M", "ok?").Replace(other))
	got = events(t, strings.NewReplacer("ID1", "c-1", "ID2", "c-2", "ID3", "c-3", "X", "i-2", "P", "x", "M", "ok?").Replace(other))
	if m := conformance.CompareEvents(got, want); m == nil || !strings.Contains(m.Error(), "interrupt_id") {
		t.Errorf("a different interrupt_id of its own: %v", m)
	}
}
