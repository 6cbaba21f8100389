package mcptool_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/loomkit/loom/tool/mcptool"
)

// frozen adds a tool "freeze" whose handler ignores its context and blocks
// until the test ends, like a server that stopped answering. entered
// receives a value when a call reaches it.
func frozen(t *testing.T, p *inproc) (entered chan struct{}) {
	entered = make(chan struct{}, 4)
	release := make(chan struct{})
	t.Cleanup(func() { close(release) })
	p.addRawTool("freeze", func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		entered <- struct{}{}
		<-release
		return &mcp.CallToolResult{}, nil
	})
	return entered
}

// TestCallTimeout: a call to a server that never answers fails once
// Config.CallTimeout has passed.
func TestCallTimeout(t *testing.T) {
	p := newInproc()
	frozen(t, p)
	ts := p.toolset(t, mcptool.Config{CallTimeout: 200 * time.Millisecond, ShutdownTimeout: 200 * time.Millisecond})
	freeze := toolByName(t, ts, "freeze")
	start := time.Now()
	_, err := freeze.Run(context.Background(), nil, nil)
	if !errors.Is(err, context.DeadlineExceeded) || time.Since(start) > 5*time.Second {
		t.Fatalf("after %v: err = %v, want a deadline error after about 200ms", time.Since(start), err)
	}
}

// TestCloseWithFrozenCall: Close ends within its shutdown timeout while a
// call to a frozen server is in flight, and the call fails with ErrClosed.
func TestCloseWithFrozenCall(t *testing.T) {
	p := newInproc()
	entered := frozen(t, p)
	ts, err := mcptool.New(mcptool.Config{Transport: p.transport, CallTimeout: -1, ShutdownTimeout: 300 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	freeze := toolByName(t, ts, "freeze")
	callErr := make(chan error, 1)
	go func() {
		_, err := freeze.Run(context.Background(), nil, nil)
		callErr <- err
	}()
	<-entered
	closed := make(chan error, 1)
	start := time.Now()
	go func() { closed <- ts.Close() }()
	select {
	case <-closed:
	case <-time.After(5 * time.Second):
		t.Fatal("Close still blocked after 5s with a frozen call in flight")
	}
	if d := time.Since(start); d > 2*time.Second {
		t.Errorf("Close took %v, want about the 300ms shutdown timeout", d)
	}
	select {
	case err := <-callErr:
		if !errors.Is(err, mcptool.ErrClosed) {
			t.Errorf("call in flight ended with %v, want ErrClosed", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the call in flight did not end after Close")
	}
}
