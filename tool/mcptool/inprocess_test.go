package mcptool_test

// Fast edge cases against an in-process server of the MCP SDK, connected
// over its in-memory transport.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"slices"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"go.uber.org/goleak"
	"google.golang.org/genai"

	"github.com/loomkit/loom/tool/mcptool"
)

// inproc is an in-process MCP server the toolset connects to through
// Config.Transport; it counts connections and tools/list requests.
type inproc struct {
	server   *mcp.Server
	connects atomic.Int32
	lists    atomic.Int32
	// wrap, if set, wraps the client side of every connection.
	wrap func(mcp.Connection) mcp.Connection
}

func newInproc() *inproc {
	p := &inproc{server: mcp.NewServer(&mcp.Implementation{Name: "test", Version: "v1"}, nil)}
	p.server.AddReceivingMiddleware(func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			if method == "tools/list" {
				p.lists.Add(1)
			}
			return next(ctx, method, req)
		}
	})
	mcp.AddTool(p.server, &mcp.Tool{Name: "greet", Description: "Greets someone."},
		func(_ context.Context, _ *mcp.CallToolRequest, in struct {
			Name string `json:"name"`
		}) (*mcp.CallToolResult, any, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "Hello, " + in.Name + "!"}}}, nil, nil
		})
	return p
}

func (p *inproc) transport(ctx context.Context) (mcp.Transport, error) {
	ct, st := mcp.NewInMemoryTransports()
	if _, err := p.server.Connect(ctx, st, nil); err != nil {
		return nil, err
	}
	p.connects.Add(1)
	if p.wrap != nil {
		return wrappedTransport{ct, p.wrap}, nil
	}
	return ct, nil
}

func (p *inproc) toolset(t *testing.T, cfg mcptool.Config) *mcptool.Toolset {
	t.Helper()
	cfg.Transport = p.transport
	return newToolset(t, cfg)
}

// addRawTool adds a tool whose handler returns a fixed result.
func (p *inproc) addRawTool(name string, h mcp.ToolHandler) {
	p.server.AddTool(&mcp.Tool{Name: name, InputSchema: map[string]any{"type": "object"}}, h)
}

type wrappedTransport struct {
	mcp.Transport
	wrap func(mcp.Connection) mcp.Connection
}

func (t wrappedTransport) Connect(ctx context.Context) (mcp.Connection, error) {
	c, err := t.Transport.Connect(ctx)
	if err != nil {
		return nil, err
	}
	return t.wrap(c), nil
}

// failingConn fails the writes of tool calls while fail returns true,
// without writing anything.
type failingConn struct {
	mcp.Connection
	fail func() bool
}

func (c failingConn) Write(ctx context.Context, msg jsonrpc.Message) error {
	if req, ok := msg.(*jsonrpc.Request); ok && req.Method == "tools/call" && c.fail() {
		return &os.PathError{Op: "write", Path: "|1", Err: syscall.EPIPE}
	}
	return c.Connection.Write(ctx, msg)
}

// TestSessionReused checks that one session serves concurrent calls and
// listings, and that the tool list is fetched once per session.
func TestSessionReused(t *testing.T) {
	p := newInproc()
	ts := p.toolset(t, mcptool.Config{})
	greet := toolByName(t, ts, "greet")
	var wg sync.WaitGroup
	errs := make(chan error, 40)
	for i := range 20 {
		wg.Go(func() {
			res, err := greet.Run(context.Background(), nil, map[string]any{"name": fmt.Sprint(i)})
			if err == nil && res["result"] != fmt.Sprintf("Hello, %d!", i) {
				err = fmt.Errorf("result = %v", res)
			}
			errs <- err
		})
		wg.Go(func() {
			_, err := ts.Tools(context.Background())
			errs <- err
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Error(err)
		}
	}
	if n := p.connects.Load(); n != 1 {
		t.Errorf("connections = %d, want 1", n)
	}
	if n := p.lists.Load(); n != 1 {
		t.Errorf("tools/list requests = %d, want 1 (cached)", n)
	}
	d := greet.Declaration()
	if d.Parameters == nil || d.Parameters.Type != genai.TypeObject || d.ParametersJsonSchema != nil || d.Description != "Greets someone." {
		t.Errorf("declaration = %+v", d)
	}
}

// TestToolListChanged checks that a tools/list_changed notification
// refreshes the cached list.
func TestToolListChanged(t *testing.T) {
	p := newInproc()
	ts := p.toolset(t, mcptool.Config{})
	if got := mustTools(t, ts); !slices.Equal(got, []string{"greet"}) {
		t.Fatalf("tools = %v", got)
	}
	p.addRawTool("shout", func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "HEY"}}}, nil
	})
	// The notification arrives asynchronously.
	deadline := time.Now().Add(20 * time.Second)
	for !slices.Contains(mustTools(t, ts), "shout") {
		if time.Now().After(deadline) {
			t.Fatal("the new tool was never listed")
		}
		time.Sleep(5 * time.Millisecond)
	}
	if res := call(t, toolByName(t, ts, "shout"), nil); res["result"] != "HEY" {
		t.Errorf("shout = %v", res)
	}
	if n := p.connects.Load(); n != 1 {
		t.Errorf("connections = %d, want 1", n)
	}
}

func mustTools(t *testing.T, ts *mcptool.Toolset) []string {
	t.Helper()
	tools, err := ts.Tools(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, tl := range tools {
		out = append(out, tl.Name())
	}
	return out
}

// TestProtocolErrorKeepsSession calls a tool the server no longer has: the
// error reaches the caller and the session is kept.
func TestProtocolErrorKeepsSession(t *testing.T) {
	p := newInproc()
	p.addRawTool("gone", func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return &mcp.CallToolResult{}, nil
	})
	ts := p.toolset(t, mcptool.Config{})
	gone := toolByName(t, ts, "gone")
	p.server.RemoveTools("gone")
	if _, err := gone.Run(context.Background(), nil, nil); err == nil {
		t.Fatal("calling a removed tool succeeded")
	}
	call(t, toolByName(t, ts, "greet"), map[string]any{"name": "x"})
	if n := p.connects.Load(); n != 1 {
		t.Errorf("connections = %d, want 1", n)
	}
}

// TestUnsentCallRetried makes the first tool call's write fail on a broken
// pipe: nothing reached the server, so the call is sent again on a new
// session and the tool runs once.
func TestUnsentCallRetried(t *testing.T) {
	p := newInproc()
	var ran, writes atomic.Int32
	p.addRawTool("count", func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		ran.Add(1)
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "counted"}}}, nil
	})
	p.wrap = func(c mcp.Connection) mcp.Connection {
		return failingConn{c, func() bool { return writes.Add(1) == 1 }}
	}
	ts := p.toolset(t, mcptool.Config{})
	if res := call(t, toolByName(t, ts, "count"), nil); res["result"] != "counted" {
		t.Errorf("result = %v", res)
	}
	if n := ran.Load(); n != 1 {
		t.Errorf("the tool ran %d times, want 1", n)
	}
	if n := p.connects.Load(); n != 2 {
		t.Errorf("connections = %d, want 2", n)
	}
}

// TestSentCallNotRetried breaks the connection while a call is running on
// the server: the call fails instead of running the tool a second time, and
// the next call reconnects.
func TestSentCallNotRetried(t *testing.T) {
	p := newInproc()
	var ran atomic.Int32
	started := make(chan struct{})
	p.addRawTool("slow", func(ctx context.Context, _ *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		if ran.Add(1) == 1 {
			close(started)
			<-ctx.Done() // until the connection breaks
			return nil, ctx.Err()
		}
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "ran again"}}}, nil
	})
	var (
		mu    sync.Mutex
		conns []mcp.Connection
	)
	p.wrap = func(c mcp.Connection) mcp.Connection {
		mu.Lock()
		defer mu.Unlock()
		conns = append(conns, c)
		return c
	}
	ts := p.toolset(t, mcptool.Config{})
	slow := toolByName(t, ts, "slow")
	done := make(chan error, 1)
	go func() {
		_, err := slow.Run(context.Background(), nil, nil)
		done <- err
	}()
	<-started
	mu.Lock()
	_ = conns[0].Close()
	mu.Unlock()
	if err := <-done; err == nil {
		t.Fatal("the interrupted call succeeded")
	}
	if n := ran.Load(); n != 1 {
		t.Fatalf("the tool ran %d times, want 1", n)
	}
	if res := call(t, toolByName(t, ts, "greet"), map[string]any{"name": "again"}); res["result"] != "Hello, again!" {
		t.Errorf("call after the break = %v", res)
	}
	if n := p.connects.Load(); n != 2 {
		t.Errorf("connections = %d, want 2", n)
	}
}

// TestResultKinds checks how each kind of MCP content reaches the model.
func TestResultKinds(t *testing.T) {
	p := newInproc()
	size := int64(3)
	results := map[string]*mcp.CallToolResult{
		"audio": {Content: []mcp.Content{&mcp.AudioContent{MIMEType: "audio/wav", Data: []byte("RIFF")}}},
		"links": {Content: []mcp.Content{
			&mcp.TextContent{Text: "see"},
			&mcp.ResourceLink{URI: "file:///a.txt", Name: "a.txt", MIMEType: "text/plain", Size: &size},
			&mcp.EmbeddedResource{Resource: &mcp.ResourceContents{URI: "mem://t", MIMEType: "text/plain", Text: "inline"}},
			&mcp.EmbeddedResource{Resource: &mcp.ResourceContents{URI: "mem://b", Blob: []byte{1, 2}}},
		}},
		"structured": {
			Content:           []mcp.Content{&mcp.TextContent{Text: `{"n":1}`}, &mcp.ImageContent{MIMEType: "image/png", Data: []byte{0x89}}},
			StructuredContent: map[string]any{"n": 1, "images": "mine"},
		},
		"empty":   {},
		"failure": {IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: "disk full"}}},
	}
	for name, res := range results {
		p.addRawTool(name, func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) { return res, nil })
	}
	ts := p.toolset(t, mcptool.Config{Filter: func(name string) bool { return name != "greet" }})
	run := func(name string) (map[string]any, error) {
		return toolByName(t, ts, name).Run(context.Background(), nil, nil)
	}
	tests := []struct {
		tool string
		want string
	}{
		{"audio", `{"audio":[{"data":"UklGRg==","mimeType":"audio/wav"}]}`},
		{"links", `{"resources":[{"mimeType":"text/plain","name":"a.txt","uri":"file:///a.txt"},{"mimeType":"text/plain","text":"inline","uri":"mem://t"},{"data":"AQI=","uri":"mem://b"}],"result":"see"}`},
		{"structured", `{"images":"mine","n":1}`},
		{"empty", `{"result":""}`},
	}
	for _, tt := range tests {
		res, err := run(tt.tool)
		if err != nil {
			t.Errorf("%s: %v", tt.tool, err)
			continue
		}
		if got := compactJSON(t, res); got != tt.want {
			t.Errorf("%s = %s\nwant %s", tt.tool, got, tt.want)
		}
	}
	_, err := run("failure")
	var te *mcptool.ToolError
	if !errors.As(err, &te) || te.Text != "disk full" || err.Error() != "tool failure failed: disk full" {
		t.Errorf("failure = %v", err)
	}
}

// TestNamePrefix checks that the model sees prefixed names while calls use
// the MCP names.
func TestNamePrefix(t *testing.T) {
	p := newInproc()
	ts := p.toolset(t, mcptool.Config{NamePrefix: "srv_", ToolNames: []string{"greet"}})
	if got := mustTools(t, ts); !slices.Equal(got, []string{"srv_greet"}) {
		t.Fatalf("tools = %v", got)
	}
	if res := call(t, toolByName(t, ts, "srv_greet"), map[string]any{"name": "p"}); res["result"] != "Hello, p!" {
		t.Errorf("result = %v", res)
	}
}

// TestCloseInProcess checks that Close ends the session without leaking
// goroutines, is idempotent, and that later uses fail with ErrClosed.
func TestCloseInProcess(t *testing.T) {
	leaks := goleak.IgnoreCurrent()
	p := newInproc()
	ts, err := mcptool.New(mcptool.Config{Transport: p.transport})
	if err != nil {
		t.Fatal(err)
	}
	greet := toolByName(t, ts, "greet")
	call(t, greet, map[string]any{"name": "x"})
	if err := ts.Close(); err != nil {
		t.Fatal(err)
	}
	if err := ts.Close(); err != nil {
		t.Fatalf("second close: %v", err)
	}
	if _, err := ts.Tools(context.Background()); !errors.Is(err, mcptool.ErrClosed) {
		t.Errorf("Tools after Close = %v", err)
	}
	if _, err := greet.Run(context.Background(), nil, nil); !errors.Is(err, mcptool.ErrClosed) {
		t.Errorf("Run after Close = %v", err)
	}
	goleak.VerifyNone(t, leaks)
}

// TestCloseUnused closes a toolset that never connected.
func TestCloseUnused(t *testing.T) {
	ts, err := mcptool.New(mcptool.Config{Command: "/nonexistent/mcp-server"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ts.Tools(context.Background()); err == nil {
		t.Error("listing the tools of a missing command succeeded")
	}
	if err := ts.Close(); err != nil {
		t.Error(err)
	}
}

func compactJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestNewInvalidConfig(t *testing.T) {
	transport := func(context.Context) (mcp.Transport, error) { return nil, errors.New("unused") }
	for name, cfg := range map[string]mcptool.Config{
		"none":           {},
		"two transports": {Command: "srv", URL: "http://127.0.0.1:1/mcp"},
		"three":          {Command: "srv", URL: "http://127.0.0.1:1/mcp", Transport: transport},
		"args alone":     {URL: "http://127.0.0.1:1/mcp", Args: []string{"x"}},
		"headers alone":  {Command: "srv", Headers: map[string]string{"A": "b"}},
	} {
		if _, err := mcptool.New(cfg); !errors.Is(err, mcptool.ErrInvalidConfig) {
			t.Errorf("%s: err = %v", name, err)
		}
	}
	ts, err := mcptool.New(mcptool.Config{Transport: transport})
	if err != nil || ts.Name() != "mcp" {
		t.Errorf("default name = %q (%v)", ts.Name(), err)
	}
}
