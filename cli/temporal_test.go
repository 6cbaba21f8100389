package cli_test

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"iter"
	"net/http"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"google.golang.org/genai"

	"github.com/loomkit/loom/agent/llmagent"
	"github.com/loomkit/loom/cli"
	"github.com/loomkit/loom/credential"
	"github.com/loomkit/loom/durable/temporal"
	"github.com/loomkit/loom/model"
)

// envTemporalWorker makes the test binary run "loom worker" of the
// streaming app (see TestMain) with the arguments in envTemporalArgs (a
// JSON array); its value is the app's directory.
const (
	envTemporalWorker = "LOOM_CLI_TEST_TEMPORAL_WORKER"
	envTemporalArgs   = "LOOM_CLI_TEST_TEMPORAL_ARGS"
)

// gatedModel answers "hi", when asked to stream, with the partial text
// "hel", then waits (for at most a minute) for the file "gate" in its
// directory, then answers "hello".
type gatedModel struct{ dir string }

func (m *gatedModel) Name() string { return "gated" }

func (m *gatedModel) Generate(ctx context.Context, _ *model.Request, stream bool) iter.Seq2[*model.Response, error] {
	return func(yield func(*model.Response, error) bool) {
		if stream && !yield(&model.Response{Content: genai.NewContentFromText("hel", genai.RoleModel), Partial: true}, nil) {
			return
		}
		for deadline := time.Now().Add(time.Minute); ; {
			if _, err := os.Stat(filepath.Join(m.dir, "gate")); err == nil {
				break
			}
			if time.Now().After(deadline) {
				yield(nil, errors.New("gated: the gate never opened"))
				return
			}
			select {
			case <-time.After(10 * time.Millisecond):
			case <-ctx.Done():
				yield(nil, ctx.Err())
				return
			}
		}
		yield(&model.Response{Content: genai.NewContentFromText("hello", genai.RoleModel), FinishReason: genai.FinishReasonStop}, nil)
	}
}

// gatedApp is the streaming app of dir, the same in the worker and the
// server.
func gatedApp(dir string) cli.App {
	root, err := llmagent.New(llmagent.Config{Name: "greeter", Model: &gatedModel{dir: dir}})
	if err != nil {
		panic(err)
	}
	return cli.App{Name: "greeter", Agent: root}
}

// temporalWorkerMain runs "loom worker" until it is killed.
func temporalWorkerMain(dir string) int {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	go func() {
		// A test that died cannot kill its worker: it stops by itself.
		for parent := os.Getppid(); os.Getppid() == parent; {
			time.Sleep(time.Second)
		}
		stop()
	}()
	var args []string
	if err := json.Unmarshal([]byte(os.Getenv(envTemporalArgs)), &args); err != nil {
		fmt.Fprintln(os.Stderr, "test worker:", err)
		return 1
	}
	return cli.Run(ctx, args, cli.Env{Stdout: os.Stderr, Stderr: os.Stderr, Getenv: os.Getenv}, gatedApp(dir))
}

// TestD7TemporalWorkerStreamsToWebServer: "loom worker --temporal" in one process
// and "loom api --temporal" in another (the set-up the README
// recommends): a /run_sse request asking for streaming receives the
// model's partial text while the turn runs on the worker (the model waits
// until the client has it), then the answer.
//
// (CONFORMANCE D7)
func TestD7TemporalWorkerStreamsToWebServer(t *testing.T) {
	addr := os.Getenv("LOOM_TEMPORAL_ADDR")
	if addr == "" {
		if os.Getenv("CI") != "" {
			t.Fatal("LOOM_TEMPORAL_ADDR is not set; run scripts/temporal.sh")
		}
		t.Skip("LOOM_TEMPORAL_ADDR is not set; run scripts/temporal.sh to start a Temporal development server")
	}
	dir := t.TempDir()
	// A queue and workflow ids of the test's own on a shared server.
	queue, prefix := "loom-cli-test-"+rand.Text(), "loom-cli-test-"+rand.Text()
	keyFile := filepath.Join(dir, "temporal.key")
	if err := os.WriteFile(keyFile, []byte(base64.StdEncoding.EncodeToString(bytes.Repeat([]byte{7}, temporal.KeySize))+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	common := []string{"--temporal", addr, "--temporal-task-queue", queue, "--sessions", "sqlite://" + filepath.Join(dir, "sessions.db"),
		"--artifacts", "file://" + filepath.Join(dir, "artifacts"), "--temporal-key-file", keyFile}

	args, err := json.Marshal(append([]string{"worker"}, common...))
	if err != nil {
		t.Fatal(err)
	}
	worker := exec.Command(os.Args[0], "-test.run=^$")
	worker.Env = append(os.Environ(), envTemporalWorker+"="+dir, envTemporalArgs+"="+string(args))
	var workerOut syncBuffer
	worker.Stdout, worker.Stderr = &workerOut, &workerOut
	if err := worker.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = worker.Process.Kill()
		_ = worker.Wait()
		if t.Failed() {
			t.Logf("loom worker:\n%s", workerOut.String())
		}
	})

	ctx, cancel := context.WithCancel(context.Background())
	urls := make(chan string, 1)
	done := make(chan int, 1)
	var stderr syncBuffer
	go func() {
		args := append([]string{"api", "--port", "0", "--temporal-workflow-prefix", prefix}, common...)
		done <- cli.Run(ctx, args, cli.Env{Stdout: &stderr, Stderr: &stderr, Getenv: noEnv, Listening: func(u string) { urls <- u }}, gatedApp(dir))
	}()
	t.Cleanup(func() {
		cancel()
		if code := <-done; code != 0 {
			t.Errorf("loom api exited with %d:\n%s", code, stderr.String())
		}
	})
	var base string
	select {
	case base = <-urls:
	case code := <-done:
		t.Fatalf("loom api exited with %d:\n%s", code, stderr.String())
	}
	if !strings.Contains(stderr.String(), "workers send the events of turns to http://127.0.0.1:") {
		t.Fatalf("loom api does not announce its feed listener:\n%s", stderr.String())
	}
	res, err := http.Post(base+"/apps/greeter/users/u/sessions/s", "application/json", strings.NewReader("{}"))
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != http.StatusOK {
		t.Fatalf("create session: %s", res.Status)
	}
	rctx, stop := context.WithTimeout(ctx, 2*time.Minute)
	defer stop()
	req, err := http.NewRequestWithContext(rctx, http.MethodPost, base+"/run_sse", strings.NewReader(
		`{"appName":"greeter","userId":"u","sessionId":"s","streaming":true,"newMessage":{"role":"user","parts":[{"text":"hi"}]}}`))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("run_sse: %s", resp.Status)
	}
	var got []string
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		line, ok := strings.CutPrefix(sc.Text(), "data: ")
		if !ok {
			continue
		}
		var f struct {
			Partial bool           `json:"partial"`
			Content *genai.Content `json:"content"`
			Error   any            `json:"error"`
		}
		if err := json.Unmarshal([]byte(line), &f); err != nil {
			t.Fatal(err)
		}
		if f.Error != nil {
			t.Fatalf("run_sse error frame: %s", line)
		}
		s := ""
		if f.Content != nil && len(f.Content.Parts) > 0 {
			s = f.Content.Parts[0].Text
		}
		if f.Partial {
			s = "partial:" + s
			if err := os.WriteFile(filepath.Join(dir, "gate"), nil, 0o600); err != nil {
				t.Fatal(err)
			}
		}
		got = append(got, s)
	}
	if err := sc.Err(); err != nil {
		t.Fatalf("run_sse: %v (after %q)\nloom api:\n%s", err, got, stderr.String())
	}
	if strings.Join(got, ",") != "partial:hel,hello" {
		t.Fatalf("streamed %q, want the partial text, then the answer", got)
	}
}

// TestD13TemporalKeyRequired: "loom worker" and "loom api" with --temporal
// but no key for Temporal's payloads, or a key that is not one, refuse to
// start, saying how to give one: nothing reaches Temporal in clear. With
// SQLite sessions and no key given, the processes sharing the database
// keep one beside it, readable by its owner only, made once.
//
// (CONFORMANCE D13)
func TestD13TemporalKeyRequired(t *testing.T) {
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.key")
	if err := os.WriteFile(bad, []byte("not-a-key\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	db := "sqlite://" + filepath.Join(dir, "sessions.db")
	pg := "postgres://loom@127.0.0.1:1/none"
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"worker", "--temporal", "127.0.0.1:1", "--sessions", pg}, "no Temporal key"},
		{[]string{"api", "--port", "0", "--temporal", "127.0.0.1:1", "--sessions", pg}, "--temporal-key-file or $" + cli.EnvTemporalKey},
		{[]string{"worker", "--temporal", "127.0.0.1:1", "--sessions", db, "--temporal-key-file", bad}, "temporal key 1 in " + bad},
		{[]string{"worker", "--temporal", "127.0.0.1:1", "--sessions", db, "--temporal-key-file", filepath.Join(dir, "none.key")}, "none.key"},
	} {
		var out syncBuffer
		code := cli.Run(context.Background(), tc.args, cli.Env{Stdout: &out, Stderr: &out, Getenv: noEnv}, gatedApp(dir))
		if code != 1 || !strings.Contains(out.String(), tc.want) {
			t.Errorf("loom %q: exit %d, want 1 and %q:\n%s", tc.args, code, tc.want, out.String())
		}
	}

	// SQLite: the key is made beside the database on first use, then
	// read; the server stops later, at the unreachable Temporal server.
	keyFile := filepath.Join(dir, cli.TemporalKeyFile)
	var keys []string
	for _, cmd := range []string{"worker", "api"} {
		args := []string{cmd, "--temporal", "127.0.0.1:1", "--sessions", db}
		if cmd == "api" {
			args = append(args, "--port", "0")
		}
		var out syncBuffer
		code := cli.Run(context.Background(), args, cli.Env{Stdout: &out, Stderr: &out, Getenv: noEnv}, gatedApp(dir))
		if code != 1 || strings.Contains(out.String(), "no Temporal key") || !strings.Contains(out.String(), "127.0.0.1:1") {
			t.Fatalf("loom %q: exit %d, want it to reach Temporal:\n%s", args, code, out.String())
		}
		info, err := os.Stat(keyFile)
		if err != nil {
			t.Fatal(err)
		}
		if info.Mode().Perm() != 0o600 {
			t.Errorf("%s has mode %v, want 0600", keyFile, info.Mode().Perm())
		}
		b, err := os.ReadFile(keyFile)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := credential.ParseKey(string(b)); err != nil {
			t.Fatalf("%s: %v", keyFile, err)
		}
		keys = append(keys, string(b))
	}
	if keys[0] != keys[1] {
		t.Error("the second process made a key of its own instead of sharing the first one's")
	}
}
