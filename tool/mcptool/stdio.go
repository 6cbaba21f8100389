package mcptool

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// stderrTailBytes bounds what a start-up error quotes of a server's
// standard error: its last 2 KiB.
const stderrTailBytes = 2 << 10

// stdioTransport is the transport of one server process. It keeps the end
// of the process's standard error and how the process ended, so that a
// server that dies before the MCP handshake completes fails with an error
// that says why, not only that the pipe closed.
type stdioTransport struct {
	mcp.Transport
	stderr *tailWriter

	mu       sync.Mutex
	closed   bool
	closeErr error // what closing the connection reported: the process's exit
}

func (t *stdioTransport) Connect(ctx context.Context) (mcp.Connection, error) {
	c, err := t.Transport.Connect(ctx)
	if err != nil {
		return nil, err
	}
	return &closeRecorder{Connection: c, t: t}, nil
}

// closeRecorder notes the outcome of closing a server's connection, which
// waits for the process to exit and returns its exit error.
type closeRecorder struct {
	mcp.Connection
	t *stdioTransport
}

func (c *closeRecorder) Close() error {
	err := c.Connection.Close()
	c.t.mu.Lock()
	c.t.closed, c.t.closeErr = true, err
	c.t.mu.Unlock()
	return err
}

// explain adds to err, the failure of a connection's handshake, how the
// process ended and the end of its standard error, when known. (The SDK
// closes the connection, and with it waits for the process, before its
// Connect returns.)
func (t *stdioTransport) explain(err error) error {
	var notes []string
	t.mu.Lock()
	closed, closeErr := t.closed, t.closeErr
	t.mu.Unlock()
	var exit *exec.ExitError
	switch {
	case errors.As(closeErr, &exit):
		notes = append(notes, "server "+exit.ProcessState.String())
	case closed && closeErr == nil:
		notes = append(notes, "server exited with status 0")
	}
	if tail := t.stderr.tail(); tail != "" {
		notes = append(notes, "its stderr ends: "+tail)
	}
	if len(notes) == 0 {
		return err
	}
	return fmt.Errorf("%w (%s)", err, strings.Join(notes, "; "))
}

// tailWriter passes a process's standard error on to w (if any) and keeps
// its last stderrTailBytes bytes.
type tailWriter struct {
	w io.Writer

	mu  sync.Mutex
	buf []byte
	cut bool // bytes were dropped from the front
}

func (t *tailWriter) Write(p []byte) (int, error) {
	t.mu.Lock()
	keep := p
	if len(keep) > stderrTailBytes {
		keep, t.cut = keep[len(keep)-stderrTailBytes:], true
	}
	if over := len(t.buf) + len(keep) - stderrTailBytes; over > 0 {
		t.buf = append(t.buf[:0], t.buf[over:]...)
		t.cut = true
	}
	t.buf = append(t.buf, keep...)
	t.mu.Unlock()
	if t.w != nil {
		return t.w.Write(p)
	}
	return len(p), nil
}

// tail returns the kept bytes, trimmed, as valid UTF-8, marked with "…"
// when earlier output was dropped.
func (t *tailWriter) tail() string {
	t.mu.Lock()
	b, cut := []byte(string(t.buf)), t.cut
	t.mu.Unlock()
	for cut && len(b) > 0 && !utf8.RuneStart(b[0]) {
		b = b[1:]
	}
	s := strings.TrimSpace(strings.ToValidUTF8(string(b), "\uFFFD"))
	if cut && s != "" {
		s = "…" + s
	}
	return s
}
