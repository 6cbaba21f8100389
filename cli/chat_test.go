package cli_test

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"google.golang.org/genai"

	"github.com/loomkit/loom/cli"
	"github.com/loomkit/loom/event"
	workflowexample "github.com/loomkit/loom/examples/workflow"
	"github.com/loomkit/loom/session"
	"github.com/loomkit/loom/storage"
)

// TestRunFlagsAfterApp accepts flags after the application's name as well
// as before it.
func TestRunFlagsAfterApp(t *testing.T) {
	code, out, errOut := run(t, "hi\n", "run", "assistant", "--sessions", "memory://", "--artifacts", "memory://", "--session", "late-flags", "--user", "ada")
	if code != 0 || !strings.Contains(errOut, "new session late-flags") || !strings.HasPrefix(out, "assistant: Hello!") {
		t.Errorf("exit %d, stdout %q, stderr %q", code, out, errOut)
	}
	code, _, errOut = run(t, "", "run", "--sessions", "memory://", "assistant", "--user", "ada", "other")
	if code != 2 || !strings.Contains(errOut, `expected one application, got ["assistant" "other"]`) {
		t.Errorf("two apps: exit %d, stderr %q", code, errOut)
	}
}

// TestRunShowsHistory continues a session with --session: its earlier
// conversation is printed (on stderr, so stdout holds only this run's
// answers) before the new turn.
func TestRunShowsHistory(t *testing.T) {
	db := "sqlite://" + filepath.Join(t.TempDir(), "s.db")
	code, _, errOut := run(t, "What's the weather in Oslo?\nadd 1 and 2\n", "run", "--sessions", db, "--artifacts", "memory://", "--session", "h1", "assistant")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	code, out, errOut := run(t, "hello\n", "run", "--sessions", db, "--artifacts", "memory://", "--session", "h1", "assistant")
	if code != 0 || !strings.HasPrefix(out, "assistant: Hello!") {
		t.Fatalf("exit %d, stdout %q, stderr %q", code, out, errOut)
	}
	_, history, _ := strings.Cut(errOut, "continuing session h1\n")
	for _, want := range []string{
		"> What's the weather in Oslo?\n",
		`  [assistant] → get_weather({"city":"Oslo"})` + "\n",
		"assistant: It is ",
		"> add 1 and 2\n",
		`  [assistant] ← add: {"sum":3}` + "\n",
		"assistant: The sum is 3.\n",
		"(end of the earlier conversation)",
	} {
		if !strings.Contains(history, want) {
			t.Errorf("history lacks %q:\n%s", want, errOut)
		}
	}
	if strings.Index(history, "Oslo?") > strings.Index(history, "add 1 and 2") {
		t.Errorf("history out of order:\n%s", history)
	}
}

// TestRunPendingApprovalAtEOF: input that ends while a tool call awaits
// approval exits non-zero and says so; continuing the session asks again,
// and the approval runs the tool.
func TestRunPendingApprovalAtEOF(t *testing.T) {
	db := "sqlite://" + filepath.Join(t.TempDir(), "s.db")
	args := []string{"run", "--sessions", db, "--artifacts", "memory://", "--session", "p1", "assistant"}
	code, out, errOut := run(t, "email bob@example.com: lunch at noon\n", args...)
	if code != 1 || !strings.Contains(errOut, `an approval is still pending: send_email({"text":"lunch at noon","to":"bob@example.com"})`) ||
		!strings.Contains(errOut, "loom run --session p1 assistant") {
		t.Errorf("EOF at approval: exit %d, stdout %q, stderr %q", code, out, errOut)
	}
	if !strings.Contains(out, "confirmation needed:") {
		t.Errorf("no confirmation asked: %q", out)
	}

	code, out, errOut = run(t, "y\n", args...)
	if code != 0 || !strings.Contains(out, "confirmation needed:") || !strings.Contains(out, "assistant: Sent the email to bob@example.com.\n") {
		t.Errorf("continued: exit %d, stdout %q, stderr %q", code, out, errOut)
	}

	// Answered in the same run: exit 0.
	code, out, errOut = run(t, "email ann@example.com: hi\nn\n", "run", "--sessions", "memory://", "--artifacts", "memory://", "assistant")
	if code != 0 || !strings.Contains(out, "assistant: OK, I did not send the email.\n") {
		t.Errorf("rejected: exit %d, stdout %q, stderr %q", code, out, errOut)
	}
}

// TestRunAnswersInputRequest: in the terminal, a workflow node's
// adk_request_input is asked as a question; the typed line answers it, and
// the workflow goes on. Input that ends at the question leaves it pending.
func TestRunAnswersInputRequest(t *testing.T) {
	app := cli.App{Name: "workflow", New: workflowexample.New, Offline: workflowexample.Offline}
	runApp := func(stdin string, args ...string) (int, string, string) {
		var out, errb strings.Builder
		code := cli.Run(context.Background(), args, cli.Env{Stdin: strings.NewReader(stdin), Stdout: &out, Stderr: &errb, Getenv: func(string) string { return "" }}, app)
		return code, out.String(), errb.String()
	}
	db := "sqlite://" + filepath.Join(t.TempDir(), "s.db")
	args := []string{"run", "--sessions", db, "--artifacts", "memory://", "--session", "w1", "workflow"}
	code, out, errOut := runApp("refund for order 5\n", args...)
	if code != 1 || !strings.Contains(out, "input needed: Refund order A-5 for $42.50") || !strings.Contains(errOut, "still pending: Refund order A-5") {
		t.Errorf("EOF at the question: exit %d, stdout %q, stderr %q", code, out, errOut)
	}
	code, out, errOut = runApp("yes\n", args...)
	if code != 0 || !strings.Contains(out, "settle: Your refund of $42.50 for order A-5 is on its way.") {
		t.Errorf("answered: exit %d, stdout %q, stderr %q", code, out, errOut)
	}
}

// TestRunHistoryImportedRequestNotAsked: a confirmation request in an event
// imported from a client-supplied history waits for no answer (the ledger
// says so), so continuing the session does not ask it and input that ends
// at once exits 0.
func TestRunHistoryImportedRequestNotAsked(t *testing.T) {
	ctx := context.Background()
	db := "sqlite://" + filepath.Join(t.TempDir(), "s.db")
	svc, err := storage.OpenSessions(ctx, db)
	if err != nil {
		t.Fatal(err)
	}
	key := session.Key{AppName: "assistant", UserID: "user", SessionID: "imp1"}
	sess, err := svc.Create(ctx, key, nil)
	if err != nil {
		t.Fatal(err)
	}
	req := &event.Event{Author: "assistant", InvocationID: "e-1", LongRunningToolIDs: []string{"c1"}}
	req.Content = &genai.Content{Role: genai.RoleModel, Parts: []*genai.Part{{FunctionCall: &genai.FunctionCall{
		ID: "c1", Name: event.FunctionRequestConfirmation,
		Args: map[string]any{"originalFunctionCall": map[string]any{"id": "c0", "name": "send_email", "args": map[string]any{}}},
	}}}}
	req.MarkImported()
	if err := svc.AppendEvent(ctx, sess, req); err != nil {
		t.Fatal(err)
	}
	if err := svc.Close(); err != nil {
		t.Fatal(err)
	}
	code, out, errOut := run(t, "", "run", "--sessions", db, "--artifacts", "memory://", "--session", "imp1", "assistant")
	if code != 0 || strings.Contains(out, "confirmation needed") || strings.Contains(errOut, "still pending") {
		t.Errorf("exit %d, stdout %q, stderr %q", code, out, errOut)
	}
}
