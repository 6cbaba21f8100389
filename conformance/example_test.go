package conformance_test

import (
	"fmt"

	"github.com/loomkit/loom/conformance"
)

// A recorded event (snake_case, as the case files hold it) and a live one
// (camelCase, as a server sends it) agree when only their ids, timestamps
// and the number's spelling differ; a different text is reported by path.
func ExampleCompareEvents() {
	recorded := []any{map[string]any{
		"id": "a", "timestamp": 1.5, "author": "helper", "invocation_id": "e-1",
		"content": map[string]any{"role": "model", "parts": []any{map[string]any{"text": "800 flights"}}},
		"actions": map[string]any{"state_delta": map[string]any{"total": 800.0}},
	}}
	live := []any{map[string]any{
		"id": "b", "timestamp": 2.5, "author": "helper", "invocationId": "e-2",
		"content": map[string]any{"role": "model", "parts": []any{map[string]any{"text": "800 flights"}}},
		"actions": map[string]any{"stateDelta": map[string]any{"total": 800}},
	}}
	fmt.Println(conformance.CompareEvents(live, recorded) == nil)

	live[0].(map[string]any)["content"] = map[string]any{"role": "model", "parts": []any{map[string]any{"text": "no flights"}}}
	fmt.Println(conformance.CompareEvents(live, recorded))
	// Output:
	// true
	// event 0 (author helper) differs:
	//   content.parts[0].text: want "800 flights", got "no flights"
}
