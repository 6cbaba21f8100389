package cli_test

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"google.golang.org/genai"

	"github.com/loomkit/loom/agent"
	"github.com/loomkit/loom/agent/llmagent"
	"github.com/loomkit/loom/cli"
	"github.com/loomkit/loom/conformance"
	workflowexample "github.com/loomkit/loom/examples/workflow"
	"github.com/loomkit/loom/model"
	"github.com/loomkit/loom/model/scripted"
	"github.com/loomkit/loom/tool"
	"github.com/loomkit/loom/tool/functiontool"
)

// recordCases re-records Loom's own conformance cases (their recordings and
// sessions) with the apps' scripted models:
//
//	go test ./cli -run TestLoomConformanceCases -record
var recordCases = flag.Bool("record", false, "re-record Loom's own conformance cases in ../conformance/testdata/cases")

// loomCasesDir holds Loom's own cases in ADK's case format, for what ADK's
// suite does not cover.
const loomCasesDir = "../conformance/testdata/cases"

// loomCaseApps are the applications Loom's own cases name: the workflow
// example (routing, fan-out, a human-input pause) and loom_tools, an LLM
// agent with a tool needing confirmation, a long-running tool, a tool
// saving an artifact and one writing state in every scope (served as
// loom_state too).
var loomCaseApps = []cli.App{
	{Name: "workflow", New: workflowexample.New, Offline: workflowexample.Offline},
	{Name: "loom_tools", New: newLoomTools, Offline: loomToolsModel},
	// The same agent as an app of its own for the state scopes case, so
	// that its app: and user: state reach no other case's session.
	{Name: "loom_state", New: newLoomTools, Offline: loomToolsModel},
}

type fileArgs struct {
	Path string `json:"path"`
}

type reportArgs struct {
	Topic string `json:"topic"`
}

type noteArgs struct {
	Name string `json:"name"`
	Text string `json:"text"`
}

type rememberArgs struct {
	Drink string `json:"drink"`
}

func newLoomTools(llm model.LLM) (agent.Agent, error) {
	deleteFile, err := functiontool.New(functiontool.Config{Name: "delete_file", Description: "Deletes a file.", RequireConfirmation: true},
		func(_ context.Context, _ tool.Context, a fileArgs) (map[string]any, error) {
			return map[string]any{"deleted": a.Path}, nil
		})
	if err != nil {
		return nil, err
	}
	startReport, err := functiontool.New(functiontool.Config{Name: "start_report", Description: "Starts writing a report; it is ready later.", LongRunning: true},
		func(_ context.Context, _ tool.Context, a reportArgs) (map[string]any, error) {
			return map[string]any{"status": "pending", "ticket": "report-" + a.Topic}, nil
		})
	if err != nil {
		return nil, err
	}
	saveNote, err := functiontool.New(functiontool.Config{Name: "save_note", Description: "Saves a note as an artifact."},
		func(ctx context.Context, tc tool.Context, a noteArgs) (map[string]any, error) {
			v, err := tc.SaveArtifact(ctx, a.Name, genai.NewPartFromText(a.Text))
			if err != nil {
				return nil, err
			}
			return map[string]any{"saved": a.Name, "version": v}, nil
		})
	if err != nil {
		return nil, err
	}
	remember, err := functiontool.New(functiontool.Config{Name: "remember", Description: "Remembers the user's favourite drink."},
		func(_ context.Context, tc tool.Context, a rememberArgs) (map[string]any, error) {
			st := tc.State()
			st.Set("user:drink", a.Drink)
			st.Set("app:drinks_remembered", 1)
			st.Set("temp:scratch", "not kept")
			st.Set("last_drink", a.Drink)
			greeting, _ := st.Get("greeting")
			return map[string]any{"remembered": a.Drink, "greeting": greeting}, nil
		})
	if err != nil {
		return nil, err
	}
	return llmagent.New(llmagent.Config{
		Name: "loom_tools", Description: "Runs Loom's tool conformance cases.", Model: llm,
		Instruction: "Use your tools to do what the user asks, then say what you did. The user's greeting is {greeting?}.",
		Tools:       []tool.Tool{deleteFile, startReport, saveNote, remember},
	})
}

// loomToolsModel answers from the request alone, so that recording and
// replay agree: a function response is acknowledged, and a user message
// naming a task calls the tool for it.
func loomToolsModel() model.LLM {
	return scripted.New("scripted-tools", func(_ context.Context, req *model.Request) (scripted.Turn, error) {
		if frs := scripted.LastFunctionResponse(req); len(frs) > 0 {
			fr := frs[0]
			return scripted.Text(fmt.Sprintf("Done: %s answered %v.", fr.Name, fr.Response)), nil
		}
		text := strings.ToLower(scripted.LastUserText(req))
		switch {
		case strings.Contains(text, "delete"):
			return scripted.Call("delete_file", map[string]any{"path": "notes.txt"}), nil
		case strings.Contains(text, "report"):
			return scripted.Call("start_report", map[string]any{"topic": "sales"}), nil
		case strings.Contains(text, "note"):
			return scripted.Call("save_note", map[string]any{"name": "note.txt", "text": "hello"}), nil
		case strings.Contains(text, "tea"):
			return scripted.Call("remember", map[string]any{"drink": "tea"}), nil
		}
		return scripted.Text("I can delete files, write reports, save notes and remember drinks."), nil
	})
}

// conformanceRun runs "loom conformance ARGS..." with the case apps, no
// API key and an agents folder of one config-file app no case names (the
// command serves such a folder beside the compiled apps).
func conformanceRun(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	agents := t.TempDir()
	if err := os.MkdirAll(filepath.Join(agents, "unused"), 0o755); err != nil {
		t.Fatal(err)
	}
	yaml := "name: unused\nmodel: gemini-2.5-flash\ninstruction: Answer.\n"
	if err := os.WriteFile(filepath.Join(agents, "unused", "root_agent.yaml"), []byte(yaml), 0o644); err != nil {
		t.Fatal(err)
	}
	var out, errb syncBuffer
	full := append([]string{"conformance", args[0], "--agents", agents}, args[1:]...)
	code := cli.Program{Apps: loomCaseApps}.Run(context.Background(), full, cli.Env{Stdout: &out, Stderr: &errb, Getenv: noEnv})
	return code, out.String(), errb.String()
}

// TestLoomConformanceCases replays Loom's own conformance cases: graph
// workflows (routing, fan-out with a retry, a human-input pause and its
// answer), tool confirmation, a long-running tool resumed by the client's
// answer, artifacts and state scopes. With -record it records them first.
func TestLoomConformanceCases(t *testing.T) {
	if *recordCases {
		code, out, errOut := conformanceRun(t, "record", loomCasesDir)
		if code != 0 {
			t.Fatalf("record: exit %d\n%s\n%s", code, out, errOut)
		}
	}
	cases, err := conformance.Discover([]string{loomCasesDir})
	if err != nil {
		t.Fatal(err)
	}
	if len(cases) < 6 {
		t.Fatalf("found %d cases in %s, want at least 6", len(cases), loomCasesDir)
	}
	code, out, errOut := conformanceRun(t, "test", loomCasesDir)
	if code != 0 {
		t.Fatalf("exit %d\n%s\n%s", code, out, errOut)
	}
	if want := fmt.Sprintf("%d passed, 0 failed\n", len(cases)); !strings.HasSuffix(out, want) {
		t.Errorf("output does not end with %q:\n%s", want, out)
	}
}

// TestConformanceCommand checks the command's output and exit status: 0
// and "N passed, 0 failed" for passing cases, 1 and "N-1 passed, 1 failed"
// with the case's differing field when a recorded session is tampered
// with, and 2 for a bad command line.
func TestConformanceCommand(t *testing.T) {
	root := filepath.Join(t.TempDir(), "cases")
	src := filepath.Join(loomCasesDir, "tool")
	if err := os.CopyFS(filepath.Join(root, "tool"), os.DirFS(src)); err != nil {
		t.Fatal(err)
	}
	cases, err := conformance.Discover([]string{root})
	if err != nil || len(cases) < 2 {
		t.Fatalf("Discover = %d cases, %v", len(cases), err)
	}
	n := len(cases)

	code, out, errOut := conformanceRun(t, "test", root)
	if code != 0 || !strings.HasSuffix(out, fmt.Sprintf("%d passed, 0 failed\n", n)) {
		t.Fatalf("untouched cases: exit %d\n%s\n%s", code, out, errOut)
	}
	for _, c := range cases {
		if !strings.Contains(out, "PASS "+c.ID()+"\n") {
			t.Errorf("no PASS line for %s:\n%s", c.ID(), out)
		}
	}

	// A tampered session: the recorded answer of the tool differs.
	sess := conformance.SessionPath(filepath.Join(root, "tool", "artifacts_001"), conformance.StreamingNone)
	b, err := os.ReadFile(sess)
	if err != nil {
		t.Fatal(err)
	}
	tampered := strings.Replace(string(b), "saved: note.txt", "saved: other.txt", 1)
	if tampered == string(b) {
		t.Fatalf("%s does not record the saved note", sess)
	}
	if err := os.WriteFile(sess, []byte(tampered), 0o644); err != nil {
		t.Fatal(err)
	}
	code, out, errOut = conformanceRun(t, "test", root)
	if code != 1 {
		t.Errorf("tampered session: exit %d, want 1\n%s", code, errOut)
	}
	if !strings.HasSuffix(out, fmt.Sprintf("%d passed, 1 failed\n", n-1)) {
		t.Errorf("tampered session: summary wrong:\n%s", out)
	}
	diff := regexp.MustCompile(`(?s)FAIL tool/artifacts_001\n.*function_response.*want "other\.txt", got "note\.txt"`)
	if !diff.MatchString(out) {
		t.Errorf("tampered session: no diff naming the field and both values:\n%s", out)
	}
	if !strings.Contains(errOut, "1 conformance case(s) failed") {
		t.Errorf("stderr lacks the failure: %s", errOut)
	}
	if err := os.WriteFile(sess, b, 0o644); err != nil {
		t.Fatal(err)
	}

	// A tampered recording: the model request differs from the live one.
	recs := conformance.RecordingsPath(filepath.Join(root, "tool", "confirmation_001"), conformance.StreamingNone)
	b, err = os.ReadFile(recs)
	if err != nil {
		t.Fatal(err)
	}
	tampered = strings.Replace(string(b), "Deletes a file.", "Removes a file.", 1)
	if tampered == string(b) {
		t.Fatalf("%s does not record the tool's description", recs)
	}
	if err := os.WriteFile(recs, []byte(tampered), 0o644); err != nil {
		t.Fatal(err)
	}
	code, out, _ = conformanceRun(t, "test", root)
	if code != 1 || !strings.HasSuffix(out, fmt.Sprintf("%d passed, 1 failed\n", n-1)) ||
		!strings.Contains(out, `want "Removes a file.", got "Deletes a file."`) {
		t.Errorf("tampered recording: exit %d\n%s", code, out)
	}

	if code, _, _ := conformanceRun(t, "test"); code != 2 {
		t.Errorf("no PATH: exit %d, want 2", code)
	}
	if code, _, _ := conformanceRun(t, "test", "--streaming-mode", "chunky", root); code != 2 {
		t.Errorf("bad --streaming-mode: exit %d, want 2", code)
	}
}

// TestConformanceOverHTTP drives "loom api --conformance" by URL, as ADK's
// own runner does, with Loom's cases: the server reads each case from the
// directory the request names, within --conformance-root, and every case
// passes as it does in process.
func TestConformanceOverHTTP(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	urls := make(chan string, 1)
	done := make(chan int, 1)
	var serverLog syncBuffer
	go func() {
		done <- cli.Program{Apps: loomCaseApps}.Run(ctx, []string{"api", "--port", "0", "--sessions", "memory://", "--artifacts", "memory://",
			"--conformance", "--conformance-root", loomCasesDir},
			cli.Env{Stdout: io.Discard, Stderr: &serverLog, Getenv: noEnv, Listening: func(u string) { urls <- u }})
	}()
	t.Cleanup(func() {
		cancel()
		<-done
	})
	var base string
	select {
	case base = <-urls:
	case code := <-done:
		t.Fatalf("loom api exited with %d:\n%s", code, serverLog.String())
	case <-time.After(time.Minute):
		t.Fatal("loom api did not start")
	}
	cases, err := conformance.Discover([]string{loomCasesDir})
	if err != nil {
		t.Fatal(err)
	}
	code, out, errOut := conformanceRun(t, "test", "--url", base, loomCasesDir)
	if code != 0 || !strings.HasSuffix(out, fmt.Sprintf("%d passed, 0 failed\n", len(cases))) {
		t.Fatalf("exit %d\n%s\n%s\nserver:\n%s", code, out, errOut, serverLog.String())
	}
}
