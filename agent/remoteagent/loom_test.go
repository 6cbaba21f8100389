package remoteagent_test

// A remote agent talking to another Loom application served over A2A: in
// a second process ("loom api --a2a" serving the offline assistant) and
// in this one (a2aserver on an httptest server, without streaming).

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/a2aproject/a2a-go/a2aclient/agentcard"

	"github.com/loomkit/loom/agent/remoteagent"
	"github.com/loomkit/loom/cli"
	"github.com/loomkit/loom/event"
	"github.com/loomkit/loom/examples/assistant"
	"github.com/loomkit/loom/runner"
	"github.com/loomkit/loom/server/a2aserver"
	"github.com/loomkit/loom/session"
	"github.com/loomkit/loom/session/memsession"
)

// serveEnv makes the test binary run "loom api --a2a" instead of the tests.
const serveEnv = "LOOM_REMOTEAGENT_TEST_SERVE"

func TestMain(m *testing.M) {
	if os.Getenv(serveEnv) == "1" {
		ctx, cancel := context.WithCancel(context.Background())
		go func() { // stop when the parent closes stdin
			io.Copy(io.Discard, os.Stdin)
			cancel()
		}()
		env := cli.Env{Listening: func(url string) { fmt.Printf("listening %s\n", url) }}
		app := cli.App{Name: "assistant", New: assistant.New, Offline: assistant.Offline}
		os.Exit(cli.Run(ctx, []string{"api", "--a2a", "--port", "0", "--sessions", "memory://", "--artifacts", "memory://"}, env, app))
	}
	os.Exit(m.Run())
}

// loomServer starts a second process serving the offline assistant with
// "loom api --a2a" and returns its base URL.
func loomServer(t *testing.T) string {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = []string{serveEnv + "=1", "PATH=" + os.Getenv("PATH"), "HOME=" + t.TempDir()}
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr bytes.Buffer // read after Wait
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		stdin.Close()
		done := make(chan error, 1)
		go func() { done <- cmd.Wait() }()
		select {
		case <-done:
		case <-time.After(15 * time.Second):
			cmd.Process.Kill()
			<-done
		}
		if t.Failed() {
			t.Logf("loom api --a2a stderr:\n%s", stderr.String())
		}
	})
	lines := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			if strings.HasPrefix(sc.Text(), "listening ") {
				lines <- strings.TrimPrefix(sc.Text(), "listening ")
				break
			}
		}
		close(lines)
		io.Copy(io.Discard, stdout)
	}()
	select {
	case base, ok := <-lines:
		if !ok {
			t.Fatal("loom api --a2a exited before listening")
		}
		return base
	case <-time.After(60 * time.Second):
		t.Fatal("loom api --a2a did not start in 60s")
	}
	return ""
}

// (CONFORMANCE P3)
func TestLoomProcess(t *testing.T) {
	base := loomServer(t)
	remote := newRemote(t, "remote_assistant", base+cli.A2APath("assistant"))
	r := newRunner(t, remote)

	evs, _ := turn(t, r, "s", user("What's the weather in Paris?"))
	if got := text(evs); !strings.Contains(got, "Paris") {
		t.Errorf("weather: %q, want the remote assistant's answer about Paris", got)
	}

	// The remote pauses for a confirmation: the remote agent pauses with
	// the same call, and the answer resumes the remote task.
	evs, _ = turn(t, r, "s", user("email bob@example.com: lunch at noon"))
	fc := pausedCall(t, evs)
	if fc.Name != event.FunctionRequestConfirmation {
		t.Fatalf("paused call %s, want the remote's %s", fc.Name, event.FunctionRequestConfirmation)
	}
	evs, _ = turn(t, r, "s", answer(fc, map[string]any{"confirmed": true}))
	if got := text(evs); !strings.Contains(got, "bob@example.com") {
		t.Errorf("after the approval: %q, want the email sent to bob@example.com", got)
	}
	for _, ev := range evs {
		if ev.ErrorCode != "" {
			t.Errorf("error event %s: %s", ev.ErrorCode, ev.ErrorMessage)
		}
	}
}

func TestLoomInProcessWithoutStreaming(t *testing.T) {
	root, err := assistant.New(assistant.Offline())
	if err != nil {
		t.Fatal(err)
	}
	served, err := runner.New(runner.Config{AppName: "assistant", Agent: root, Sessions: session.NewService(memsession.New(), nil), AutoCreateSession: true})
	if err != nil {
		t.Fatal(err)
	}
	h, err := a2aserver.New(a2aserver.Config{Runner: served})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(h)
	defer srv.Close()
	defer h.Close()

	card, err := agentcard.NewResolver(http.DefaultClient).Resolve(context.Background(), srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	card.Capabilities.Streaming = false // message/send instead of message/stream
	remote, err := remoteagent.New(remoteagent.Config{Name: "remote", Card: card})
	if err != nil {
		t.Fatal(err)
	}
	if remote.Description() != assistant.Description {
		t.Errorf("description %q, want the card's %q", remote.Description(), assistant.Description)
	}
	r := newRunner(t, remote)
	evs, partial := turn(t, r, "s", user("add 2 and 3"))
	if got := text(evs); !strings.Contains(got, "The sum is 5") || len(partial) != 0 {
		t.Errorf("add: %q (%d partial events), want the sum and no partial events", got, len(partial))
	}
	evs, _ = turn(t, r, "s", user("email bob@example.com: hi"))
	fc := pausedCall(t, evs)
	evs, _ = turn(t, r, "s", answer(fc, map[string]any{"confirmed": false}))
	if got := text(evs); !strings.Contains(got, "did not send") {
		t.Errorf("after the rejection: %q, want the email not sent", got)
	}
}
