package cli_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"iter"
	"net/http"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"google.golang.org/genai"

	"github.com/loomkit/loom/agent"
	"github.com/loomkit/loom/cli"
	"github.com/loomkit/loom/event"
	"github.com/loomkit/loom/examples/assistant"
	"github.com/loomkit/loom/session"
	"github.com/loomkit/loom/session/sqlsession"
)

var assistantApp = cli.App{Name: "assistant", New: assistant.New, Offline: assistant.Offline}

func noEnv(string) string { return "" }

// run runs the CLI with stdin and returns its exit code, stdout and stderr.
func run(t *testing.T, stdin string, args ...string) (int, string, string) {
	t.Helper()
	var out, errb syncBuffer
	code := cli.Run(context.Background(), args, cli.Env{Stdin: strings.NewReader(stdin), Stdout: &out, Stderr: &errb, Getenv: noEnv}, assistantApp)
	return code, out.String(), errb.String()
}

var sessionRE = regexp.MustCompile(`new session (\S+)`)

// TestRunChat chats through "loom run" with piped stdin, then continues the
// same session from a second process-like run, and checks what was stored.
func TestRunChat(t *testing.T) {
	db := "sqlite://" + filepath.Join(t.TempDir(), "s.db")
	w := assistant.Forecast("Oslo")
	for _, stream := range []string{"", "--no-stream"} {
		args := []string{"run", "--sessions", db, "--artifacts", "memory://"}
		if stream != "" {
			args = append(args, stream)
		}
		code, out, errOut := run(t, "What's the weather in Oslo?\n\nadd 1 and 2\n", append(args, "assistant")...)
		if code != 0 {
			t.Fatalf("exit %d: %s", code, errOut)
		}
		want := fmt.Sprintf(`  [assistant] → get_weather({"city":"Oslo"})
  [assistant] ← get_weather: {"city":"Oslo","conditions":%q,"temperature_c":%d}
assistant: It is %d°C and %s in Oslo.
  [assistant] → add({"a":1,"b":2})
  [assistant] ← add: {"sum":3}
assistant: The sum is 3.
`, w.Conditions, w.TemperatureC, w.TemperatureC, w.Conditions)
		if out != want {
			t.Errorf("%s output:\n%s\nwant:\n%s", stream, out, want)
		}
		for _, line := range []string{"loom: apps: assistant (offline-assistant)", "loom: storage: sessions " + db} {
			if !strings.Contains(errOut, line) {
				t.Errorf("stderr lacks %q:\n%s", line, errOut)
			}
		}
		m := sessionRE.FindStringSubmatch(errOut)
		if m == nil {
			t.Fatalf("no session id on stderr:\n%s", errOut)
		}
		sid := m[1]

		code, out, errOut = run(t, "hello\n", "run", "--sessions", db, "--artifacts", "memory://", "--session", sid, "assistant")
		if code != 0 || !strings.Contains(errOut, "continuing session "+sid) || !strings.HasPrefix(out, "assistant: Hello!") {
			t.Errorf("continue: exit %d, stdout %q, stderr %q", code, out, errOut)
		}
		svc, err := sqlsession.NewService(context.Background(), db, nil)
		if err != nil {
			t.Fatal(err)
		}
		sess, err := svc.Get(context.Background(), session.Key{AppName: "assistant", UserID: "user", SessionID: sid}, nil)
		svc.Close()
		if err != nil {
			t.Fatal(err)
		}
		if sess.Len() != 10 {
			t.Errorf("stored %d events, want 10 (two tool turns of 4, one greeting of 2)", sess.Len())
		}
	}
}

// TestRunNamedSession creates a session under the id given with --session.
func TestRunNamedSession(t *testing.T) {
	code, out, errOut := run(t, "hi\n", "run", "--sessions", "memory://", "--artifacts", "memory://", "--session", "chosen-id", "--user", "ada", "assistant")
	if code != 0 || !strings.Contains(errOut, "new session chosen-id") || !strings.HasPrefix(out, "assistant: Hello!") {
		t.Errorf("exit %d, stdout %q, stderr %q", code, out, errOut)
	}
}

func TestCommandLine(t *testing.T) {
	for _, tc := range []struct {
		args     []string
		code     int
		inStdout string
		inStderr string
	}{
		{[]string{"version"}, 0, "loom ", ""},
		{[]string{"help"}, 0, "loom web", ""},
		{nil, 2, "", "Usage:"},
		{[]string{"serve"}, 2, "", `unknown command "serve"`},
		{[]string{"web", "--bogus"}, 2, "", "flag provided but not defined: -bogus"},
		{[]string{"web", "-h"}, 0, "-allow-origins", ""},
		{[]string{"api", "extra"}, 2, "", `unexpected argument "extra"`},
		{[]string{"run", "--sessions", "memory://", "nosuch"}, 2, "", `unknown application "nosuch"`},
		{[]string{"run", "--sessions", "bogus://x"}, 1, "", "bogus://x: storage: sessions"},
		{[]string{"run", "--sessions", "memory://", "--artifacts", "nosuch://b"}, 1, "", `nosuch://b: storage: artifacts: blobartifact`},
		{[]string{"run", "--sessions", "memory://", "--artifacts", "bucket"}, 1, "", `bucket: storage: artifacts: unsupported storage url`},
		{[]string{"web", "--port", "-5"}, 1, "", "listen"},
		{[]string{"worker"}, 2, "", "--temporal is required"},
		{[]string{"worker", "--temporal", "127.0.0.1:1", "extra"}, 2, "", `unexpected argument "extra"`},
		{[]string{"worker", "--temporal", "127.0.0.1:1", "--sessions", "memory://"}, 1, "", "must share a session store"},
		{[]string{"worker", "--temporal", "127.0.0.1:1", "--sessions", "sqlite:///nonexistent/s.db", "--prices", "/nonexistent/prices.yaml"}, 1, "", "prices.yaml"},
		{[]string{"worker", "-h"}, 0, "-prices", ""},
		{[]string{"api", "-h"}, 0, "-temporal-feed-addr", ""},
		{[]string{"api", "--port", "0", "--temporal", "127.0.0.1:1", "--sessions", "memory://"}, 1, "", "must share a session store"},
		{[]string{"help"}, 0, "loom worker --temporal", ""},
	} {
		code, out, errOut := run(t, "", tc.args...)
		if code != tc.code || !strings.Contains(out, tc.inStdout) || !strings.Contains(errOut, tc.inStderr) {
			t.Errorf("loom %q: exit %d (want %d)\nstdout: %s\nstderr: %s", tc.args, code, tc.code, out, errOut)
		}
	}
}

// TestModelChoice checks that an app needing a model and lacking an offline
// one fails clearly, and that an app with its own agent needs none.
func TestModelChoice(t *testing.T) {
	var errb syncBuffer
	code := cli.Run(context.Background(), []string{"run", "--sessions", "memory://", "x"}, cli.Env{Stdin: strings.NewReader(""), Stderr: &errb, Stdout: io.Discard, Getenv: noEnv},
		cli.App{Name: "x", New: assistant.New})
	if code != 1 || !strings.Contains(errb.String(), "app x needs a model") {
		t.Errorf("exit %d: %s", code, errb.String())
	}
	// An API key in the environment selects the provider's default model;
	// --model overrides it. (No message is sent, so no request is made.)
	keyEnv := func(k string) string {
		if k == "OPENAI_API_KEY" {
			return "sk-test"
		}
		return ""
	}
	for args, want := range map[string]string{"": "assistant (openai/gpt-4o-mini)", "--model=openai/gpt-4.1": "assistant (openai/gpt-4.1)"} {
		errb = syncBuffer{}
		argv := []string{"run", "--sessions", "memory://"}
		if args != "" {
			argv = append(argv, args)
		}
		code = cli.Run(context.Background(), argv, cli.Env{Stdin: strings.NewReader(""), Stderr: &errb, Stdout: io.Discard, Getenv: keyEnv}, assistantApp)
		if code != 0 || !strings.Contains(errb.String(), "loom: apps: "+want) {
			t.Errorf("%q: exit %d: %s", args, code, errb.String())
		}
	}

	ag, err := assistant.New(assistant.Offline())
	if err != nil {
		t.Fatal(err)
	}
	var out syncBuffer
	errb = syncBuffer{}
	code = cli.Run(context.Background(), []string{"run", "--sessions", "memory://"}, cli.Env{Stdin: strings.NewReader("add 2 and 2\n"), Stderr: &errb, Stdout: &out, Getenv: noEnv},
		cli.App{Name: "fixed", Agent: ag})
	if code != 0 || !strings.HasSuffix(out.String(), "assistant: The sum is 4.\n") || !strings.Contains(errb.String(), "fixed (its own model)") {
		t.Errorf("exit %d, stdout %q, stderr %q", code, out.String(), errb.String())
	}
}

// TestServeAPIAndUI serves both subcommands in-process and checks the
// routes that distinguish them.
func TestServeAPIAndUI(t *testing.T) {
	noRedirect := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	for _, cmd := range []string{"api", "web"} {
		base := startServer(t, cmd, assistantApp)
		res, err := noRedirect.Get(base + "/list-apps")
		if err != nil {
			t.Fatal(err)
		}
		var apps []string
		json.NewDecoder(res.Body).Decode(&apps)
		res.Body.Close()
		if len(apps) != 1 || apps[0] != "assistant" {
			t.Errorf("%s: /list-apps = %v", cmd, apps)
		}
		res, err = noRedirect.Get(base + "/")
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		if cmd == "web" && (res.StatusCode != http.StatusFound || res.Header.Get("Location") != "/dev-ui/") {
			t.Errorf("web: GET / = %d %s, want a redirect to /dev-ui/", res.StatusCode, res.Header.Get("Location"))
		}
		if cmd == "api" && res.StatusCode != http.StatusNotFound {
			t.Errorf("api: GET / = %d, want 404", res.StatusCode)
		}
		res, err = noRedirect.Get(base + "/dev-ui/assets/config/runtime-config.json")
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		if want := map[string]int{"web": 200, "api": 404}[cmd]; res.StatusCode != want {
			t.Errorf("%s: runtime config = %d, want %d", cmd, res.StatusCode, want)
		}
	}
}

func startServer(t *testing.T, cmd string, apps ...cli.App) string {
	t.Helper()
	return startServerArgs(t, []string{cmd}, apps...)
}

// startServerArgs runs "loom <args...>" on a free port with memory storage
// until the test ends, and returns its base URL.
func startServerArgs(t *testing.T, args []string, apps ...cli.App) string {
	t.Helper()
	cmd := args[0]
	ctx, cancel := context.WithCancel(context.Background())
	urls := make(chan string, 1)
	done := make(chan int, 1)
	var errb syncBuffer
	go func() {
		done <- cli.Run(ctx, append(append([]string(nil), args...), "--port", "0", "--sessions", "memory://", "--artifacts", "memory://"),
			cli.Env{Stdout: &errb, Stderr: &errb, Getenv: noEnv, Listening: func(u string) { urls <- u }}, apps...)
	}()
	t.Cleanup(func() {
		cancel()
		if code := <-done; code != 0 {
			t.Errorf("loom %s exited with %d:\n%s", cmd, code, errb.String())
		}
	})
	select {
	case u := <-urls:
		return u
	case code := <-done:
		t.Fatalf("loom %s exited with %d:\n%s", cmd, code, errb.String())
	}
	return ""
}

// TestShutdownEndsStreams cancels the CLI's context while an event stream
// is open on an agent that waits forever: the server shuts down gracefully,
// the stream ends and the exit code is 0.
func TestShutdownEndsStreams(t *testing.T) {
	started := make(chan struct{})
	waiter, err := agent.New(agent.Config{Name: "waiter", Run: func(ctx context.Context, inv *agent.Invocation) iter.Seq2[*event.Event, error] {
		return func(yield func(*event.Event, error) bool) {
			ev := inv.NewEvent()
			ev.Content = genai.NewContentFromText("waiting", genai.RoleModel)
			if !yield(ev, nil) {
				return
			}
			close(started)
			<-ctx.Done()
			yield(nil, ctx.Err())
		}
	}})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	urls := make(chan string, 1)
	done := make(chan int, 1)
	go func() {
		done <- cli.Run(ctx, []string{"api", "--port", "0", "--sessions", "memory://"},
			cli.Env{Stdout: io.Discard, Stderr: io.Discard, Getenv: noEnv, Listening: func(u string) { urls <- u }},
			cli.App{Name: "w", Agent: waiter})
	}()
	base := <-urls
	res, err := http.Post(base+"/apps/w/users/u/sessions/s", "application/json", strings.NewReader("{}"))
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	res, err = http.Post(base+"/run_sse", "application/json", strings.NewReader(`{"appName":"w","userId":"u","sessionId":"s","newMessage":{"role":"user","parts":[{"text":"hi"}]}}`))
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	sc := bufio.NewScanner(res.Body)
	if !sc.Scan() || !strings.Contains(sc.Text(), "waiting") {
		t.Fatalf("first frame: %q", sc.Text())
	}
	<-started
	cancel()
	for sc.Scan() {
	}
	if code := <-done; code != 0 {
		t.Errorf("exit code %d after shutdown", code)
	}
}
