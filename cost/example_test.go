package cost_test

import (
	"fmt"
	"log"

	"google.golang.org/genai"

	"github.com/loomkit/loom/cost"
	"github.com/loomkit/loom/event"
)

// Prices read from YAML price a session's stored events, per turn and in
// total.
func Example() {
	prices, err := cost.Parse([]byte(`
models:
  gemini-2.5-flash: {input: 0.30, output: 2.50, cached_input: 0.03}
`))
	if err != nil {
		log.Fatal(err)
	}
	answer := &event.Event{InvocationID: "inv-1", Author: "assistant"}
	answer.ModelVersion = "gemini-2.5-flash"
	answer.UsageMetadata = &genai.GenerateContentResponseUsageMetadata{
		PromptTokenCount: 12000, CachedContentTokenCount: 10000, CandidatesTokenCount: 800, TotalTokenCount: 12800}
	usage := cost.Session([]*event.Event{answer}, prices)
	for _, turn := range usage.Turns {
		fmt.Printf("%s: %d tokens, $%.6f\n", turn.InvocationID, turn.Total, turn.Cost)
	}
	fmt.Printf("session: %d tokens (%d cached), $%.6f\n", usage.Total.Total, usage.Total.Cached, usage.Total.Cost)
	// Output:
	// inv-1: 12800 tokens, $0.002900
	// session: 12800 tokens (10000 cached), $0.002900
}
