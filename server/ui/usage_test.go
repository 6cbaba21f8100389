package ui_test

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"os"
	"os/exec"
	"slices"
	"testing"
	"time"
)

// TestUsageSummary runs the Usage tab's usageSummary (static/render.js)
// with node: tokens with the cost, the cost marked when some responses
// had no price, tokens only when none had, and small costs with the
// precision they need.
func TestUsageSummary(t *testing.T) {
	if _, err := exec.LookPath("node"); err != nil {
		t.Fatal("node is needed to run the UI's modules:", err)
	}
	src, err := os.ReadFile("static/render.js")
	if err != nil {
		t.Fatal(err)
	}
	usages := `[
		{"responses": 2, "total_tokens": 12345, "cost": 0.0046, "unpriced_responses": 0},
		{"responses": 2, "total_tokens": 4000, "cost": 0.0023, "unpriced_responses": 1},
		{"responses": 1, "total_tokens": 550, "cost": 0, "unpriced_responses": 1},
		{"responses": 1, "total_tokens": 10, "cost": 0.00000003, "unpriced_responses": 0},
		{"responses": 3, "total_tokens": 2000000, "cost": 12.5, "unpriced_responses": 0}
	]`
	script := `import { usageSummary } from 'data:text/javascript;base64,` + base64.StdEncoding.EncodeToString(src) + `';
console.log(JSON.stringify(` + usages + `.map(usageSummary)));`
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, "node", "--input-type=module", "-e", script).CombinedOutput()
	if err != nil {
		t.Fatalf("node: %v\n%s", err, out)
	}
	var got []string
	if err := json.Unmarshal(out, &got); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	want := []string{"12,345 tokens · $0.0046", "4,000 tokens · $0.0023 + unpriced", "550 tokens",
		"10 tokens · <$0.0001", "2,000,000 tokens · $12.50"}
	if !slices.Equal(got, want) {
		t.Errorf("summaries %q, want %q", got, want)
	}
}
