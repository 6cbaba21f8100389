package multiagent_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"google.golang.org/genai"

	"github.com/loomkit/loom/event"
	"github.com/loomkit/loom/examples/multiagent"
	"github.com/loomkit/loom/runner"
	"github.com/loomkit/loom/session/memsession"
)

func newRunner(t testing.TB) *runner.Runner {
	t.Helper()
	ag, err := multiagent.New(multiagent.Offline())
	if err != nil {
		t.Fatal(err)
	}
	r, err := runner.New(runner.Config{AppName: "multiagent", Agent: ag, Sessions: memsession.NewService(), AutoCreateSession: true})
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// summary renders the complete events of a turn as "author: what" lines.
func summary(events []*event.Event) []string {
	var out []string
	for _, ev := range events {
		if ev.Partial {
			continue
		}
		for _, fc := range ev.FunctionCalls() {
			out = append(out, fmt.Sprintf("%s: call %s %v", ev.Author, fc.Name, fc.Args))
		}
		for _, fr := range ev.FunctionResponses() {
			out = append(out, fmt.Sprintf("%s: response %s", ev.Author, fr.Name))
		}
		if ev.Actions.TransferToAgent != "" {
			out = append(out, fmt.Sprintf("%s: transfer to %s", ev.Author, ev.Actions.TransferToAgent))
		}
		if ev.IsFinalResponse() && ev.Content != nil {
			out = append(out, fmt.Sprintf("%s: %s", ev.Author, ev.Content.Parts[0].Text))
		}
	}
	return out
}

// TestTransferBetweenAgents follows a conversation across three turns: the
// coordinator transfers to a specialist, the specialist keeps the next turn
// and hands it to its peer, and small talk goes back to the coordinator.
func TestTransferBetweenAgents(t *testing.T) {
	r := newRunner(t)
	ctx := context.Background()
	turns := []struct {
		say       string
		wantTrail []string // substrings expected in order
		answerBy  string
	}{
		{"What's the weather in Oslo?", []string{"coordinator: call transfer_to_agent", "transfer to weather_specialist", "weather_specialist: call get_weather map[city:Oslo]", "weather_specialist: Oslo:"}, multiagent.Weather},
		{"now add 2 and 40", []string{"weather_specialist: call transfer_to_agent", "transfer to math_specialist", "math_specialist: call add", "math_specialist: That makes 42."}, multiagent.Math},
		{"thanks, hello!", []string{"math_specialist: call transfer_to_agent map[agent_name:coordinator]", "coordinator: Hello, I'm the coordinator."}, multiagent.Coordinator},
	}
	for _, turn := range turns {
		for _, streaming := range []bool{false, true} {
			sid := fmt.Sprint("s-", streaming)
			events, err := r.RunSync(ctx, "u", sid, genai.NewContentFromText(turn.say, genai.RoleUser), &runner.RunOptions{Streaming: streaming})
			if err != nil {
				t.Fatal(err)
			}
			lines := summary(events)
			all := strings.Join(lines, "\n")
			pos := 0
			for _, want := range turn.wantTrail {
				i := strings.Index(all[pos:], want)
				if i < 0 {
					t.Fatalf("turn %q (streaming=%v): missing %q after position %d in:\n%s", turn.say, streaming, want, pos, all)
				}
				pos += i + len(want)
			}
			last := events[len(events)-1]
			if last.Author != turn.answerBy || !last.IsFinalResponse() {
				t.Errorf("turn %q: last event by %s (final %v), want a final answer by %s", turn.say, last.Author, last.IsFinalResponse(), turn.answerBy)
			}
		}
	}
}

// The coordinator hands a weather question to its specialist.
func Example() {
	ag, err := multiagent.New(multiagent.Offline())
	if err != nil {
		panic(err)
	}
	r, err := runner.New(runner.Config{AppName: "desk", Agent: ag, Sessions: memsession.NewService(), AutoCreateSession: true})
	if err != nil {
		panic(err)
	}
	events, err := r.RunSync(context.Background(), "user", "s1", genai.NewContentFromText("Is it sunny in Rome?", genai.RoleUser), nil)
	if err != nil {
		panic(err)
	}
	for _, line := range summary(events) {
		fmt.Println(line)
	}
	// Output:
	// coordinator: call transfer_to_agent map[agent_name:weather_specialist]
	// coordinator: response transfer_to_agent
	// coordinator: transfer to weather_specialist
	// weather_specialist: call get_weather map[city:Rome]
	// weather_specialist: response get_weather
	// weather_specialist: Rome: 8°C and partly cloudy.
}
