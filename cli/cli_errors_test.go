package cli_test

import (
	"context"
	"errors"
	"io"
	"iter"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/loomkit/loom/agent"
	"github.com/loomkit/loom/agent/llmagent"
	"github.com/loomkit/loom/cli"
	"github.com/loomkit/loom/model"
)

// failingModel fails every call, like a provider that refuses the key.
type failingModel struct{ calls atomic.Int32 }

func (m *failingModel) Name() string { return "failing" }

func (m *failingModel) Generate(ctx context.Context, _ *model.Request, _ bool) iter.Seq2[*model.Response, error] {
	return func(yield func(*model.Response, error) bool) {
		m.calls.Add(1)
		yield(nil, errors.New("401 Unauthorized: API key not valid"))
	}
}

// blockingModel answers nothing until its context is done.
type blockingModel struct{ started chan struct{} }

func (m *blockingModel) Name() string { return "blocking" }

func (m *blockingModel) Generate(ctx context.Context, _ *model.Request, _ bool) iter.Seq2[*model.Response, error] {
	return func(yield func(*model.Response, error) bool) {
		close(m.started)
		<-ctx.Done()
		yield(nil, ctx.Err())
	}
}

func llmApp(t *testing.T, llm model.LLM) cli.App {
	t.Helper()
	return cli.App{Name: "app", New: func(llm model.LLM) (agent.Agent, error) {
		return llmagent.New(llmagent.Config{Name: "app", Model: llm, Instruction: "Answer."})
	}, Offline: func() model.LLM { return llm }}
}

// TestRunTurnFailureExitStatus: with input that is not a terminal, a turn
// that fails ends the run with status 1, says why once, and sends no
// further line to the failing model.
func TestRunTurnFailureExitStatus(t *testing.T) {
	m := &failingModel{}
	var out, errb syncBuffer
	code := cli.Run(context.Background(), []string{"run", "--sessions", "memory://", "--artifacts", "memory://", "app"},
		cli.Env{Stdin: strings.NewReader("hi\nhello again\n"), Stdout: &out, Stderr: &errb, Getenv: noEnv}, llmApp(t, m))
	if code != 1 {
		t.Errorf("exit %d, want 1; stderr %q", code, errb.String())
	}
	if n := strings.Count(errb.String(), "API key not valid"); n != 1 {
		t.Errorf("the error is said %d times:\n%s", n, errb.String())
	}
	if n := m.calls.Load(); n != 1 {
		t.Errorf("model called %d times after the first failure", n)
	}
}

// TestRunInterruptExitStatus: a run stopped while it waits for input or
// while a turn streams exits with status 130, as a shell expects of
// Ctrl-C.
func TestRunInterruptExitStatus(t *testing.T) {
	t.Run("at the prompt", func(t *testing.T) {
		pr, pw := io.Pipe()
		defer pw.Close()
		ctx, cancel := context.WithCancel(context.Background())
		var errb syncBuffer
		done := make(chan int)
		go func() {
			done <- cli.Run(ctx, []string{"run", "--sessions", "memory://", "--artifacts", "memory://", "assistant"},
				cli.Env{Stdin: pr, Stdout: io.Discard, Stderr: &errb, Getenv: noEnv}, assistantApp)
		}()
		waitFor(t, &errb, "new session")
		cancel()
		if code := <-done; code != 130 {
			t.Errorf("exit %d, want 130; stderr %q", code, errb.String())
		}
	})
	t.Run("mid-turn", func(t *testing.T) {
		m := &blockingModel{started: make(chan struct{})}
		ctx, cancel := context.WithCancel(context.Background())
		var errb syncBuffer
		done := make(chan int)
		go func() {
			done <- cli.Run(ctx, []string{"run", "--sessions", "memory://", "--artifacts", "memory://", "app"},
				cli.Env{Stdin: strings.NewReader("hi\n"), Stdout: io.Discard, Stderr: &errb, Getenv: noEnv}, llmApp(t, m))
		}()
		select {
		case <-m.started:
		case code := <-done:
			t.Fatalf("exit %d before the model was called: %s", code, errb.String())
		}
		cancel()
		if code := <-done; code != 130 || !strings.Contains(errb.String(), "loom: interrupted") {
			t.Errorf("exit %d, want 130; stderr %q", code, errb.String())
		}
	})
}

func waitFor(t *testing.T, b *syncBuffer, s string) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !strings.Contains(b.String(), s) {
		if time.Now().After(deadline) {
			t.Fatalf("no %q in %q", s, b.String())
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// TestRunAppThatDoesNotLoad: "loom run DIR" on an application whose
// config does not load stops at start-up with the load error, before any
// session or input.
func TestRunAppThatDoesNotLoad(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "broken")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "root_agent.yaml"), []byte("name: broken\nagent_class: NoSuchAgent\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	code, out, errOut := run(t, "hi\nhello\n", "run", "--sessions", "memory://", "--artifacts", "memory://", dir)
	if code != 1 || out != "" || strings.Contains(errOut, "new session") || !strings.Contains(errOut, "NoSuchAgent") ||
		!strings.Contains(errOut, "loom: app broken does not load; fix "+filepath.Join(dir, "root_agent.yaml")) {
		t.Errorf("exit %d, stdout %q, stderr %q", code, out, errOut)
	}
}

// TestHelp: "loom help CMD" and "loom CMD -h" print the command's help on
// standard output; a command line that does not parse is said in one line
// and a pointer to -h, not buried under the flags.
func TestHelp(t *testing.T) {
	for _, args := range [][]string{{"help", "web"}, {"web", "-h"}, {"web", "--help"}, {"help", "run"}} {
		code, out, errOut := run(t, "", args...)
		if code != 0 || !strings.HasPrefix(out, "Usage: loom "+args[len(args)-1-map[bool]int{true: 0, false: 1}[args[0] == "help"]]) || !strings.Contains(out, "-sessions URL") || errOut != "" {
			t.Errorf("%q: exit %d, stdout %q, stderr %q", args, code, out, errOut)
		}
	}
	for _, tc := range []struct {
		args  []string
		first string
		cmd   string
	}{
		{[]string{"run", "--sessions", "memory://", "asistant"}, `loom run: unknown application "asistant" (have assistant)`, "run"},
		{[]string{"run", "--sesions", "memory://", "assistant"}, "flag provided but not defined: -sesions", "run"},
		{[]string{"web", "--bogus"}, "flag provided but not defined: -bogus", "web"},
		{[]string{"api", "extra"}, `loom api: unexpected argument "extra": not a directory of applications`, "api"},
	} {
		code, out, errOut := run(t, "", tc.args...)
		want := tc.first + "\nRun \"loom " + tc.cmd + " -h\" for its flags.\n"
		if code != 2 || out != "" || errOut != want {
			t.Errorf("%q: exit %d, stdout %q, stderr %q, want %q", tc.args, code, out, errOut, want)
		}
	}
	code, _, errOut := run(t, "", "serve")
	if code != 2 || errOut != "loom: unknown command \"serve\"\nRun \"loom help\" for the commands.\n" {
		t.Errorf("unknown command: exit %d, stderr %q", code, errOut)
	}
}

// TestProgramName: a program built on the cli package names itself in its
// help.
func TestProgramName(t *testing.T) {
	var out syncBuffer
	env := cli.Env{Name: "helpdesk", Stdin: strings.NewReader(""), Stdout: &out, Stderr: io.Discard, Getenv: noEnv}
	if code := cli.Run(context.Background(), []string{"--help"}, env, assistantApp); code != 0 {
		t.Fatalf("exit %d", code)
	}
	if !strings.Contains(out.String(), "  helpdesk run [flags] APP") || strings.Contains(out.String(), "loom ") {
		t.Errorf("help:\n%s", out.String())
	}
	out = syncBuffer{}
	cli.Run(context.Background(), []string{"run", "-h"}, env, assistantApp)
	if !strings.HasPrefix(out.String(), "Usage: helpdesk run ") {
		t.Errorf("run -h:\n%s", out.String())
	}
}

// TestEvalUnknownCase: a case id the eval set lacks is said once, before
// anything runs.
func TestEvalUnknownCase(t *testing.T) {
	code, out, errOut := run(t, "", "eval", "assistant", "../examples/assistant/assistant.evalset.json:nope")
	if code != 1 || out != "" || strings.Count(errOut, "eval set") != 1 || !strings.Contains(errOut, `has no case "nope"`) {
		t.Errorf("exit %d, stdout %q, stderr %q", code, out, errOut)
	}
}

// TestComplete: the command the completion scripts call offers commands,
// a command's flags and the program's applications.
func TestComplete(t *testing.T) {
	for _, tc := range []struct {
		words []string
		want  string
	}{
		{[]string{"r"}, "run\n"},
		{[]string{""}, "web\napi\nrun\neval\ncreate\nworker\nconformance\ncompletion\nhelp\nversion\n"},
		{[]string{"run", "--no"}, "--no-stream\n"},
		{[]string{"run", "as"}, "assistant\n"},
		{[]string{"run", "--user", "ada", "as"}, "assistant\n"},
		{[]string{"eval", "assistant", "as"}, ""},
		{[]string{"run", "--sessions", ""}, ""},
		{[]string{"help", "cr"}, "create\n"},
		{[]string{"completion", "z"}, "zsh\n"},
		{[]string{"conformance", "r"}, "record\n"},
		{[]string{"conformance", "test", "--ur"}, "--url\n"},
		{[]string{"web", "--allow"}, "--allow-origins\n--allowed-hosts\n"},
	} {
		code, out, _ := run(t, "", append([]string{"__complete"}, tc.words...)...)
		if code != 0 || out != tc.want {
			t.Errorf("%q: exit %d, got %q, want %q", tc.words, code, out, tc.want)
		}
	}
	for _, shell := range []string{"bash", "zsh", "fish"} {
		code, out, _ := run(t, "", "completion", shell)
		if code != 0 || !strings.Contains(out, "loom __complete") && !strings.Contains(out, "__complete") {
			t.Errorf("%s: exit %d, %q", shell, code, out)
		}
	}
	if code, _, _ := run(t, "", "completion", "tcsh"); code != 2 {
		t.Errorf("tcsh: exit %d", code)
	}
}
