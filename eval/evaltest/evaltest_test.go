package evaltest_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/loomkit/loom/eval/evaltest"
	"github.com/loomkit/loom/examples/assistant"
)

// recorder is a testing.TB that records failures instead of failing.
type recorder struct {
	testing.TB
	errs  []string
	fatal bool
}

func (r *recorder) Helper() {}
func (r *recorder) Errorf(format string, args ...any) {
	r.errs = append(r.errs, sprintf(format, args...))
}
func (r *recorder) Fatalf(format string, args ...any) {
	r.errs = append(r.errs, sprintf(format, args...))
	r.fatal = true
	panic(r)
}

const failingSet = `{
  "eval_set_id": "weather",
  "eval_cases": [{
    "eval_id": "paris",
    "conversation": [{
      "user_content": {"parts": [{"text": "What's the weather in Paris?"}], "role": "user"},
      "final_response": {"parts": [{"text": "It is sunny in Paris."}], "role": "model"},
      "intermediate_data": {"tool_uses": [{"name": "get_weather", "args": {"city": "Lyon"}}]}
    }]
  }]
}`

// (CONFORMANCE Q3)
func TestCheckFailsWithReadableDiff(t *testing.T) {
	ag, err := assistant.New(assistant.Offline())
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "weather.evalset.json")
	if err := os.WriteFile(path, []byte(failingSet), 0o644); err != nil {
		t.Fatal(err)
	}
	rec := &recorder{TB: t}
	func() {
		defer func() {
			if p := recover(); p != nil && p != rec {
				panic(p)
			}
		}()
		evaltest.Check(rec, ag, path)
	}()
	if len(rec.errs) != 1 {
		t.Fatalf("%d failures: %q", len(rec.errs), rec.errs)
	}
	msg := rec.errs[0]
	w := assistant.Forecast("Paris")
	for _, want := range []string{
		"eval case paris FAILED",
		"tool_trajectory_avg_score: 0.000 (threshold 1.000) FAILED",
		`- tools: get_weather{"city":"Lyon"}`,
		`+ tools: get_weather{"city":"Paris"}`,
		"- response: It is sunny in Paris.",
		"+ response: It is " + itoa(w.TemperatureC) + "°C and " + w.Conditions + " in Paris.",
	} {
		if !strings.Contains(msg, want) {
			t.Errorf("failure message lacks %q:\n%s", want, msg)
		}
	}
}

// (CONFORMANCE Q3)
func TestCheckPasses(t *testing.T) {
	ag, err := assistant.New(assistant.Offline())
	if err != nil {
		t.Fatal(err)
	}
	rec := &recorder{TB: t}
	evaltest.Check(rec, ag, "../../examples/assistant/assistant.evalset.json")
	if len(rec.errs) != 0 {
		t.Errorf("failures: %q", rec.errs)
	}
}
