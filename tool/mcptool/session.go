package mcptool

import (
	"context"
	"errors"
	"net"
	"net/http"
	"sync"
	"syscall"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/loomkit/loom/tool"
)

// conn is one MCP client session and its cached tool list.
type conn struct {
	cs   *mcp.ClientSession
	dead chan struct{} // closed when the session has ended

	mu      sync.Mutex
	version uint64      // bumped by every tools/list_changed notification
	list    []tool.Tool // cached tools; valid when listed
	listed  bool
}

func (c *conn) alive() bool {
	select {
	case <-c.dead:
		return false
	default:
		return true
	}
}

func (c *conn) close() error { return c.cs.Close() }

// tools returns the session's filtered tools, listing them unless cached.
func (c *conn) tools(ctx context.Context, ts *Toolset) ([]tool.Tool, error) {
	c.mu.Lock()
	if c.listed {
		list := c.list
		c.mu.Unlock()
		return list, nil
	}
	version := c.version
	c.mu.Unlock()

	var list []tool.Tool
	for t, err := range c.cs.Tools(ctx, nil) {
		if err != nil {
			return nil, err
		}
		if t == nil || !ts.keep(t.Name) {
			continue
		}
		list = append(list, newTool(ts, t))
	}
	c.mu.Lock()
	// A change notified during the listing may not be reflected in it: keep
	// the result for this step but list again next time.
	if c.version == version {
		c.list, c.listed = list, true
	}
	c.mu.Unlock()
	return list, nil
}

// invalidateTools drops the cached tool list.
func (c *conn) invalidateTools() {
	c.mu.Lock()
	c.version++
	c.list, c.listed = nil, false
	c.mu.Unlock()
}

// toolsChanged handles notifications/tools/list_changed.
func (ts *Toolset) toolsChanged(_ context.Context, req *mcp.ToolListChangedRequest) {
	ts.mu.Lock()
	c := ts.current
	ts.mu.Unlock()
	if c != nil && c.cs == req.Session {
		c.invalidateTools()
	}
}

// do runs op on the current session, connecting if needed. When op fails
// with a transport failure the session is discarded; op then runs once more
// on a new session if retry says the failed attempt is safe to repeat.
func (ts *Toolset) do(ctx context.Context, retry func(error) bool, op func(*conn) error) error {
	c, err := ts.session(ctx)
	if err != nil {
		return err
	}
	err = op(c)
	if !ts.failed(ctx, c, err) || !retry(err) {
		return err
	}
	c, err = ts.session(ctx)
	if err != nil {
		return err
	}
	err = op(c)
	ts.failed(ctx, c, err)
	return err
}

// failed reports whether err is a transport failure of c, and if so
// discards c so that the next use reconnects.
func (ts *Toolset) failed(ctx context.Context, c *conn, err error) bool {
	if err == nil || ctx.Err() != nil {
		return false
	}
	var rpcErr *jsonrpc.Error
	if !errors.Is(err, mcp.ErrConnectionClosed) && errors.As(err, &rpcErr) && c.alive() {
		return false // the server answered: the session works
	}
	ts.discard(c)
	return true
}

// discard removes c if it is still the current session and closes it in
// the background, since closing waits for the calls still in progress on it.
func (ts *Toolset) discard(c *conn) {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	if ts.current == c {
		ts.current = nil
	}
	if !ts.closed { // after Close, which closes the current session itself
		ts.bg.Go(func() { _ = c.close() })
	}
}

// session returns the live session, opening one if there is none. Only one
// connection is opened at a time; concurrent callers wait for it.
func (ts *Toolset) session(ctx context.Context) (*conn, error) {
	for {
		ts.mu.Lock()
		if ts.closed {
			ts.mu.Unlock()
			return nil, ErrClosed
		}
		if c := ts.current; c != nil {
			if c.alive() {
				ts.mu.Unlock()
				return c, nil
			}
			ts.current = nil
			ts.bg.Go(func() { _ = c.close() })
		}
		if wait := ts.dialing; wait != nil {
			ts.mu.Unlock()
			select {
			case <-wait:
				continue
			case <-ctx.Done():
				return nil, ctx.Err()
			}
		}
		done := make(chan struct{})
		ts.dialing = done
		ts.mu.Unlock()

		c, err := ts.connect(ctx)

		ts.mu.Lock()
		ts.dialing = nil
		close(done)
		if err == nil && ts.closed {
			ts.mu.Unlock()
			_ = c.close()
			return nil, ErrClosed
		}
		if err == nil {
			ts.current = c
		}
		ts.mu.Unlock()
		return c, err
	}
}

// connect opens a session and starts watching for its end.
func (ts *Toolset) connect(ctx context.Context) (*conn, error) {
	t, err := ts.newTransport(ctx)
	if err != nil {
		return nil, err
	}
	cs, err := ts.client.Connect(ctx, t, nil)
	if err != nil {
		if st, ok := t.(*stdioTransport); ok {
			err = st.explain(err)
		}
		return nil, err
	}
	c := &conn{cs: cs, dead: make(chan struct{})}
	ts.bg.Go(func() {
		_ = cs.Wait()
		close(c.dead)
	})
	return c, nil
}

// sendRecord is what the transport observed of the writes of one tool call
// request. It travels in the call's context.
type sendRecord struct {
	mu       sync.Mutex
	written  bool  // a write of the request succeeded
	rejected bool  // an HTTP server refused the request with a 4xx status
	err      error // the last failed write
}

type sendRecordKey struct{}

func withSendRecord(ctx context.Context) (context.Context, *sendRecord) {
	r := &sendRecord{}
	return context.WithValue(ctx, sendRecordKey{}, r), r
}

// noteWrite records the outcome of writing a request in ctx's record, if
// any: err is the write error, and rejected tells a refusal by the server.
func noteWrite(ctx context.Context, err error, rejected bool) {
	r, _ := ctx.Value(sendRecordKey{}).(*sendRecord)
	if r == nil {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	switch {
	case err != nil:
		r.err = err
	case rejected:
		r.rejected = true
	default:
		r.written = true
	}
}

// unsent reports whether a tool call that failed with err certainly did not
// reach the server, so that sending it again cannot run the tool twice.
func unsent(r *sendRecord, err error) bool {
	if errors.Is(err, mcp.ErrSessionMissing) {
		// The HTTP server rejected the session without handling the request.
		return true
	}
	if errors.Is(err, mcp.ErrConnectionClosed) {
		// The session was already closed when the request was issued.
		return true
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.written {
		return false
	}
	if r.rejected {
		// An HTTP server refuses a message it will not handle (an unknown
		// session, for instance) with a 4xx status; a tool that ran is
		// answered with 200.
		return true
	}
	// The call's own error may be the broken connection's read error, which
	// wins the race against the write error: look at the write error too.
	return refused(r.err) || refused(err)
}

// refused reports whether err shows that nothing received the request: no
// process was reading the pipe, or nothing accepted the connection.
func refused(err error) bool {
	if err == nil {
		return false
	}
	if errors.Is(err, syscall.EPIPE) || errors.Is(err, syscall.ECONNREFUSED) {
		return true
	}
	var opErr *net.OpError
	return errors.As(err, &opErr) && opErr.Op == "dial"
}

// recordingTransport makes the connections of a stdio transport note the
// writes of tool call requests.
type recordingTransport struct{ mcp.Transport }

func (t recordingTransport) Connect(ctx context.Context) (mcp.Connection, error) {
	c, err := t.Transport.Connect(ctx)
	if err != nil {
		return nil, err
	}
	return recordingConn{c}, nil
}

type recordingConn struct{ mcp.Connection }

func (c recordingConn) Write(ctx context.Context, msg jsonrpc.Message) error {
	err := c.Connection.Write(ctx, msg)
	if req, ok := msg.(*jsonrpc.Request); ok && req.Method == "tools/call" {
		noteWrite(ctx, err, false)
	}
	return err
}

// recordingRoundTripper notes the HTTP requests made for tool calls (they
// carry the call's context).
type recordingRoundTripper struct{ base http.RoundTripper }

func (t recordingRoundTripper) RoundTrip(req *http.Request) (*http.Response, error) {
	base := t.base
	if base == nil {
		base = http.DefaultTransport
	}
	resp, err := base.RoundTrip(req)
	if req.Method == http.MethodPost {
		noteWrite(req.Context(), err, err == nil && resp.StatusCode >= 400 && resp.StatusCode < 500)
	}
	return resp, err
}

// CloseIdleConnections lets http.Client.CloseIdleConnections reach the base
// transport.
func (t recordingRoundTripper) CloseIdleConnections() {
	type closeIdler interface{ CloseIdleConnections() }
	if ci, ok := t.base.(closeIdler); ok {
		ci.CloseIdleConnections()
	}
}
