// Package mcptool exposes the tools of a Model Context Protocol (MCP) server
// as a Loom toolset.
//
// # Connecting
//
// A [Toolset] talks to one MCP server over exactly one transport:
//
//   - stdio: [Config.Command] (with Args, Env, Dir) is started as a child
//     process and spoken to over its stdin and stdout;
//   - streamable HTTP: [Config.URL] is the server's MCP endpoint, reached
//     with [Config.HTTPClient] and [Config.Headers];
//   - anything else the MCP SDK can speak: [Config.Transport] returns a
//     fresh [mcp.Transport] for every connection (an in-process server over
//     [mcp.NewInMemoryTransports], for instance).
//
// Give the toolset to an LLM agent with llmagent.Config.Toolsets. The agent
// lists the tools at every step; each MCP tool becomes a [tool.Tool] whose
// function declaration carries the MCP tool's name (after
// [Config.NamePrefix]), description (empty when the server gives none) and
// parameters: the input JSON schema converted to a genai schema as ADK
// converts it (upper-case types, required names, descriptions, defaults;
// keywords a genai schema cannot hold, such as additionalProperties, are
// dropped). The other model adapters turn that schema back into JSON Schema.
//
// # Sessions and reconnection
//
// One MCP client session is opened lazily, on the first listing or call, and
// shared by every call and invocation until [Toolset.Close]. The toolset is
// safe for concurrent use. The list of tools is cached for the session; it is
// refreshed when the server sends notifications/tools/list_changed and when
// the session is replaced.
//
// When the transport fails (the server process exited, the HTTP server
// dropped the session or refused the connection) the broken session is
// discarded and the next use opens a new one. Within one operation the
// toolset reconnects at most once:
//
//   - a listing is retried on the new session after any transport failure,
//     since listing has no effect on the server;
//   - a tool call is retried only when the failure proves the server did
//     not handle the request: the session was already known to be closed
//     when the call was issued, the server process had exited before the
//     request was written to its stdin, the HTTP connection could not be
//     established, or the HTTP server refused the request with a 4xx
//     status (as it does for a session it no longer knows, after a
//     restart). A call that was delivered and then lost its answer is not
//     repeated, because the tool may have run: the caller (the model, under
//     an LLM agent) receives the transport error, and the next call uses a
//     new session. Over a custom Transport only the error itself is
//     examined.
//
// # Results
//
// A successful call becomes the function response map as follows:
//
//   - structured content (an MCP tool with an output schema) is the map
//     itself; a structured value that is not a JSON object is put under
//     "result";
//   - otherwise the text blocks are joined with newlines under "result";
//   - images are listed under "images" as {"mimeType", "data"} with data in
//     standard base64, audio the same way under "audio";
//   - resource links and embedded resources are listed under "resources" as
//     {"uri", "name", "mimeType", "description", "text", "data"} (fields
//     that are empty are left out; blob data is base64).
//
// A result flagged isError is returned as a [*ToolError] carrying the
// server's text, so the model receives an {"error": ...} response it can
// read and act on. Protocol errors (an unknown tool, invalid parameters) are
// returned as errors too.
package mcptool

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"slices"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/loomkit/loom/tool"
)

// ErrClosed is returned by a toolset, and by its tools, after Close.
var ErrClosed = errors.New("mcptool: toolset is closed")

// DefaultCallTimeout bounds a tool call when Config.CallTimeout is zero.
const DefaultCallTimeout = 5 * time.Minute

// defaultShutdownTimeout bounds Close when Config.ShutdownTimeout is zero.
const defaultShutdownTimeout = 5 * time.Second

// ErrInvalidConfig is returned by New for a configuration it cannot use.
var ErrInvalidConfig = errors.New("mcptool: invalid config")

// Config configures a Toolset. Exactly one of Command, URL and Transport must
// be set.
type Config struct {
	// Name identifies the toolset; it defaults to "mcp".
	Name string

	// Command is the program of a server spoken to over stdio. It is started
	// on the first connection and again after the process exits.
	Command string
	// Args are the command's arguments.
	Args []string
	// Env holds extra "KEY=value" environment variables for the command, on
	// top of the environment of the current process (later entries win).
	Env []string
	// Dir is the command's working directory; empty means the current one.
	Dir string
	// Stderr receives the command's standard error; nil discards it.
	Stderr io.Writer
	// ShutdownTimeout bounds Close: calls still in flight are cancelled,
	// and a session that has not ended after this long is abandoned (a
	// stdio server process is signalled to stop). Zero means 5 seconds.
	ShutdownTimeout time.Duration
	// CallTimeout bounds each tool call, so that a server that stops
	// answering cannot hold a call (and the invocation making it) forever.
	// Zero means DefaultCallTimeout; negative means no limit beyond the
	// caller's context.
	CallTimeout time.Duration

	// URL is the endpoint of a server spoken to over streamable HTTP.
	URL string
	// HTTPClient makes the HTTP requests; nil means a client of the
	// toolset's own, whose idle connections are closed by Close.
	HTTPClient *http.Client
	// Headers are added to every HTTP request (for example an
	// Authorization header).
	Headers map[string]string

	// Transport, if set, returns a new transport for every connection. It
	// is how to reach servers over transports other than stdio and
	// streamable HTTP, such as an in-process server.
	Transport func(ctx context.Context) (mcp.Transport, error)

	// ToolNames, if not empty, is an allow-list of MCP tool names.
	ToolNames []string
	// Filter, if set, keeps only the MCP tools for which it returns true. It
	// applies together with ToolNames.
	Filter func(name string) bool
	// NamePrefix is prepended to every tool name the model sees, to keep
	// the tools of several servers apart. Calls use the MCP name.
	NamePrefix string
}

// Toolset is a tool.Toolset backed by an MCP server. It is safe for
// concurrent use. Close it when done to end the session (and stop the
// server process of a stdio toolset).
type Toolset struct {
	cfg    Config
	client *mcp.Client
	http   *http.Client // for URL toolsets
	ownsHC bool         // http was created by New

	// stop is cancelled by Close, which ends the calls in flight.
	stop       context.Context
	cancelStop context.CancelFunc

	mu      sync.Mutex
	current *conn         // live session, or nil
	dialing chan struct{} // closed when the connection under way settles
	closed  bool
	bg      sync.WaitGroup // session watchers and background closes
}

var _ tool.Toolset = (*Toolset)(nil)

// New returns a toolset for the server cfg describes. It does not connect:
// the session is opened on first use.
func New(cfg Config) (*Toolset, error) {
	n := 0
	for _, set := range []bool{cfg.Command != "", cfg.URL != "", cfg.Transport != nil} {
		if set {
			n++
		}
	}
	if n != 1 {
		return nil, fmt.Errorf("%w: exactly one of Command, URL and Transport must be set", ErrInvalidConfig)
	}
	if cfg.Command == "" && (len(cfg.Args) > 0 || len(cfg.Env) > 0 || cfg.Dir != "") {
		return nil, fmt.Errorf("%w: Args, Env and Dir need Command", ErrInvalidConfig)
	}
	if cfg.URL == "" && (cfg.HTTPClient != nil || len(cfg.Headers) > 0) {
		return nil, fmt.Errorf("%w: HTTPClient and Headers need URL", ErrInvalidConfig)
	}
	if cfg.Name == "" {
		cfg.Name = "mcp"
	}
	cfg.Args = slices.Clone(cfg.Args)
	cfg.Env = slices.Clone(cfg.Env)
	cfg.ToolNames = slices.Clone(cfg.ToolNames)
	if cfg.ShutdownTimeout <= 0 {
		cfg.ShutdownTimeout = defaultShutdownTimeout
	}
	ts := &Toolset{cfg: cfg}
	ts.stop, ts.cancelStop = context.WithCancel(context.Background())
	if cfg.URL != "" {
		ts.http = cfg.HTTPClient
		if ts.http == nil {
			ts.http = &http.Client{Transport: http.DefaultTransport.(*http.Transport).Clone()}
			ts.ownsHC = true
		}
		hc := *ts.http
		hc.Transport = recordingRoundTripper{base: hc.Transport}
		if len(cfg.Headers) > 0 {
			hc.Transport = &headerTransport{base: hc.Transport, headers: cfg.Headers}
		}
		ts.http = &hc
	}
	ts.client = mcp.NewClient(&mcp.Implementation{Name: "loom", Version: "v1"}, &mcp.ClientOptions{
		ToolListChangedHandler: ts.toolsChanged,
	})
	return ts, nil
}

// Name implements tool.Toolset.
func (ts *Toolset) Name() string { return ts.cfg.Name }

// Tools implements tool.Toolset: it returns the server's tools that pass the
// filters, connecting first if needed. The list is cached for the session.
func (ts *Toolset) Tools(ctx context.Context) ([]tool.Tool, error) {
	ctx, done := ts.callContext(ctx)
	defer done()
	var tools []tool.Tool
	err := ts.do(ctx, func(error) bool { return true }, func(c *conn) error {
		var err error
		tools, err = c.tools(ctx, ts)
		return err
	})
	if err != nil {
		if cause := context.Cause(ctx); errors.Is(cause, ErrClosed) && !errors.Is(err, ErrClosed) {
			err = fmt.Errorf("%w: %w", cause, err)
		}
		return nil, fmt.Errorf("mcptool: %s: list tools: %w", ts.cfg.Name, err)
	}
	return tools, nil
}

// Close ends the session, stops the server process of a stdio toolset and
// waits for the toolset's goroutines. Calls in progress are cancelled and
// fail with ErrClosed. Whatever the server does, Close returns within
// Config.ShutdownTimeout: a session that has not ended by then is
// abandoned (its closing, and the stopping of a stdio server process,
// go on in the background) and Close reports an error. Later uses fail
// with ErrClosed. Close is idempotent.
func (ts *Toolset) Close() error {
	ts.mu.Lock()
	if ts.closed {
		ts.mu.Unlock()
		return nil
	}
	ts.closed = true
	c := ts.current
	ts.current = nil
	dialing := ts.dialing
	ts.mu.Unlock()
	ts.cancelStop() // ends the calls and the connection in flight
	deadline := time.NewTimer(ts.cfg.ShutdownTimeout)
	defer deadline.Stop()
	if dialing != nil {
		select {
		case <-dialing: // a connection under way is closed by its dialer
		case <-deadline.C:
			return fmt.Errorf("mcptool: %s: close: connection still under way after %v", ts.cfg.Name, ts.cfg.ShutdownTimeout)
		}
	}
	done := make(chan error, 1)
	go func() {
		var err error
		if c != nil {
			err = c.close()
		}
		ts.bg.Wait()
		done <- err
	}()
	var err error
	select {
	case err = <-done:
	case <-deadline.C:
		err = fmt.Errorf("session still open after %v; abandoned", ts.cfg.ShutdownTimeout)
	}
	if ts.ownsHC {
		ts.http.CloseIdleConnections()
	}
	if err != nil {
		return fmt.Errorf("mcptool: %s: close: %w", ts.cfg.Name, err)
	}
	return nil
}

// callContext returns the context of one call or listing: ctx, bounded by
// Config.CallTimeout and cancelled by Close.
func (ts *Toolset) callContext(ctx context.Context) (context.Context, context.CancelFunc) {
	timeout := ts.cfg.CallTimeout
	if timeout == 0 {
		timeout = DefaultCallTimeout
	}
	cancelTimeout := context.CancelFunc(func() {})
	if timeout > 0 {
		ctx, cancelTimeout = context.WithTimeout(ctx, timeout)
	}
	ctx, cancel := context.WithCancelCause(ctx)
	stop := context.AfterFunc(ts.stop, func() { cancel(ErrClosed) })
	return ctx, func() {
		stop()
		cancel(nil)
		cancelTimeout()
	}
}

// keep reports whether an MCP tool passes the configured filters.
func (ts *Toolset) keep(name string) bool {
	if len(ts.cfg.ToolNames) > 0 && !slices.Contains(ts.cfg.ToolNames, name) {
		return false
	}
	return ts.cfg.Filter == nil || ts.cfg.Filter(name)
}

// newTransport returns the transport of one connection.
func (ts *Toolset) newTransport(ctx context.Context) (mcp.Transport, error) {
	switch {
	case ts.cfg.Transport != nil:
		return ts.cfg.Transport(ctx)
	case ts.cfg.URL != "":
		return &mcp.StreamableClientTransport{Endpoint: ts.cfg.URL, HTTPClient: ts.http}, nil
	}
	// The process must outlive the context of the call that started it, so
	// it is not tied to ctx.
	cmd := exec.Command(ts.cfg.Command, ts.cfg.Args...)
	if len(ts.cfg.Env) > 0 {
		cmd.Env = append(os.Environ(), ts.cfg.Env...)
	}
	cmd.Dir = ts.cfg.Dir
	t := &stdioTransport{stderr: &tailWriter{w: ts.cfg.Stderr}}
	cmd.Stderr = t.stderr
	t.Transport = recordingTransport{&mcp.CommandTransport{Command: cmd, TerminateDuration: ts.cfg.ShutdownTimeout}}
	return t, nil
}

// headerTransport adds fixed headers to every request.
type headerTransport struct {
	base    http.RoundTripper
	headers map[string]string
}

func (t *headerTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	req = req.Clone(req.Context())
	for k, v := range t.headers {
		req.Header.Set(k, v)
	}
	base := t.base
	if base == nil {
		base = http.DefaultTransport
	}
	return base.RoundTrip(req)
}

// CloseIdleConnections lets http.Client.CloseIdleConnections reach the base
// transport.
func (t *headerTransport) CloseIdleConnections() {
	if ci, ok := t.base.(interface{ CloseIdleConnections() }); ok {
		ci.CloseIdleConnections()
	}
}
