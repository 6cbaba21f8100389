package fakeapi

import (
	"context"
	"testing"

	"google.golang.org/genai"

	"github.com/loomkit/loom/agent/llmagent"
	"github.com/loomkit/loom/model"
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

// RunWeather runs an LLM agent with a weather tool on llm through the real
// runner (the adapters' end-to-end tests): the model is expected to call
// get_weather for Paris and Tokyo, then answer. It returns the final answer.
func RunWeather(t *testing.T, llm model.LLM, streaming bool) string {
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

// MapPNG is the image RunWeatherMedia's tool returns with each forecast.
var MapPNG = []byte{0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n', 'm', 'a', 'p'}

// RunWeatherMedia is RunWeather with a tool that returns media: each
// forecast comes with a PNG weather map (MapPNG) as a functiontool.Media
// part. It checks that the committed function responses carry the map in
// their Parts and returns the model's final answer.
func RunWeatherMedia(t *testing.T, llm model.LLM) string {
	t.Helper()
	wt, err := functiontool.New(functiontool.Config{Name: "get_weather", Description: "Returns the forecast and map of a city."},
		func(_ context.Context, _ tool.Context, a weatherArgs) (functiontool.Media, error) {
			f := weather{Forecast: "rain"}
			if a.City == "Paris" {
				f.Forecast = "sunny"
			}
			return functiontool.Media{Response: f, Parts: []*genai.Part{genai.NewPartFromBytes(MapPNG, "image/png")}}, nil
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
	events, err := r.RunSync(t.Context(), "u", "s", genai.NewContentFromText("Weather in Paris and Tokyo?", genai.RoleUser), nil)
	if err != nil {
		t.Fatal(err)
	}
	var withMap int
	for _, ev := range events {
		for _, fr := range ev.FunctionResponses() {
			if len(fr.Parts) == 1 && fr.Parts[0].InlineData != nil && string(fr.Parts[0].InlineData.Data) == string(MapPNG) {
				withMap++
			}
		}
	}
	if withMap != 2 {
		t.Errorf("got %d function responses with the map, want 2", withMap)
	}
	last := events[len(events)-1]
	if !last.IsFinalResponse() {
		t.Fatalf("last event is not a final response: %+v", last)
	}
	return last.Text()
}
