package event_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"log"
	"time"

	"google.golang.org/genai"

	"github.com/loomkit/loom/event"
)

// Create an event for a model's answer and inspect it.
func ExampleNewModelText() {
	e := event.NewModelText(event.NewInvocationID(), "root_agent", "The answer is 3.")
	e.Actions.StateDelta = map[string]any{"last_answer": 3}

	fmt.Println(e.Author, e.Content.Role)
	fmt.Println(e.Text())
	fmt.Println(len(e.ID), e.IsFinalResponse())
	// Output:
	// root_agent model
	// The answer is 3.
	// 36 true
}

// Events encode to ADK's wire JSON: camelCase keys, response fields at the
// top level, float-seconds timestamps and an actions object with its maps.
func ExampleEvent_MarshalJSON() {
	e := &event.Event{
		ID:           "7a0e",
		InvocationID: "e-6c1f",
		Author:       "root_agent",
		Timestamp:    time.Unix(1747130000, 123456000),
	}
	e.Content = genai.NewContentFromText("Hello!", genai.RoleModel)
	e.Actions.StateDelta = map[string]any{"user_name": "Ann"}

	b, _ := json.Marshal(e)
	fmt.Println(string(b))
	// Output:
	// {"content":{"parts":[{"text":"Hello!"}],"role":"model"},"invocationId":"e-6c1f","author":"root_agent","actions":{"stateDelta":{"user_name":"Ann"},"artifactDelta":{},"requestedAuthConfigs":{},"requestedToolConfirmations":{}},"id":"7a0e","timestamp":1747130000.123456}
}

// Decoding accepts snake_case keys and URL-safe base64, and keeps the keys
// of user data as they are.
func ExampleEvent_UnmarshalJSON() {
	in := `{"invocation_id":"e-1","author":"user","timestamp":1747130000.5,
		"content":{"role":"user","parts":[{"inline_data":{"mime_type":"image/png","data":"-_8"}}]},
		"actions":{"state_delta":{"user_name":"Ann"}},"someFutureField":true}`
	var e event.Event
	if err := json.Unmarshal([]byte(in), &e); err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(e.InvocationID, e.Timestamp.UTC().Format(time.RFC3339Nano))
	fmt.Printf("%s %x\n", e.Content.Parts[0].InlineData.MIMEType, e.Content.Parts[0].InlineData.Data)
	fmt.Println(e.Actions.StateDelta)
	// Output:
	// e-1 2025-05-13T09:53:20.5Z
	// image/png fbff
	// map[user_name:Ann]
}

// An event is a final response unless it calls or answers a tool, is a
// streamed chunk, or ends with a code-execution result.
func ExampleEvent_IsFinalResponse() {
	text := event.NewModelText("e-1", "agent", "Done.")
	call := event.New("e-1", "agent")
	call.Content = genai.NewContentFromFunctionCall("add", map[string]any{"a": 1, "b": 2}, genai.RoleModel)
	chunk := event.NewModelText("e-1", "agent", "Do")
	chunk.Partial = true

	fmt.Println(text.IsFinalResponse(), call.IsFinalResponse(), chunk.IsFinalResponse())

	// A call to a long-running tool pauses the invocation: it is final.
	call.LongRunningToolIDs = []string{"call-1"}
	fmt.Println(call.IsFinalResponse())
	// Output:
	// true false false
	// true
}

// History turns a session log into the contents an agent sends to its
// model; another agent's words are given as context.
func ExampleHistory() {
	log := []*event.Event{
		event.NewUserText("e-1", "Plan a trip."),
		event.NewModelText("e-1", "planner", "Go to Lisbon."),
		event.NewModelText("e-1", "booker", "Booking Lisbon."),
	}
	for _, c := range event.History(log, event.HistoryOptions{Agent: "booker"}) {
		fmt.Print(c.Role, ":")
		for _, p := range c.Parts {
			fmt.Printf(" %q", p.Text)
		}
		fmt.Println()
	}
	// Output:
	// user: "Plan a trip."
	// user: "For context:" "[planner] said: Go to Lisbon."
	// model: "Booking Lisbon."
}

// A compaction event's summary replaces the events it covers in the model's
// view of the log.
func ExampleModelView() {
	t0 := time.Unix(1747130000, 0)
	q := event.NewUserText("e-1", "What is 1 + 2?")
	q.Timestamp = t0
	a := event.NewModelText("e-1", "agent", "3")
	a.Timestamp = t0.Add(time.Second)
	summary := event.New("e-2", "user")
	summary.Timestamp = t0.Add(2 * time.Second)
	summary.Actions.Compaction = &event.Compaction{
		Start:   q.Timestamp,
		End:     a.Timestamp,
		Content: genai.NewContentFromText("The user asked 1 + 2; the agent said 3.", genai.RoleModel),
	}
	next := event.NewUserText("e-3", "And 2 + 2?")
	next.Timestamp = t0.Add(3 * time.Second)

	for _, e := range event.ModelView([]*event.Event{q, a, summary, next}) {
		fmt.Println(e.Text())
	}
	// Output:
	// The user asked 1 + 2; the agent said 3.
	// And 2 + 2?
}

func ExampleTypedText() {
	contents := []*genai.Content{
		genai.NewContentFromText("What's the weather?", genai.RoleUser),
		{Role: genai.RoleUser, Parts: []*genai.Part{{Text: event.ContextPrefix}, {Text: "[helper] said: sunny"}}},
	}
	fmt.Println(event.TypedText(contents))
	// Output: What's the weather?
}

func ExampleJSONForm() {
	type point struct {
		X int `json:"x"`
	}
	v, err := event.JSONForm([]point{{X: 1}})
	fmt.Printf("%#v %v\n", v, err)
	// Output: []interface {}{map[string]interface {}{"x":1}} <nil>
}

// A call key signs an event's calls before it is stored and checks them
// before a stored call runs: an edited argument fails the check.
func ExampleCallKey() {
	key, err := event.NewCallKey([]byte("a secret of at least 32 bytes...")) // in practice: random bytes
	if err != nil {
		log.Fatal(err)
	}
	ev := event.New("inv-1", "bank")
	ev.Content = genai.NewContentFromFunctionCall("send_money", map[string]any{"amount": 50}, genai.RoleModel)
	ev.Content.Parts[0].FunctionCall.ID = "call-1"
	if err := key.Sign(ev, "app", "alice"); err != nil {
		log.Fatal(err)
	}
	fmt.Println(key.Check(ev, "app", "alice"))
	ev.FunctionCalls()[0].Args["amount"] = 5000
	fmt.Println(errors.Is(key.Check(ev, "app", "alice"), event.ErrCallIntegrity))
	// Output:
	// <nil>
	// true
}
