//go:build unix

package cli_test

import (
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/creack/pty"
)

// The loom binary, built once for the tests that drive it as a person in
// a terminal would.
var (
	loomOnce sync.Once
	loomDir  string
	loomErr  error
)

func loomBinary(t *testing.T) string {
	t.Helper()
	if testing.Short() {
		t.Skip("builds the loom binary")
	}
	loomOnce.Do(func() {
		if loomDir, loomErr = os.MkdirTemp("", "loom-bin-"); loomErr != nil {
			return
		}
		cmd := exec.Command("go", "build", "-o", filepath.Join(loomDir, "loom"), "../cmd/loom")
		if out, err := cmd.CombinedOutput(); err != nil {
			loomErr = errors.New(string(out))
		}
	})
	if loomErr != nil {
		t.Fatalf("go build: %v", loomErr)
	}
	return filepath.Join(loomDir, "loom")
}

func TestMain(m *testing.M) {
	if dir := os.Getenv(envTemporalWorker); dir != "" {
		os.Exit(temporalWorkerMain(dir))
	}
	code := m.Run()
	if loomDir != "" {
		os.RemoveAll(loomDir)
	}
	os.Exit(code)
}

// ptyRun is a program running in a pseudo-terminal.
type ptyRun struct {
	t    *testing.T
	f    *os.File
	cmd  *exec.Cmd
	out  syncBuffer
	done chan struct{}
}

func startPTY(t *testing.T, env []string, name string, args ...string) *ptyRun {
	t.Helper()
	cmd := exec.Command(name, args...)
	cmd.Dir = t.TempDir()
	cmd.Env = append([]string{"PATH=" + os.Getenv("PATH"), "HOME=" + cmd.Dir, "TERM=xterm"}, env...)
	size := &pty.Winsize{Rows: 40, Cols: 120}
	for _, e := range env {
		if e == "COLUMNS=0" {
			size = &pty.Winsize{} // a terminal that reports no size
		}
	}
	f, err := pty.StartWithSize(cmd, size)
	if err != nil {
		t.Fatal(err)
	}
	p := &ptyRun{t: t, f: f, cmd: cmd, done: make(chan struct{})}
	go func() {
		defer close(p.done)
		_, _ = io.Copy(&p.out, f)
	}()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = f.Close()
	})
	return p
}

// expect waits until the screen's output holds s n times in all.
func (p *ptyRun) expect(s string, n int) {
	p.t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for strings.Count(p.out.String(), s) < n {
		if time.Now().After(deadline) {
			p.t.Fatalf("no %q (×%d) in the output:\n%q", s, n, p.out.String())
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func (p *ptyRun) send(s string) {
	p.t.Helper()
	if _, err := p.f.Write([]byte(s)); err != nil {
		p.t.Fatal(err)
	}
}

// wait returns the exit code once the program has ended and its output
// has been read.
func (p *ptyRun) wait() int {
	p.t.Helper()
	err := p.cmd.Wait()
	select {
	case <-p.done:
	case <-time.After(5 * time.Second):
	}
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		return ee.ExitCode()
	}
	if err != nil {
		p.t.Fatal(err)
	}
	return 0
}

var runArgsMem = []string{"run", "--sessions", "memory://", "--artifacts", "memory://", "assistant"}

// TestTerminalChat drives "loom run" in a pseudo-terminal: Up recalls the
// last line (not sent as "^[[A"), answers are coloured, a thinking state
// shows before the answer, and Ctrl-D ends the prompt's line and exits 0.
func TestTerminalChat(t *testing.T) {
	p := startPTY(t, nil, loomBinary(t), runArgsMem...)
	p.expect("> ", 1)
	p.send("hi\r")
	p.expect("Hello! I can tell you", 1)
	p.expect("> ", 2)
	p.send("\x1b[A\r") // Up, Enter: the same message again
	p.expect("Hello! I can tell you", 2)
	p.expect("> ", 3)
	p.send("\x04")
	code := p.wait()
	out := p.out.String()
	if code != 0 {
		t.Errorf("Ctrl-D: exit %d\n%q", code, out)
	}
	if !strings.HasSuffix(out, "> \r\n") {
		t.Errorf("Ctrl-D did not end the prompt's line: %q", out[max(0, len(out)-40):])
	}
	if strings.Contains(out, "[A") && !strings.Contains(out, "\x1b[A") || strings.Contains(out, "^[") {
		t.Errorf("the arrow key was sent as text:\n%q", out)
	}
	if !strings.Contains(out, "\x1b[1;36massistant:\x1b[0m Hello!") {
		t.Errorf("the answer is not coloured:\n%q", out)
	}
	if !strings.Contains(out, "thinking…") {
		t.Errorf("no thinking state:\n%q", out)
	}
}

// TestTerminalNoColor: NO_COLOR turns colour off. (The terminal reports
// no size here: the line is edited at a default width, not one column.)
func TestTerminalNoColor(t *testing.T) {
	p := startPTY(t, []string{"NO_COLOR=1", "COLUMNS=0"}, loomBinary(t), runArgsMem...)
	p.expect("> ", 1)
	p.send("hi\r")
	p.expect("assistant: Hello!", 1)
	p.expect("> ", 2)
	p.send("\x04")
	if code := p.wait(); code != 0 || strings.Contains(p.out.String(), "\x1b[1;36m") || !strings.Contains(p.out.String(), "> hi\r\n") {
		t.Errorf("exit %d, output %q", code, p.out.String())
	}
}

// TestTerminalCtrlC: Ctrl-C at the prompt ends its line and exits 130;
// at an approval it says the call is still pending and how to go on.
func TestTerminalCtrlC(t *testing.T) {
	p := startPTY(t, nil, loomBinary(t), runArgsMem...)
	p.expect("> ", 1)
	p.send("\x03")
	if code := p.wait(); code != 130 || !strings.HasSuffix(p.out.String(), "> \r\n") {
		t.Errorf("at the prompt: exit %d, output %q", code, p.out.String())
	}

	p = startPTY(t, nil, loomBinary(t), "run", "--sessions", "sqlite://s.db", "--artifacts", "memory://", "--session", "c1", "assistant")
	p.expect("> ", 1)
	p.send("email bob@example.com: lunch at noon\r")
	p.expect("approve? [y/N] ", 1)
	p.send("\x03")
	code := p.wait()
	out := p.out.String()
	if code != 130 || !strings.Contains(out, "interrupted; an approval is still pending: send_email(") || !strings.Contains(out, "(loom run --session c1 assistant)") {
		t.Errorf("at the approval: exit %d, output %q", code, out)
	}
}

// TestCompletionBash loads "loom completion bash" into bash and completes
// a command, a flag and an application.
func TestCompletionBash(t *testing.T) {
	bin := loomBinary(t)
	if _, err := exec.LookPath("bash"); err != nil {
		t.Skip("no bash")
	}
	script := `source <(loom completion bash)
complete -p loom
for line in "loom ru" "loom run --no-s" "loom run as"; do
	read -ra COMP_WORDS <<< "$line"
	COMP_CWORD=$((${#COMP_WORDS[@]} - 1))
	_loom_complete
	echo "${COMPREPLY[*]}"
done`
	cmd := exec.Command("bash", "-c", script)
	cmd.Env = append(os.Environ(), "PATH="+filepath.Dir(bin)+":"+os.Getenv("PATH"))
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	want := "complete -o default -F _loom_complete loom\nrun\n--no-stream\nassistant\n"
	if string(out) != want {
		t.Errorf("got %q, want %q", out, want)
	}
}

// TestProgramNameInHelp: a program built with cli.Main names itself (as
// it was started) in its help.
func TestProgramNameInHelp(t *testing.T) {
	bin := loomBinary(t)
	helpdesk := filepath.Join(t.TempDir(), "helpdesk")
	if err := os.Link(bin, helpdesk); err != nil {
		t.Skip(err)
	}
	out, err := exec.Command(helpdesk, "--help").Output()
	if err != nil || !strings.Contains(string(out), "  helpdesk web [flags] [DIR]") || strings.Contains(string(out), "loom web") {
		t.Errorf("%v: %s", err, out)
	}
}

// TestTerminalModelErrors drives the binary against a loopback stand-in
// for the Gemini API: Ctrl-C while the model has not answered exits 130,
// and a refused key with piped input exits 1 after saying why.
func TestTerminalModelErrors(t *testing.T) {
	bin := loomBinary(t)
	hang := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("x-goog-api-key") == "refused" {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusUnauthorized)
			io.WriteString(w, `{"error": {"code": 401, "message": "API key not valid.", "status": "UNAUTHENTICATED"}}`)
			return
		}
		select {
		case <-r.Context().Done():
		case <-hang:
		}
	}))
	defer srv.Close()
	defer close(hang)

	p := startPTY(t, []string{"GOOGLE_API_KEY=hangs", "GOOGLE_GEMINI_BASE_URL=" + srv.URL}, bin, runArgsMem...)
	p.expect("> ", 1)
	p.send("hi\r")
	p.expect("thinking…", 1)
	time.Sleep(200 * time.Millisecond) // the request is under way
	p.send("\x03")
	if code := p.wait(); code != 130 || !strings.Contains(p.out.String(), "loom: interrupted") {
		t.Errorf("Ctrl-C mid-turn: exit %d, output %q", code, p.out.String())
	}

	cmd := exec.Command(bin, runArgsMem...)
	cmd.Dir = t.TempDir()
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + cmd.Dir, "GOOGLE_API_KEY=refused", "GOOGLE_GEMINI_BASE_URL=" + srv.URL}
	cmd.Stdin = strings.NewReader("hi\nhello\n")
	var stderr strings.Builder
	cmd.Stderr = &stderr
	err := cmd.Run()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 1 || !strings.Contains(stderr.String(), "API key not valid") {
		t.Errorf("refused key: %v, stderr %q", err, stderr.String())
	}
}
