package anthropic_test

import (
	"context"
	"strings"
	"testing"

	"google.golang.org/genai"

	"github.com/loomkit/loom/agent/llmagent"
	"github.com/loomkit/loom/model"
	"github.com/loomkit/loom/model/internal/fakeapi"
	"github.com/loomkit/loom/runner"
	"github.com/loomkit/loom/session/memsession"
	"github.com/loomkit/loom/tool"
	"github.com/loomkit/loom/tool/functiontool"
)

type weatherArgs struct {
	City string `json:"city"`
}

type weather struct {
	Forecast string `json:"forecast"`
}

// runWeather runs an LLM agent with a weather tool on llm through the real
// runner and returns the final answer.
func runWeather(t *testing.T, llm model.LLM, streaming bool) string {
	t.Helper()
	wt, err := functiontool.New(functiontool.Config{Name: "get_weather", Description: "Returns the forecast for a city."},
		func(_ context.Context, _ tool.Context, a weatherArgs) (weather, error) {
			if a.City == "Paris" {
				return weather{Forecast: "sunny"}, nil
			}
			return weather{Forecast: "rain"}, nil
		})
	if err != nil {
		t.Fatal(err)
	}
	a, err := llmagent.New(llmagent.Config{Name: "forecaster", Model: llm, Instruction: "Answer weather questions.", Tools: []tool.Tool{wt}})
	if err != nil {
		t.Fatal(err)
	}
	r, err := runner.New(runner.Config{AppName: "app", Agent: a, Sessions: memsession.NewService(), AutoCreateSession: true})
	if err != nil {
		t.Fatal(err)
	}
	events, err := r.RunSync(t.Context(), "u", "s", genai.NewContentFromText("Weather in Paris and Tokyo?", genai.RoleUser), &runner.RunOptions{Streaming: streaming})
	if err != nil {
		t.Fatal(err)
	}
	var responses int
	for _, ev := range events {
		responses += len(ev.FunctionResponses())
	}
	if responses != 2 {
		t.Errorf("got %d function responses, want 2", responses)
	}
	last := events[len(events)-1]
	if !last.IsFinalResponse() {
		t.Fatalf("last event is not a final response: %+v", last)
	}
	return last.Text()
}

// TestRunnerEndToEnd runs call → tool → answer through the runner against
// the fake Messages server, with and without streaming. The thinking block
// of the tool turn goes back with its signature.
func TestRunnerEndToEnd(t *testing.T) {
	for _, streaming := range []bool{false, true} {
		calls, answer := fakeapi.File(t, 200, "testdata/tool_use.json", false), fakeapi.File(t, 200, "testdata/text.json", false)
		if streaming {
			calls, answer = fakeapi.File(t, 200, "testdata/stream_tools.sse", true), fakeapi.File(t, 200, "testdata/stream_text.sse", true)
		}
		srv := fakeapi.Start(t, calls, answer)
		if got := runWeather(t, newModel(t, srv, nil), streaming); got != "It is sunny in Paris." {
			t.Errorf("streaming=%v: answer = %q", streaming, got)
		}
		reqs := srv.Requests()
		if len(reqs) != 2 {
			t.Fatalf("streaming=%v: got %d model calls, want 2", streaming, len(reqs))
		}
		second := string(reqs[1].Body)
		for _, want := range []string{`"tool_use_id":"toolu_a"`, `"tool_use_id":"toolu_b"`, `sunny`, `rain`, `"signature":"sig-abc"`, `"system":[`} {
			if !strings.Contains(second, want) {
				t.Errorf("streaming=%v: second request lacks %s: %s", streaming, want, second)
			}
		}
	}
}
