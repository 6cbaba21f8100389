package loom_test

// The Go snippets of README.md, each run here (TestREADMESnippetsAreExercised
// checks that every snippet appears in a function that runs). Keep each
// snippet's lines identical to the README's.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"iter"
	"log"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"google.golang.org/genai"

	"github.com/loomkit/loom/agent"
	"github.com/loomkit/loom/agent/graph"
	"github.com/loomkit/loom/agent/llmagent"
	"github.com/loomkit/loom/agent/remoteagent"
	"github.com/loomkit/loom/agent/workflowagent"
	"github.com/loomkit/loom/cli"
	"github.com/loomkit/loom/codeexec"
	"github.com/loomkit/loom/event"
	"github.com/loomkit/loom/examples/assistant"
	"github.com/loomkit/loom/memory/memmemory"
	"github.com/loomkit/loom/model"
	"github.com/loomkit/loom/model/provider"
	"github.com/loomkit/loom/model/scripted"
	"github.com/loomkit/loom/plugin"
	"github.com/loomkit/loom/plugin/compaction"
	"github.com/loomkit/loom/plugin/telemetry"
	"github.com/loomkit/loom/runner"
	"github.com/loomkit/loom/server/a2aserver"
	"github.com/loomkit/loom/session"
	"github.com/loomkit/loom/session/memsession"
	"github.com/loomkit/loom/tool"
	"github.com/loomkit/loom/tool/builtintool"
	"github.com/loomkit/loom/tool/functiontool"
	"github.com/loomkit/loom/tool/mcptool"
	"github.com/loomkit/loom/tool/openapitool"
	"github.com/loomkit/loom/tool/preloadmemorytool"
)

// TestMain runs the README's func main when the test binary is started as
// that program (see TestREADMEMain).
func TestMain(m *testing.M) {
	if os.Getenv("LOOM_README_MAIN") == "1" {
		os.Args = append([]string{"weather"}, strings.Fields(os.Getenv("LOOM_README_ARGS"))...)
		main()
	}
	os.Exit(m.Run())
}

// weather stands for a package of the reader's with the usual constructor
// pair; counter for a ready-made agent.
var weather = struct {
	New     func(llm model.LLM) (agent.Agent, error)
	Offline func() model.LLM
}{assistant.New, assistant.Offline}

var counter = must(agent.New(agent.Config{Name: "counter",
	Run: func(ctx context.Context, inv *agent.Invocation) iter.Seq2[*event.Event, error] {
		return func(yield func(*event.Event, error) bool) {
			ev := inv.NewEvent()
			ev.Content = genai.NewContentFromText("counted", genai.RoleModel)
			yield(ev, nil)
		}
	}}))

func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}

func main() {
	os.Exit(cli.Main(
		cli.App{Name: "weather", New: weather.New, Offline: weather.Offline}, // New(llm model.LLM) (agent.Agent, error)
		cli.App{Name: "counter", Agent: counter},                             // or a ready-made agent
	))
}

// TestREADMEMain runs the README's main as a program: "run counter".
func TestREADMEMain(t *testing.T) {
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), "LOOM_README_MAIN=1", "LOOM_README_ARGS=run --sessions memory:// --artifacts memory:// counter",
		"GOOGLE_API_KEY=", "GEMINI_API_KEY=", "OPENAI_API_KEY=", "ANTHROPIC_API_KEY=")
	cmd.Stdin = strings.NewReader("count\n")
	out, err := cmd.Output()
	if err != nil || string(out) != "counter: counted\n" {
		t.Errorf("main: %v, stdout %q", err, out)
	}
}

// fakeGemini serves the Gemini API's generateContent: a call of get_weather,
// then a text answer.
func fakeGemini(t *testing.T) string {
	var calls atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !strings.HasSuffix(r.URL.Path, "/models/gemini-2.5-flash:generateContent") {
			http.Error(w, "unexpected "+r.URL.Path, http.StatusNotFound)
			return
		}
		io.Copy(io.Discard, r.Body)
		part := map[string]any{"text": "It is sunny in Oslo."}
		if calls.Add(1) == 1 {
			part = map[string]any{"functionCall": map[string]any{"name": "get_weather", "args": map[string]any{"city": "Oslo"}}}
		}
		json.NewEncoder(w).Encode(map[string]any{"candidates": []any{map[string]any{
			"content": map[string]any{"role": "model", "parts": []any{part}}, "finishReason": "STOP"}}})
	}))
	t.Cleanup(srv.Close)
	return srv.URL
}

// TestREADMEWeatherAgent runs "Write an agent and a tool" against a local
// fake of the Gemini API, and without an API key on its scripted model.
func TestREADMEWeatherAgent(t *testing.T) {
	for _, key := range []string{"test-key", ""} {
		t.Run("key="+key, func(t *testing.T) {
			t.Setenv("GOOGLE_API_KEY", key)
			t.Setenv("GEMINI_API_KEY", "")
			t.Setenv("GOOGLE_GEMINI_BASE_URL", fakeGemini(t))
			t.Setenv("GOOGLE_GENAI_USE_VERTEXAI", "")
			ctx := context.Background()

			type weatherArgs struct {
				City string `json:"city" jsonschema:"the city to report on"`
			}

			getWeather, err := functiontool.New(functiontool.Config{
				Name:        "get_weather",
				Description: "Reports the current weather in a city.",
			}, func(ctx context.Context, tc tool.Context, args weatherArgs) (map[string]any, error) {
				tc.State().Set("last_city", args.City) // committed with the tool's response event
				return map[string]any{"city": args.City, "conditions": "sunny"}, nil
			})
			if err != nil {
				log.Fatal(err)
			}

			llm, err := provider.Open(ctx, "gemini-2.5-flash", nil) // the key from the environment
			if errors.Is(err, provider.ErrNoAPIKey) {
				// No key: a scripted model plays the model's part, one turn per call.
				llm = scripted.NewSequence("offline",
					scripted.Call("get_weather", map[string]any{"city": "Oslo"}),
					scripted.Text("It is sunny in Oslo."))
			} else if err != nil {
				log.Fatal(err)
			}
			assistant, err := llmagent.New(llmagent.Config{
				Name:        "assistant",
				Model:       llm,
				Instruction: "You help with the weather. The user last asked about {last_city?}.",
				Tools:       []tool.Tool{getWeather},
				OutputKey:   "last_answer",
			})
			if err != nil {
				log.Fatal(err)
			}

			r, err := runner.New(runner.Config{
				AppName: "weather", Agent: assistant,
				Sessions: memsession.NewService(), AutoCreateSession: true,
			})
			if err != nil {
				log.Fatal(err)
			}
			for ev, err := range r.Run(ctx, "alice", "s1", genai.NewContentFromText("Weather in Oslo?", genai.RoleUser), nil) {
				if err != nil {
					log.Fatal(err)
				}
				if text := ev.Text(); text != "" { // the tool call and its result carry no text
					fmt.Printf("[%s] %s\n", ev.Author, text)
				}
			}
			// [assistant] It is sunny in Oslo.
			if os.Getenv("GOOGLE_API_KEY") == "" && llm.Name() != "offline" {
				t.Errorf("without a key the model is %s", llm.Name())
			}

			sess, err := r.Sessions().Get(ctx, session.Key{AppName: "weather", UserID: "alice", SessionID: "s1"}, nil)
			if err != nil {
				t.Fatal(err)
			}
			if sess.State()["last_city"] != "Oslo" || sess.State()["last_answer"] != "It is sunny in Oslo." {
				t.Errorf("state %v", sess.State())
			}
		})
	}
}

// The README's custom agent, run.
// The README's LLM agent features, on a scripted model that plans and
// answers.
func Example_llmAgentFeatures() {
	ctx := context.Background()
	m := scripted.NewSequence("m", scripted.Turn{Text: "/*PLANNING*/ 1. add\n/*FINAL_ANSWER*/ 42"})
	a, err := llmagent.New(llmagent.Config{
		Name:              "analyst",
		Model:             m,
		GlobalInstruction: "Answer in English.",
		StaticInstruction: genai.NewContentFromText("You analyse data for the user.", genai.RoleUser),
		Instruction:       "The user is {name?}.",
		Planner:           llmagent.PlanReActPlanner{},
		CodeExecutor:      &codeexec.Local{Timeout: 10 * time.Second},
		Tools:             []tool.Tool{preloadmemorytool.New(), builtintool.GoogleSearch()},
	})
	if err != nil {
		log.Fatal(err)
	}
	r, err := runner.New(runner.Config{AppName: "app", Agent: a, Sessions: memsession.NewService(),
		Memory: memmemory.NewService(), Plugins: []*plugin.Plugin{plugin.AddSessionToMemory()}, AutoCreateSession: true})
	if err != nil {
		log.Fatal(err)
	}
	evs, err := r.RunSync(ctx, "ann", "s1", genai.NewContentFromText("what is 40+2?", genai.RoleUser), nil)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(evs[len(evs)-1].Text())
	// Output: 42
}

func Example_customAgent() {
	ctx := context.Background()
	counter, err := agent.New(agent.Config{Name: "counter",
		Run: func(ctx context.Context, inv *agent.Invocation) iter.Seq2[*event.Event, error] {
			return func(yield func(*event.Event, error) bool) {
				ev := inv.NewEvent()
				ev.Actions.StateDelta = map[string]any{"count": 1}
				if !yield(ev, nil) { // returns after the runner committed ev
					return
				}
				n, _ := inv.Session().Get("count") // 1: the committed value
				fmt.Println("count is", n)
			}
		}})
	if err != nil {
		log.Fatal(err)
	}

	r := must(runner.New(runner.Config{AppName: "app", Agent: counter, Sessions: memsession.NewService(), AutoCreateSession: true}))
	if _, err := r.RunSync(ctx, "alice", "s1", genai.NewContentFromText("count", genai.RoleUser), nil); err != nil {
		log.Fatal(err)
	}
	// Output: count is 1
}

// The README's answer to a confirmation request, on the assistant example
// whose send_email tool requires approval.
func Example_confirmation() {
	ctx := context.Background()
	r := must(runner.New(runner.Config{AppName: "assistant", Agent: must(assistant.New(assistant.Offline())),
		Sessions: memsession.NewService(), AutoCreateSession: true}))
	var requestID string
	for ev, err := range r.Run(ctx, "alice", "s1", genai.NewContentFromText("email bob@example.com: lunch at noon", genai.RoleUser), nil) {
		if err != nil {
			log.Fatal(err)
		}
		for _, fc := range ev.FunctionCalls() {
			if fc.Name == "adk_request_confirmation" && slices.Contains(ev.LongRunningToolIDs, fc.ID) {
				requestID = fc.ID
				fmt.Println("asks for approval:", fc.Args["originalFunctionCall"].(map[string]any)["name"])
			}
		}
	}

	answer := &genai.Content{Role: genai.RoleUser, Parts: []*genai.Part{{FunctionResponse: &genai.FunctionResponse{
		ID: requestID, Name: "adk_request_confirmation", Response: map[string]any{"confirmed": true},
	}}}}
	for ev, err := range r.Run(ctx, "alice", "s1", answer, nil) { // runs the tool, then the model goes on
		if err != nil {
			log.Fatal(err)
		}
		if ev.IsFinalResponse() {
			fmt.Println(ev.Text())
		}
	}
	// Output:
	// asks for approval: send_email
	// Sent the email to bob@example.com.
}

type reportArgs struct {
	Name string `json:"name"`
}

func fetchReport(_ context.Context, key string, args reportArgs) (map[string]any, error) {
	return map[string]any{"report": args.Name, "key_length": len(key)}, nil
}

// The README's tool that asks for a credential, run through a runner.
func Example_credential() {
	ctx := context.Background()
	reportTool := func(ctx context.Context, tc tool.Context, args reportArgs) (map[string]any, error) {
		cred := tc.Credential()
		if cred == nil {
			tc.RequestCredential(map[string]any{"authScheme": map[string]any{"type": "apiKey", "name": "X-Key"}})
			return nil, nil
		}
		return fetchReport(ctx, cred["apiKey"].(string), args)
	}
	report := must(functiontool.New(functiontool.Config{Name: "report", Description: "Fetches a report."}, reportTool))
	llm := scripted.New("m", func(_ context.Context, req *model.Request) (scripted.Turn, error) {
		if res := scripted.LastFunctionResponse(req); len(res) > 0 {
			return scripted.Text(fmt.Sprint("got ", res[0].Response)), nil
		}
		return scripted.Call("report", map[string]any{"name": "sales"}), nil
	})
	bot := must(llmagent.New(llmagent.Config{Name: "bot", Model: llm, Tools: []tool.Tool{report}}))
	r := must(runner.New(runner.Config{AppName: "app", Agent: bot, Sessions: memsession.NewService(), AutoCreateSession: true}))
	var requestID string
	for ev, err := range r.Run(ctx, "alice", "s1", genai.NewContentFromText("sales report", genai.RoleUser), nil) {
		if err != nil {
			log.Fatal(err)
		}
		for _, fc := range ev.FunctionCalls() {
			if fc.Name == "adk_request_credential" {
				requestID = fc.ID
				fmt.Println("asks for a credential")
			}
		}
	}
	answer := &genai.Content{Role: genai.RoleUser, Parts: []*genai.Part{{FunctionResponse: &genai.FunctionResponse{
		ID: requestID, Name: "adk_request_credential", Response: map[string]any{"apiKey": "secret"},
	}}}}
	for ev, err := range r.Run(ctx, "alice", "s1", answer, nil) {
		if err != nil {
			log.Fatal(err)
		}
		if ev.IsFinalResponse() {
			fmt.Println(ev.Text())
		}
	}
	// Output:
	// asks for a credential
	// got map[key_length:6 report:sales]
}

// The README's Resume: a sequence interrupted after its first step
// continues with the second.
func Example_resume() {
	ctx, interrupt := context.WithCancel(context.Background())
	var tries atomic.Int32
	step := func(name string, interruptOnce bool) agent.Agent {
		return must(agent.New(agent.Config{Name: name, Run: func(ctx context.Context, inv *agent.Invocation) iter.Seq2[*event.Event, error] {
			return func(yield func(*event.Event, error) bool) {
				if interruptOnce && tries.Add(1) == 1 {
					interrupt() // the process goes away here
					yield(nil, context.Canceled)
					return
				}
				ev := inv.NewEvent()
				ev.Content = genai.NewContentFromText(name+" done", genai.RoleModel)
				yield(ev, nil)
			}
		}}))
	}
	seq := must(workflowagent.NewSequential(workflowagent.Config{Name: "seq", SubAgents: []agent.Agent{step("first", false), step("second", true)}}))
	r := must(runner.New(runner.Config{AppName: "app", Agent: seq, Sessions: memsession.NewService(), AutoCreateSession: true, Resumable: true}))
	var invocationID string
	for ev, err := range r.Run(ctx, "alice", "s1", genai.NewContentFromText("go", genai.RoleUser), nil) {
		if err != nil {
			fmt.Println("interrupted:", errors.Is(err, context.Canceled))
			break
		}
		invocationID = ev.InvocationID
		if ev.Text() != "" {
			fmt.Println(ev.Author, ev.Text())
		}
	}

	ctx = context.Background()
	for ev, err := range r.Resume(ctx, "alice", "s1", invocationID, nil) {
		if err != nil {
			log.Fatal(err)
		}
		fmt.Printf("%s: %q\n", ev.Author, ev.Text()) // the rest of the run, checkpoints included
	}
	// Output:
	// first first done
	// interrupted: true
	// second: "second done"
	// second: ""
	// seq: ""
}

// The README's plugins, telemetry and compaction snippets on one runner
// each, and its rewind.
func Example_plugins() {
	ctx := context.Background()
	llm := scripted.New("m", func(_ context.Context, req *model.Request) (scripted.Turn, error) {
		return scripted.Text("ok: " + scripted.LastUserText(req)), nil
	})
	root := must(llmagent.New(llmagent.Config{Name: "root", Model: llm}))
	bot := root
	sessions := memsession.NewService()
	for _, id := range []string{"s0", "s1"} {
		if _, err := sessions.Create(ctx, session.Key{AppName: "app", UserID: "ann", SessionID: id}, nil); err != nil {
			log.Fatal(err)
		}
	}

	{
		r, _ := runner.New(runner.Config{AppName: "app", Agent: root, Sessions: sessions,
			Plugins: []*plugin.Plugin{plugin.Logging(slog.Default()), plugin.SaveFilesAsArtifacts()}})
		if _, err := r.RunSync(ctx, "ann", "s0", genai.NewContentFromText("hi", genai.RoleUser), nil); err == nil {
			fmt.Println("logged")
		}
	}
	{
		tel, _ := telemetry.New(telemetry.Config{}) // or Config{TracerProvider: tp, MeterProvider: mp}
		r, _ := runner.New(runner.Config{AppName: "app", Agent: root, Sessions: sessions,
			Plugins: []*plugin.Plugin{tel.Plugin()}})
		if _, err := r.RunSync(ctx, "ann", "s1", genai.NewContentFromText("hi", genai.RoleUser), nil); err != nil {
			log.Fatal(err)
		}
		spans, _ := tel.SessionSpans(ctx, telemetry.Owner{AppName: "app", UserID: "ann", SessionID: "s1"})
		fmt.Println(spans[0].Name)
	}

	r, _ := runner.New(runner.Config{AppName: "app", Agent: bot, Sessions: sessions,
		Plugins: []*plugin.Plugin{compaction.Plugin(compaction.Config{
			Interval: 2, Overlap: 1, // every 2 invocations, re-covering 1
			TokenThreshold: 100_000, RetainRecent: 6, // or when the prompt grows too big
			// Summarizer: compaction.LLMSummarizer(cheapModel, ""), // default: the root agent's model
		})}})
	events, err := r.RunSync(ctx, "ann", "s1", genai.NewContentFromText("again", genai.RoleUser), nil)
	if err != nil {
		log.Fatal(err)
	}
	invocationID := events[0].InvocationID

	ev, err := r.Rewind(ctx, "ann", "s1", invocationID)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("rewound before", ev.Actions.RewindBeforeInvocationID == invocationID)
	// Output:
	// logged
	// invocation
	// rewound before true
}

// The README's MCP toolset: it connects on first use, so building it and
// the agent needs no server.
func TestREADMEMCP(t *testing.T) {
	llm := scripted.NewSequence("m", scripted.Text("ok"))

	files, _ := mcptool.New(mcptool.Config{
		Name:    "files",
		Command: "npx", Args: []string{"-y", "@modelcontextprotocol/server-filesystem", "/srv/docs"},
		ToolNames: []string{"read_file", "list_directory"}, // optional allow-list (or Filter)
	})
	defer files.Close()
	agent, _ := llmagent.New(llmagent.Config{Name: "librarian", Model: llm, Toolsets: []tool.Toolset{files}})
	// or: mcptool.New(mcptool.Config{Name: "remote", URL: "https://example.com/mcp", Headers: ...})

	if files == nil || agent == nil || agent.Name() != "librarian" {
		t.Errorf("toolset %v, agent %v", files, agent)
	}
}

// The README's OpenAPI toolset, over a spec served by a test API: the agent
// calls the one operation the tag filter keeps, with the configured key.
func TestREADMEOpenAPI(t *testing.T) {
	const spec = `
openapi: 3.0.3
info: {title: Pets, version: "1"}
servers: [{url: /api}]
security: [{apiKey: []}]
components:
  securitySchemes:
    apiKey: {type: apiKey, in: header, name: X-API-Key}
paths:
  /pets:
    get:
      operationId: listPets
      tags: [pets]
      responses: {"200": {description: The pets.}}
  /pets/{id}:
    delete:
      operationId: deletePet
      tags: [admin]
      parameters: [{name: id, in: path, required: true, schema: {type: string}}]
      responses: {"204": {description: Gone.}}
`
	mux := http.NewServeMux()
	mux.HandleFunc("GET /openapi.yaml", func(w http.ResponseWriter, _ *http.Request) { _, _ = io.WriteString(w, spec) })
	mux.HandleFunc("GET /api/pets", func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("X-API-Key") != "k-123" {
			http.Error(w, "no key", http.StatusUnauthorized)
			return
		}
		_, _ = io.WriteString(w, `{"pets": ["Rex", "Tom"]}`)
	})
	srv := httptest.NewServer(mux)
	defer srv.Close()
	specURL := srv.URL + "/openapi.yaml"
	t.Setenv("PETS_API_KEY", "k-123")
	ctx := context.Background()
	llm := scripted.New("m", func(_ context.Context, req *model.Request) (scripted.Turn, error) {
		if res := scripted.LastFunctionResponse(req); len(res) > 0 {
			return scripted.Text(fmt.Sprint(res[0].Response)), nil
		}
		return scripted.Call("list_pets", nil), nil
	})

	pets, err := openapitool.New(ctx, openapitool.Config{
		SpecURL:     specURL, // or Spec (the document itself) or SpecFile
		Credentials: map[string]openapitool.Credential{"apiKey": {APIKey: os.Getenv("PETS_API_KEY")}},
		Tags:        []string{"pets"}, // optional: also Operations (ids or tool names) and Filter
	})
	if err != nil {
		log.Fatal(err)
	}
	clerk, _ := llmagent.New(llmagent.Config{Name: "clerk", Model: llm, Toolsets: []tool.Toolset{pets}})

	r := must(runner.New(runner.Config{AppName: "app", Agent: clerk, Sessions: memsession.NewService(), AutoCreateSession: true}))
	evs, err := r.RunSync(ctx, "alice", "s1", genai.NewContentFromText("which pets?", genai.RoleUser), nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := evs[len(evs)-1].Text(); got != "map[pets:[Rex Tom]]" {
		t.Fatalf("final answer %q", got)
	}
	tools, _ := pets.Tools(ctx)
	if len(tools) != 1 {
		t.Fatalf("%d tools, want the one tagged pets", len(tools))
	}
}

// TestREADMEWorkflow runs the README's graph workflow: a refund message is
// routed to the node that asks for approval, and the answer finishes it.
func TestREADMEWorkflow(t *testing.T) {
	classify := graph.Func("classify", func(ctx context.Context, nc *graph.Context, in string) (string, error) {
		if strings.Contains(in, "refund") {
			nc.SetRoute("refund")
		}
		return in, nil
	})
	refund := graph.Func("refund", func(ctx context.Context, nc *graph.Context, in string) (string, error) {
		answer, err := nc.RequestInput(graph.InputRequest{Message: "Approve the refund?"})
		if err != nil {
			return "", err // the invocation pauses until the user answers
		}
		return fmt.Sprintf("refund approved: %v", answer["approved"]), nil
	})
	desk, err := graph.New(graph.Config{
		Name:  "desk",
		Nodes: []*graph.Node{classify, refund},
		Edges: []graph.Edge{{From: "classify", To: "refund", Route: "refund"}},
	})
	if err != nil {
		log.Fatal(err)
	}

	ctx := context.Background()
	r, err := runner.New(runner.Config{AppName: "desk", Agent: desk, Sessions: memsession.NewService(), AutoCreateSession: true})
	if err != nil {
		t.Fatal(err)
	}
	var callID string
	for ev, err := range r.Run(ctx, "u", "s1", genai.NewContentFromText("a refund please", genai.RoleUser), nil) {
		if err != nil {
			t.Fatal(err)
		}
		for _, fc := range ev.FunctionCalls() {
			if fc.Name == graph.FunctionRequestInput {
				callID = fc.ID
			}
		}
	}
	if callID == "" {
		t.Fatal("no input request")
	}
	answer := &genai.Content{Role: genai.RoleUser, Parts: []*genai.Part{graph.InputResponse(callID, map[string]any{"approved": true})}}
	var out any
	for ev, err := range r.Run(ctx, "u", "s1", answer, nil) {
		if err != nil {
			t.Fatal(err)
		}
		if ev.Author == "desk" && ev.Actions.EndOfAgent {
			out = ev.Output
		}
	}
	if out != "refund approved: true" {
		t.Errorf("output = %v", out)
	}
}

// The README's A2A snippets: the handler serves the agent card, and the
// remote agent is built without contacting its server.
func TestREADMEA2A(t *testing.T) {
	llm := scripted.NewSequence("m", scripted.Text("ok"))
	root0, err := assistant.New(assistant.Offline())
	if err != nil {
		t.Fatal(err)
	}
	r, err := runner.New(runner.Config{AppName: "assistant", Agent: root0, Sessions: session.NewService(memsession.New(), nil)})
	if err != nil {
		t.Fatal(err)
	}
	mux := http.NewServeMux()

	h, _ := a2aserver.New(a2aserver.Config{Runner: r})
	mux.Handle("/a2a/assistant/", http.StripPrefix("/a2a/assistant", h))

	srv := httptest.NewServer(mux)
	defer srv.Close()
	res, err := http.Get(srv.URL + "/a2a/assistant/.well-known/agent-card.json")
	if err != nil {
		t.Fatal(err)
	}
	var card struct{ Name, URL string }
	err = json.NewDecoder(res.Body).Decode(&card)
	res.Body.Close()
	if err != nil || card.Name != "assistant" || card.URL != srv.URL+"/a2a/assistant" {
		t.Errorf("card %+v, %v", card, err)
	}

	helper, _ := remoteagent.New(remoteagent.Config{Name: "helper", URL: "http://localhost:8000/a2a/assistant"})
	root, _ := llmagent.New(llmagent.Config{Name: "front_desk", Model: llm, SubAgents: []agent.Agent{helper}})

	if root == nil || len(root.SubAgents()) != 1 || root.SubAgents()[0].Name() != "helper" {
		t.Errorf("root %v", root)
	}
}
