// Package multiagent is an example Loom application: a coordinator that
// hands the conversation to one of two specialists.
//
// The coordinator has no tools of its own; its sub-agents are a weather
// specialist (tool get_weather) and a math specialist (tool add). The LLM
// agent gives the coordinator the transfer_to_agent tool, and each
// specialist can transfer to its peer or back to the coordinator. After a
// transfer, the specialist keeps the conversation on the next turns until a
// question calls for someone else.
//
// [Offline] returns a scripted model that routes by topic the way a real
// model would, so the example runs without a network.
package multiagent

import (
	"context"
	"fmt"
	"strings"

	"github.com/loomkit/loom/agent"
	"github.com/loomkit/loom/agent/llmagent"
	"github.com/loomkit/loom/examples/assistant"
	"github.com/loomkit/loom/examples/internal/offline"
	"github.com/loomkit/loom/model"
	"github.com/loomkit/loom/model/scripted"
	"github.com/loomkit/loom/tool"
)

// Agent names.
const (
	Coordinator = "coordinator"
	Weather     = "weather_specialist"
	Math        = "math_specialist"
)

// New returns the coordinator with its two specialists, all answering with
// llm.
func New(llm model.LLM) (agent.Agent, error) {
	weatherTool, err := assistant.WeatherTool()
	if err != nil {
		return nil, fmt.Errorf("multiagent: %w", err)
	}
	addTool, err := assistant.AddTool()
	if err != nil {
		return nil, fmt.Errorf("multiagent: %w", err)
	}
	weather, err := llmagent.New(llmagent.Config{
		Name:        Weather,
		Description: "Answers questions about the weather in a city.",
		Model:       llm,
		Instruction: "You are a weather specialist. Use get_weather and answer in one sentence.",
		Tools:       []tool.Tool{weatherTool},
	})
	if err != nil {
		return nil, err
	}
	math, err := llmagent.New(llmagent.Config{
		Name:        Math,
		Description: "Does arithmetic: adds numbers.",
		Model:       llm,
		Instruction: "You are a math specialist. Use the add tool and give the result.",
		Tools:       []tool.Tool{addTool},
	})
	if err != nil {
		return nil, err
	}
	return llmagent.New(llmagent.Config{
		Name:        Coordinator,
		Description: "Greets the user and routes questions to the right specialist.",
		Model:       llm,
		Instruction: "You are the coordinator of a help desk. Transfer weather questions to " + Weather +
			" and arithmetic to " + Math + ". Handle greetings and anything else yourself, briefly.",
		SubAgents: []agent.Agent{weather, math},
	})
}

// Offline returns a scripted model for all three agents. It tells them
// apart by their tools, routes by topic (weather, arithmetic, anything else
// to the coordinator) with transfer_to_agent, and answers from tool results.
// It is deterministic and safe for concurrent use.
func Offline() model.LLM {
	return scripted.New("offline-multiagent", respond)
}

func respond(_ context.Context, req *model.Request) (scripted.Turn, error) {
	self := Coordinator
	switch {
	case offline.HasTool(req, "get_weather"):
		self = Weather
	case offline.HasTool(req, "add"):
		self = Math
	}
	for _, r := range scripted.LastFunctionResponse(req) {
		switch r.Name {
		case "get_weather":
			return scripted.Text(fmt.Sprintf("%s: %v°C and %v.", r.Response["city"], r.Response["temperature_c"], r.Response["conditions"])), nil
		case "add":
			return scripted.Text(fmt.Sprintf("That makes %v.", r.Response["sum"])), nil
		}
	}
	text := offline.UserText(req)
	target := Coordinator
	switch {
	case offline.HasWord(text, "weather", "temperature", "forecast", "raining", "sunny"):
		target = Weather
	case offline.HasWord(text, "add", "plus", "sum", "math") || strings.Contains(text, "+"):
		target = Math
	}
	if target != self && offline.HasTool(req, "transfer_to_agent") {
		return scripted.Call("transfer_to_agent", map[string]any{"agent_name": target}), nil
	}
	switch self {
	case Weather:
		return scripted.Call("get_weather", map[string]any{"city": offline.City(text, "Paris")}), nil
	case Math:
		nums := offline.Numbers(text, 2)
		if len(nums) < 2 {
			return scripted.Text("Give me two numbers to add."), nil
		}
		return scripted.Call("add", map[string]any{"a": nums[0], "b": nums[1]}), nil
	}
	return scripted.Text("Hello, I'm the coordinator. Ask me about the weather in a city or to add two numbers, and I'll bring in a specialist."), nil
}
