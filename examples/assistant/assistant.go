// Package assistant is an example Loom application: a helpful assistant
// that uses function tools.
//
// The agent has four tools: get_weather reports (made-up, deterministic)
// weather for a city and remembers the city in session state, add adds two
// numbers, save_note stores a note as a text artifact, and send_email
// (pretends to) send an email, only once the user approves the call. [New]
// builds the
// agent around any model; [Offline] returns a scripted model that plays the
// part of a real one without a network, so the example runs anywhere:
//
//	go run ./cmd/loom run assistant
//	> What's the weather in Lisbon?
//	> email bob@example.com: lunch at noon
package assistant

import (
	"context"
	"fmt"
	"hash/fnv"
	"regexp"
	"strings"

	"google.golang.org/genai"

	"github.com/loomkit/loom/agent"
	"github.com/loomkit/loom/agent/llmagent"
	"github.com/loomkit/loom/examples/internal/offline"
	"github.com/loomkit/loom/model"
	"github.com/loomkit/loom/model/scripted"
	"github.com/loomkit/loom/tool"
	"github.com/loomkit/loom/tool/functiontool"
)

// Name is the name of the root agent.
const Name = "assistant"

// Description describes the application.
const Description = "A helpful assistant with weather, arithmetic, note-taking and email tools."

const instruction = `You are a friendly, concise assistant.
Use the get_weather tool for questions about the weather, the add tool for
additions, the save_note tool when the user asks you to remember or save
something, and the send_email tool to send an email (the user approves each
email before it is sent). Answer in one or two sentences.`

// WeatherArgs are the arguments of get_weather.
type WeatherArgs struct {
	City string `json:"city" jsonschema:"the city, for example Paris"`
}

// Weather is the result of get_weather.
type Weather struct {
	City         string `json:"city"`
	TemperatureC int    `json:"temperature_c"`
	Conditions   string `json:"conditions"`
}

// AddArgs are the arguments of add.
type AddArgs struct {
	A float64 `json:"a" jsonschema:"the first number"`
	B float64 `json:"b" jsonschema:"the second number"`
}

// Sum is the result of add.
type Sum struct {
	Sum float64 `json:"sum"`
}

// NoteArgs are the arguments of save_note.
type NoteArgs struct {
	Title string `json:"title" jsonschema:"a short title; it names the file"`
	Text  string `json:"text" jsonschema:"the note's text"`
}

// SavedNote is the result of save_note.
type SavedNote struct {
	Artifact string `json:"artifact"`
	Version  int64  `json:"version"`
}

// EmailArgs are the arguments of send_email.
type EmailArgs struct {
	To   string `json:"to" jsonschema:"the recipient's email address"`
	Text string `json:"text" jsonschema:"the message"`
}

// SentEmail is the result of send_email.
type SentEmail struct {
	Status string `json:"status"`
	To     string `json:"to"`
}

var conditions = []string{"sunny", "partly cloudy", "cloudy", "rainy", "windy", "foggy"}

// Forecast returns the example's made-up weather for a city: the same city
// always gets the same weather.
func Forecast(city string) Weather {
	h := fnv.New32a()
	h.Write([]byte(strings.ToLower(strings.TrimSpace(city))))
	n := h.Sum32()
	return Weather{City: city, TemperatureC: int(n%30) + 2, Conditions: conditions[(n/30)%uint32(len(conditions))]}
}

// WeatherTool returns the get_weather tool. It reports the [Forecast] of a
// city and remembers the city in the session state key "last_city".
func WeatherTool() (tool.Function, error) {
	return functiontool.New(functiontool.Config{
		Name:        "get_weather",
		Description: "Reports the current weather in a city.",
	}, func(_ context.Context, tc tool.Context, args WeatherArgs) (Weather, error) {
		if strings.TrimSpace(args.City) == "" {
			return Weather{}, fmt.Errorf("a city is required")
		}
		tc.State().Set("last_city", args.City)
		return Forecast(args.City), nil
	})
}

// AddTool returns the add tool, which adds two numbers.
func AddTool() (tool.Function, error) {
	return functiontool.New(functiontool.Config{
		Name:        "add",
		Description: "Adds two numbers.",
	}, func(_ context.Context, _ tool.Context, args AddArgs) (Sum, error) {
		return Sum{Sum: args.A + args.B}, nil
	})
}

// NoteTool returns the save_note tool, which saves a note as a text
// artifact named after its title.
func NoteTool() (tool.Function, error) {
	return functiontool.New(functiontool.Config{
		Name:        "save_note",
		Description: "Saves a note as a text file the user can download later.",
	}, func(ctx context.Context, tc tool.Context, args NoteArgs) (SavedNote, error) {
		name := fileName(args.Title)
		v, err := tc.SaveArtifact(ctx, name, &genai.Part{InlineData: &genai.Blob{MIMEType: "text/plain", Data: []byte(args.Text)}})
		if err != nil {
			return SavedNote{}, err
		}
		return SavedNote{Artifact: name, Version: v}, nil
	})
}

// EmailTool returns the send_email tool. It requires the user's approval
// of every call: the runtime asks for it (adk_request_confirmation) and
// runs the tool only once the call is approved. Nothing is really sent: the
// tool records the recipient in the session state key "last_email_to".
func EmailTool() (tool.Function, error) {
	return functiontool.New(functiontool.Config{
		Name:                "send_email",
		Description:         "Sends an email. The user approves every email before it is sent.",
		RequireConfirmation: true,
	}, func(_ context.Context, tc tool.Context, args EmailArgs) (SentEmail, error) {
		if !strings.Contains(args.To, "@") {
			return SentEmail{}, fmt.Errorf("%q is not an email address", args.To)
		}
		tc.State().Set("last_email_to", args.To)
		return SentEmail{Status: "sent", To: args.To}, nil
	})
}

// Tools returns the assistant's tools: get_weather, add, save_note and
// send_email.
func Tools() ([]tool.Tool, error) {
	var tools []tool.Tool
	for _, newTool := range []func() (tool.Function, error){WeatherTool, AddTool, NoteTool, EmailTool} {
		t, err := newTool()
		if err != nil {
			return nil, err
		}
		tools = append(tools, t)
	}
	return tools, nil
}

// New returns the assistant agent answering with llm.
func New(llm model.LLM) (agent.Agent, error) {
	tools, err := Tools()
	if err != nil {
		return nil, fmt.Errorf("assistant: %w", err)
	}
	return llmagent.New(llmagent.Config{
		Name:        Name,
		Description: Description,
		Model:       llm,
		Instruction: instruction,
		Tools:       tools,
	})
}

// Offline returns a scripted model that makes the assistant work without a
// network: it calls get_weather when asked about the weather in a city, add
// when asked to add two numbers, save_note when asked to save a note,
// send_email when asked to email an address ("email bob@example.com: lunch
// at noon"), and answers from the tool results. It is deterministic and safe for
// concurrent use.
func Offline() model.LLM {
	return scripted.New("offline-assistant", respond)
}

var (
	noteRE  = regexp.MustCompile(`(?is)\bnote\b[^:]*:\s*(.+)`)
	emailRE = regexp.MustCompile(`[\w.+-]+@[\w-]+(?:\.[\w-]+)+`)
)

func respond(_ context.Context, req *model.Request) (scripted.Turn, error) {
	if results := scripted.LastFunctionResponse(req); len(results) > 0 {
		return scripted.Text(answer(results)), nil
	}
	text := offline.UserText(req)
	switch {
	case offline.HasWord(text, "weather", "temperature", "forecast", "sunny", "raining"):
		return scripted.Call("get_weather", map[string]any{"city": offline.City(text, "Paris")}), nil
	case offline.HasWord(text, "email", "mail", "e-mail"):
		to := emailRE.FindString(text)
		if to == "" {
			return scripted.Text("Whom should I email? For example: email bob@example.com: lunch at noon."), nil
		}
		body := strings.TrimSpace(text)
		if _, after, ok := strings.Cut(text, ":"); ok && strings.TrimSpace(after) != "" {
			body = strings.TrimSpace(after)
		}
		return scripted.Call("send_email", map[string]any{"to": to, "text": body}), nil
	case offline.HasWord(text, "note", "remember", "save"):
		body := strings.TrimSpace(text)
		if m := noteRE.FindStringSubmatch(text); m != nil {
			body = strings.TrimSpace(m[1])
		}
		return scripted.Call("save_note", map[string]any{"title": "note", "text": body}), nil
	case offline.HasWord(text, "add", "plus", "sum") || strings.Contains(text, "+"):
		if nums := offline.Numbers(text, 2); len(nums) == 2 {
			return scripted.Call("add", map[string]any{"a": nums[0], "b": nums[1]}), nil
		}
		return scripted.Text("Which two numbers should I add? For example: add 2 and 3."), nil
	case offline.HasWord(text, "hi", "hello", "hey"):
		return scripted.Text("Hello! I can tell you the weather in a city, add two numbers, save a note or send an email for you."), nil
	}
	return scripted.Text(`I'm the offline demo assistant. Try "What's the weather in Paris?", "add 2 and 3", "save a note: buy milk" or "email bob@example.com: lunch at noon".`), nil
}

func answer(results []*genai.FunctionResponse) string {
	var parts []string
	for _, r := range results {
		resp := r.Response
		if e, ok := resp["error"]; ok && r.Name == "send_email" && strings.Contains(fmt.Sprint(e), "rejected") {
			parts = append(parts, "OK, I did not send the email.")
			continue
		}
		if e, ok := resp["error"]; ok {
			parts = append(parts, fmt.Sprintf("Sorry, %s failed: %v.", r.Name, e))
			continue
		}
		switch r.Name {
		case "get_weather":
			parts = append(parts, fmt.Sprintf("It is %v°C and %v in %v.", resp["temperature_c"], resp["conditions"], resp["city"]))
		case "add":
			parts = append(parts, fmt.Sprintf("The sum is %v.", resp["sum"]))
		case "send_email":
			parts = append(parts, fmt.Sprintf("Sent the email to %v.", resp["to"]))
		case "save_note":
			parts = append(parts, fmt.Sprintf("Saved your note as %v (version %v).", resp["artifact"], resp["version"]))
		default:
			parts = append(parts, fmt.Sprintf("%s returned %v.", r.Name, resp))
		}
	}
	return strings.Join(parts, " ")
}

func fileName(title string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(strings.TrimSpace(title)) {
		switch {
		case r >= 'a' && r <= 'z', r >= '0' && r <= '9', r == '-', r == '_':
			b.WriteRune(r)
		case r == ' ':
			b.WriteByte('-')
		}
	}
	if b.Len() == 0 {
		return "note.txt"
	}
	return b.String() + ".txt"
}
