package mcptool_test

// Tests against a real MCP server process: the "everything" reference
// server from npm, installed by scripts/mcp-server.sh, whose path is given in
// LOOM_MCP_EVERYTHING.

import (
	"bufio"
	"bytes"
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"go.uber.org/goleak"
	"google.golang.org/genai"

	"github.com/loomkit/loom/agent/llmagent"
	"github.com/loomkit/loom/model/scripted"
	"github.com/loomkit/loom/runner"
	"github.com/loomkit/loom/session"
	"github.com/loomkit/loom/session/memsession"
	"github.com/loomkit/loom/tool"
	"github.com/loomkit/loom/tool/mcptool"
)

// everything returns the path of the everything server's executable, or
// skips the test (fails it under CI) when it is not installed.
func everything(t *testing.T) string {
	t.Helper()
	p := os.Getenv("LOOM_MCP_EVERYTHING")
	if p == "" {
		if os.Getenv("CI") != "" {
			t.Fatal("LOOM_MCP_EVERYTHING is not set; run scripts/mcp-server.sh")
		}
		t.Skip("LOOM_MCP_EVERYTHING is not set; run scripts/mcp-server.sh to install the MCP test server")
	}
	return p
}

// stdioConfig returns the config of a stdio toolset running the everything
// server.
func stdioConfig(t *testing.T) mcptool.Config {
	return mcptool.Config{Command: everything(t), Args: []string{"stdio"}, ShutdownTimeout: time.Second}
}

func newToolset(t *testing.T, cfg mcptool.Config) *mcptool.Toolset {
	t.Helper()
	ts, err := mcptool.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = ts.Close() })
	return ts
}

// toolByName lists the toolset's tools and returns the named one.
func toolByName(t *testing.T, ts *mcptool.Toolset, name string) tool.Function {
	t.Helper()
	tools, err := ts.Tools(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	for _, tl := range tools {
		if tl.Name() == name {
			return tl.(tool.Function)
		}
	}
	t.Fatalf("no tool %q", name)
	return nil
}

func names(tools []tool.Tool) []string {
	var out []string
	for _, tl := range tools {
		out = append(out, tl.Name())
	}
	slices.Sort(out)
	return out
}

func call(t *testing.T, tl tool.Function, args map[string]any) map[string]any {
	t.Helper()
	res, err := tl.Run(context.Background(), nil, args)
	if err != nil {
		t.Fatalf("%s: %v", tl.Name(), err)
	}
	return res
}

// TestStdioListFiltered lists the server's tools through an allow-list and a
// filter; each tool declares the server's name, description and schema.
func TestStdioListFiltered(t *testing.T) {
	cfg := stdioConfig(t)
	cfg.ToolNames = []string{"echo", "get-sum", "get-tiny-image", "no-such-tool"}
	cfg.Filter = func(name string) bool { return name != "get-tiny-image" }
	ts := newToolset(t, cfg)
	tools, err := ts.Tools(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if got, want := names(tools), []string{"echo", "get-sum"}; !slices.Equal(got, want) {
		t.Fatalf("tools = %v, want %v", got, want)
	}
	echo := toolByName(t, ts, "echo")
	d := echo.Declaration()
	if d.Name != "echo" || d.Description != "Echoes back the input string" || echo.Description() != d.Description {
		t.Errorf("declaration = %q %q", d.Name, d.Description)
	}
	// Declared as ADK declares it: a genai schema, not the JSON Schema.
	if d.ParametersJsonSchema != nil {
		t.Errorf("parameters_json_schema = %v, want none", d.ParametersJsonSchema)
	}
	schema := d.Parameters
	if schema == nil || schema.Type != genai.TypeObject || schema.Properties["message"] == nil ||
		schema.Properties["message"].Type != genai.TypeString || schema.Properties["message"].Description == "" {
		t.Fatalf("parameters = %+v", schema)
	}
	if !slices.Contains(schema.Required, "message") {
		t.Errorf("parameters required = %v", schema.Required)
	}
}

// TestStdioCalls calls tools of every result kind on one session, then
// checks that Close leaves no goroutine behind.
func TestStdioCalls(t *testing.T) {
	leaks := goleak.IgnoreCurrent()
	ts, err := mcptool.New(stdioConfig(t))
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := ts.Close(); err != nil {
			t.Errorf("close: %v", err)
		}
		goleak.VerifyNone(t, leaks)
	}()

	t.Run("text", func(t *testing.T) {
		res := call(t, toolByName(t, ts, "echo"), map[string]any{"message": "hello"})
		if len(res) != 1 || res["result"] != "Echo: hello" {
			t.Errorf("echo = %v", res)
		}
	})
	t.Run("numbers", func(t *testing.T) {
		res := call(t, toolByName(t, ts, "get-sum"), map[string]any{"a": 2.0, "b": 3.5})
		if res["result"] != "The sum of 2 and 3.5 is 5.5." {
			t.Errorf("get-sum = %v", res)
		}
	})
	t.Run("image", func(t *testing.T) {
		res := call(t, toolByName(t, ts, "get-tiny-image"), nil)
		if res["result"] != "Here's the image you requested:\nThe image above is the MCP logo." {
			t.Errorf("text = %q", res["result"])
		}
		images, _ := res["images"].([]any)
		if len(images) != 1 {
			t.Fatalf("images = %v", res["images"])
		}
		img := images[0].(map[string]any)
		data, err := base64.StdEncoding.DecodeString(img["data"].(string))
		if err != nil || img["mimeType"] != "image/png" || !bytes.HasPrefix(data, []byte("\x89PNG\r\n\x1a\n")) {
			t.Errorf("image = %v (%v)", img["mimeType"], err)
		}
	})
	t.Run("error result", func(t *testing.T) {
		// The server rejects arguments that miss the required message with
		// an isError result.
		_, err := toolByName(t, ts, "echo").Run(context.Background(), nil, map[string]any{})
		var te *mcptool.ToolError
		if !errors.As(err, &te) || te.Tool != "echo" || !strings.Contains(te.Text, "message") {
			t.Errorf("error = %v", err)
		}
	})
	t.Run("structured", func(t *testing.T) {
		res := call(t, toolByName(t, ts, "get-structured-content"), map[string]any{"location": "Chicago"})
		if _, ok := res["temperature"].(float64); !ok {
			t.Errorf("structured = %v", res)
		}
		if _, ok := res["conditions"].(string); !ok {
			t.Errorf("structured = %v", res)
		}
		if _, ok := res["result"]; ok {
			t.Errorf("structured content repeated as text: %v", res)
		}
	})
	t.Run("env", func(t *testing.T) {
		// get-env shows the server's environment: Env adds to it.
		cfg := stdioConfig(t)
		cfg.Env = []string{"LOOM_MCP_TEST_VAR=42"}
		ts2 := newToolset(t, cfg)
		res := call(t, toolByName(t, ts2, "get-env"), nil)
		text, _ := res["result"].(string)
		if !strings.Contains(text, `"LOOM_MCP_TEST_VAR": "42"`) || !strings.Contains(text, `"PATH"`) {
			t.Errorf("env does not hold LOOM_MCP_TEST_VAR and PATH: %.300s", text)
		}
	})
}

// TestStdioReconnect kills the server process between two calls: the next
// call starts a new process and succeeds.
func TestStdioReconnect(t *testing.T) {
	bin := everything(t)
	pidFile := filepath.Join(t.TempDir(), "pid")
	ts := newToolset(t, mcptool.Config{
		Command:         "sh",
		Args:            []string{"-c", `echo $$ >"$1"; exec "$0" stdio`, bin, pidFile},
		ShutdownTimeout: time.Second,
	})
	echo := toolByName(t, ts, "echo")
	if res := call(t, echo, map[string]any{"message": "one"}); res["result"] != "Echo: one" {
		t.Fatalf("first call = %v", res)
	}
	first := readPid(t, pidFile)
	if err := syscall.Kill(first, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	waitExited(t, first)

	if res := call(t, echo, map[string]any{"message": "two"}); res["result"] != "Echo: two" {
		t.Fatalf("call after kill = %v", res)
	}
	if second := readPid(t, pidFile); second == first {
		t.Errorf("the server was not restarted (pid %d)", second)
	}
	if _, err := ts.Tools(context.Background()); err != nil {
		t.Errorf("list after reconnect: %v", err)
	}
}

func readPid(t *testing.T, path string) int {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		t.Fatal(err)
	}
	return pid
}

// waitExited waits until a killed process has exited and released its
// files, so that nothing reads the pipe it was served on (it may linger as a
// zombie until its parent reaps it; a zombie leader's other threads may
// still hold the files for a moment).
func waitExited(t *testing.T, pid int) {
	t.Helper()
	proc := fmt.Sprintf("/proc/%d", pid)
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		b, err := os.ReadFile(proc + "/stat")
		if err != nil {
			return // reaped
		}
		// The state follows the parenthesized command name.
		i := bytes.LastIndexByte(b, ')')
		threads, _ := os.ReadDir(proc + "/task")
		if i >= 0 && bytes.HasPrefix(b[i+1:], []byte(" Z")) && len(threads) <= 1 {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatalf("process %d did not exit", pid)
}

// startHTTPServer starts the everything server over streamable HTTP on a
// loopback port and returns a function that stops it.
func startHTTPServer(t *testing.T, bin string, port int) (stop func()) {
	t.Helper()
	srv := exec.Command(bin, "streamableHttp")
	srv.Env = append(os.Environ(), "PORT="+strconv.Itoa(port))
	stderr, err := srv.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := srv.Start(); err != nil {
		t.Fatal(err)
	}
	var once sync.Once
	stop = func() {
		once.Do(func() {
			_ = srv.Process.Kill()
			_ = srv.Wait()
		})
	}
	t.Cleanup(stop)
	waitListening(t, stderr)
	return stop
}

// TestStreamableHTTP connects over streamable HTTP to the server started as
// a subprocess on a free loopback port.
func TestStreamableHTTP(t *testing.T) {
	bin := everything(t)
	port := freePort(t)
	startHTTPServer(t, bin, port)

	leaks := goleak.IgnoreCurrent()
	ts, err := mcptool.New(mcptool.Config{
		Name:       "everything",
		URL:        fmt.Sprintf("http://127.0.0.1:%d/mcp", port),
		Headers:    map[string]string{"X-Loom-Test": "1"},
		ToolNames:  []string{"echo", "get-sum"},
		NamePrefix: "ev_",
	})
	if err != nil {
		t.Fatal(err)
	}
	tools, err := ts.Tools(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if got, want := names(tools), []string{"ev_echo", "ev_get-sum"}; !slices.Equal(got, want) {
		t.Fatalf("tools = %v, want %v", got, want)
	}
	if res := call(t, toolByName(t, ts, "ev_echo"), map[string]any{"message": "over http"}); res["result"] != "Echo: over http" {
		t.Errorf("echo = %v", res)
	}
	if res := call(t, toolByName(t, ts, "ev_get-sum"), map[string]any{"a": 1.0, "b": 2.0}); res["result"] != "The sum of 1 and 2 is 3." {
		t.Errorf("get-sum = %v", res)
	}
	if err := ts.Close(); err != nil {
		t.Errorf("close: %v", err)
	}
	goleak.VerifyNone(t, leaks)
}

func freePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// waitListening reads the server's stderr until it says it listens, then
// keeps draining it.
func waitListening(t *testing.T, stderr io.Reader) {
	t.Helper()
	sc := bufio.NewScanner(stderr)
	var seen []string
	for sc.Scan() {
		line := sc.Text()
		if strings.Contains(line, "listening on port") {
			go func() { _, _ = io.Copy(io.Discard, stderr) }()
			return
		}
		seen = append(seen, line)
	}
	t.Fatalf("the server exited before listening: %s", strings.Join(seen, "\n"))
}

// TestStreamableHTTPServerRestart restarts the HTTP server between two
// calls: the old session is gone, and the next call opens a new one.
func TestStreamableHTTPServerRestart(t *testing.T) {
	bin := everything(t)
	port := freePort(t)
	stop := startHTTPServer(t, bin, port)
	ts := newToolset(t, mcptool.Config{URL: fmt.Sprintf("http://127.0.0.1:%d/mcp", port), ToolNames: []string{"echo"}})
	echo := toolByName(t, ts, "echo")
	if res := call(t, echo, map[string]any{"message": "before"}); res["result"] != "Echo: before" {
		t.Fatalf("echo = %v", res)
	}
	stop()
	startHTTPServer(t, bin, port)
	if res := call(t, echo, map[string]any{"message": "after"}); res["result"] != "Echo: after" {
		t.Fatalf("echo after the restart = %v", res)
	}
}

// TestAgentCallsMCPTool runs an LLM agent whose toolset is the server: the
// model calls echo, the runner commits the call and the response, and the
// model answers with the echoed text.
func TestAgentCallsMCPTool(t *testing.T) {
	cfg := stdioConfig(t)
	cfg.ToolNames = []string{"echo"}
	ts := newToolset(t, cfg)
	m := scripted.NewSequence("m",
		scripted.Turn{Calls: []*genai.FunctionCall{{ID: "fc-1", Name: "echo", Args: map[string]any{"message": "hello"}}}},
		scripted.Text("The server said hello."),
	)
	a, err := llmagent.New(llmagent.Config{Name: "assistant", Model: m, Toolsets: []tool.Toolset{ts}})
	if err != nil {
		t.Fatal(err)
	}
	sessions := memsession.NewService()
	r, err := runner.New(runner.Config{AppName: "app", Agent: a, Sessions: sessions, AutoCreateSession: true})
	if err != nil {
		t.Fatal(err)
	}
	events, err := r.RunSync(context.Background(), "u1", "s1", genai.NewContentFromText("echo hello", genai.RoleUser), nil)
	if err != nil {
		t.Fatal(err)
	}
	var fr *genai.FunctionResponse
	for _, ev := range events {
		if frs := ev.FunctionResponses(); len(frs) > 0 {
			fr = frs[0]
		}
	}
	if fr == nil || fr.ID != "fc-1" || fr.Response["result"] != "Echo: hello" {
		t.Fatalf("function response = %+v", fr)
	}
	if last := events[len(events)-1]; !last.IsFinalResponse() || last.Content.Parts[0].Text != "The server said hello." {
		t.Errorf("final event = %+v", last.Content)
	}
	// The model saw the MCP tool's declaration.
	reqs := m.Requests()
	if len(reqs) != 2 || len(reqs[0].Config.Tools) != 1 || reqs[0].Config.Tools[0].FunctionDeclarations[0].Name != "echo" {
		t.Errorf("model requests = %d, tools = %+v", len(reqs), reqs[0].Config.Tools)
	}
	// The response the model read was committed to the session.
	s, err := sessions.Get(context.Background(), session.Key{AppName: "app", UserID: "u1", SessionID: "s1"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	var committed bool
	for _, ev := range s.Events() {
		if frs := ev.FunctionResponses(); len(frs) > 0 && frs[0].Response["result"] == "Echo: hello" {
			committed = true
		}
	}
	if !committed {
		t.Error("the function response was not committed")
	}
}
