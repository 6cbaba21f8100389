// Package mcpserver serves a Loom application as a Model Context Protocol
// (MCP) server over Streamable HTTP, with the MCP Go SDK
// (github.com/modelcontextprotocol/go-sdk).
//
// # The agent as a tool
//
// The server has one tool, named after the application (see [ToolName]),
// described as its root agent is, whose arguments are
//
//	{"request": "what to ask", "session_id": "optional", "answers": {...}}
//
// One call is one Loom invocation. Without session_id the call starts a
// new session; the result names it (structured content "session_id"), and
// a later call that passes it continues that session, with the history of
// every earlier call. The result's text is the agent's final response; its
// structured content is a [Result].
//
// # Pauses
//
// An invocation that pauses (a tool call waiting for the user's approval,
// a graph workflow's request for input, a long-running tool) is surfaced
// through MCP elicitation when the client declared the capability: the
// server asks the client for each answer (a yes/no for an approval, text
// otherwise) and resumes the invocation with them, within the same call.
// A client without elicitation, one that cancels the elicitation, or a
// request for credentials (which form elicitation must not ask for; an
// agent tool's request relaying its child's is one, answered by the
// approval with the credential as payload) gets a
// result with status "pending" that lists the calls waiting; the client
// answers them in a later call with the same session_id and "answers",
// an object from call id to answer: an object is the call's response as
// it is; for an approval true, false or text (yes, y, ok, approve,
// approved, confirm, true approve; anything else rejects); for a workflow's
// input request text, taken as {"result": text}; for any other call text,
// taken as {"response": text}.
//
// # Users and authentication
//
// A session belongs to a user. Behind a server whose Authenticate hook
// binds requests to users (server.Config.Authenticate, with the handler in
// server.Config.Mounts, or this package's [Config.Authenticate]), it is
// the authenticated user, and an MCP session can be used only by the user
// who opened it; otherwise it is UserPrefix + the session id, so that
// whoever knows a session id can continue it, as with ADK's A2A server.
package mcpserver

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"regexp"
	"sync"
	"time"

	"github.com/google/uuid"
	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/loomkit/loom/runner"
	"github.com/loomkit/loom/server"
)

// UserPrefix is prefixed to a session id to name the Loom user of the
// session when no Authenticate hook binds the request to a user.
const UserPrefix = "MCP_USER_"

// Defaults of the Config bounds.
const (
	DefaultMaxRequestBytes    = 4 << 20
	DefaultMaxConcurrentCalls = 64
	DefaultMaxSessions        = 1000
	DefaultCallTimeout        = 10 * time.Minute
	DefaultSessionTimeout     = 30 * time.Minute
	DefaultMaxElicitRounds    = 16
)

// Config configures a Handler.
type Config struct {
	// Runner runs the application served. Required.
	Runner *runner.Runner
	// Version is the server's version in the MCP handshake (default
	// "0.0.1").
	Version string
	// Authenticate, when set, authenticates every request and returns the
	// user it acts for; an error or an empty user is answered with 401.
	// A handler mounted in a server.Server (server.Config.Mounts) needs
	// none: the server's own hook has run, and the handler takes the user
	// it bound (server.AuthenticatedUser).
	Authenticate func(*http.Request) (userID string, err error)
	// MaxRequestBytes bounds request bodies (default
	// DefaultMaxRequestBytes); a larger one gets 413.
	MaxRequestBytes int64
	// MaxConcurrentCalls bounds the tool calls running at once (default
	// DefaultMaxConcurrentCalls); a call beyond it gets an error result.
	MaxConcurrentCalls int
	// MaxSessions bounds the MCP sessions open at once (default
	// DefaultMaxSessions); a client opening one more gets 503.
	MaxSessions int
	// CallTimeout bounds one tool call, elicitation included (default
	// DefaultCallTimeout); the invocation is cancelled when it runs out,
	// and what it committed stays.
	CallTimeout time.Duration
	// SessionTimeout closes an MCP session idle for that long (default
	// DefaultSessionTimeout). Loom sessions are not affected.
	SessionTimeout time.Duration
	// MaxElicitRounds bounds the rounds of elicitation of one call
	// (default DefaultMaxElicitRounds); an invocation that pauses again
	// after them ends the call with a pending result.
	MaxElicitRounds int
	// Logger receives the SDK's logs (default: none).
	Logger *slog.Logger
}

// Handler is an http.Handler serving one application as an MCP server
// over Streamable HTTP, at whatever path it is mounted (it reads no part
// of the path). It is safe for concurrent use.
type Handler struct {
	cfg      Config
	tool     string
	mcp      http.Handler
	calls    chan struct{} // a slot per running call
	sessions chan struct{} // a slot per open MCP session
	counted  sync.Map      // *mcp.ServerSession → true: the sessions holding a slot
	ctx      context.Context
	cancel   context.CancelFunc
}

// New returns a handler for cfg.
func New(cfg Config) (*Handler, error) {
	if cfg.Runner == nil {
		return nil, errors.New("mcpserver: a runner is required")
	}
	if cfg.Version == "" {
		cfg.Version = "0.0.1"
	}
	if cfg.MaxRequestBytes <= 0 {
		cfg.MaxRequestBytes = DefaultMaxRequestBytes
	}
	if cfg.MaxConcurrentCalls <= 0 {
		cfg.MaxConcurrentCalls = DefaultMaxConcurrentCalls
	}
	if cfg.MaxSessions <= 0 {
		cfg.MaxSessions = DefaultMaxSessions
	}
	if cfg.CallTimeout <= 0 {
		cfg.CallTimeout = DefaultCallTimeout
	}
	if cfg.SessionTimeout <= 0 {
		cfg.SessionTimeout = DefaultSessionTimeout
	}
	if cfg.MaxElicitRounds <= 0 {
		cfg.MaxElicitRounds = DefaultMaxElicitRounds
	}
	ctx, cancel := context.WithCancel(context.Background())
	h := &Handler{
		cfg:      cfg,
		tool:     ToolName(cfg.Runner.AppName()),
		calls:    make(chan struct{}, cfg.MaxConcurrentCalls),
		sessions: make(chan struct{}, cfg.MaxSessions),
		ctx:      ctx,
		cancel:   cancel,
	}
	srv := mcp.NewServer(&mcp.Implementation{Name: cfg.Runner.AppName(), Version: cfg.Version}, &mcp.ServerOptions{
		Logger: cfg.Logger,
	})
	srv.AddReceivingMiddleware(h.countSessions)
	desc := cfg.Runner.Agent().Description()
	if desc == "" {
		desc = "The " + cfg.Runner.AppName() + " agent."
	}
	srv.AddTool(&mcp.Tool{
		Name:        h.tool,
		Description: desc + " One call is one turn of a conversation: pass the session_id of an earlier result to continue it.",
		InputSchema: inputSchema,
		Annotations: &mcp.ToolAnnotations{Title: cfg.Runner.AppName(), OpenWorldHint: new(true)},
	}, h.call)
	streamable := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, &mcp.StreamableHTTPOptions{
		Logger:              cfg.Logger,
		SessionTimeout:      cfg.SessionTimeout,
		MaxRequestBodyBytes: cfg.MaxRequestBytes,
	})
	// The SDK binds an MCP session to the user of the request that opened
	// it, and refuses it to any other, when the request carries its token
	// information; that is set from the user Loom authenticated.
	h.mcp = auth.RequireBearerToken(func(_ context.Context, _ string, r *http.Request) (*auth.TokenInfo, error) {
		user, _ := userOf(r.Context())
		return &auth.TokenInfo{UserID: user, Expiration: time.Now().Add(time.Hour)}, nil
	}, nil)(streamable)
	return h, nil
}

// inputSchema is the schema of the tool's arguments.
var inputSchema = json.RawMessage(`{
  "type": "object",
  "properties": {
    "request": {"type": "string", "description": "The message to the agent."},
    "session_id": {"type": "string", "description": "The session to continue, from an earlier result; omit it to start a new session."},
    "answers": {"type": "object", "description": "Answers to the calls a pending result lists, by call id: true or false (or yes/no) for an approval, text or an object otherwise.", "additionalProperties": true}
  }
}`)

// toolNameRE matches what an MCP tool name may hold.
var toolNameRE = regexp.MustCompile(`[^A-Za-z0-9_.-]+`)

// ToolName returns the name of the tool serving the application app: the
// name with every run of characters an MCP tool name cannot hold replaced
// by "_", and at most 64 bytes of it. (The application's name, not its
// root agent's, which may change when the application reloads.)
func ToolName(app string) string {
	n := toolNameRE.ReplaceAllString(app, "_")
	if n == "" {
		n = "agent"
	}
	if len(n) > 64 {
		n = n[:64]
	}
	return n
}

// ServeHTTP implements http.Handler.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if h.cfg.Authenticate != nil {
		user, err := h.cfg.Authenticate(r)
		if err != nil || user == "" {
			http.Error(w, "not authenticated", http.StatusUnauthorized)
			return
		}
		r = r.WithContext(context.WithValue(r.Context(), userKey{}, user))
	}
	if r.Method == http.MethodPost && r.Header.Get("Mcp-Session-Id") == "" && len(h.sessions) >= cap(h.sessions) {
		// A new session (an initialize request) when the bound is reached.
		http.Error(w, "too many MCP sessions; try again later", http.StatusServiceUnavailable)
		return
	}
	// The authenticated user becomes the SDK's token information (see
	// New), through the SDK's bearer-token middleware; the token itself is
	// not read, authentication having been done.
	// Close ends every request, the long-lived event streams included.
	ctx, cancel := context.WithCancel(r.Context())
	defer cancel()
	stop := context.AfterFunc(h.ctx, cancel)
	defer stop()
	r = r.Clone(ctx)
	r.Header.Set("Authorization", "Bearer loom")
	h.mcp.ServeHTTP(w, r)
}

type userKey struct{}

// userOf returns the user a request was authenticated as: by
// Config.Authenticate or by the server.Server the handler is mounted in.
func userOf(ctx context.Context) (string, bool) {
	if u, ok := ctx.Value(userKey{}).(string); ok {
		return u, true
	}
	return server.AuthenticatedUser(ctx)
}

// countSessions takes a slot of the session bound when a client
// initializes an MCP session, before it is answered, and gives it back when
// the session ends: initialize requests racing past ServeHTTP's early check
// cannot open more sessions than MaxSessions.
func (h *Handler) countSessions(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		ss, ok := req.GetSession().(*mcp.ServerSession)
		if method != "initialize" || !ok {
			return next(ctx, method, req)
		}
		if _, counted := h.counted.LoadOrStore(ss, true); !counted {
			select {
			case h.sessions <- struct{}{}:
			default:
				h.counted.Delete(ss)
				return nil, errTooManySessions
			}
			go func() {
				_ = ss.Wait()
				h.counted.Delete(ss)
				<-h.sessions
			}()
		}
		return next(ctx, method, req)
	}
}

// errTooManySessions refuses an initialize request beyond MaxSessions.
var errTooManySessions = errors.New("too many MCP sessions; try again later")

// Close cancels the running calls, whose invocations stop as when a
// client disconnects, and ends the requests in progress, the event
// streams of open MCP sessions included, so that an http.Server's Shutdown
// need not wait for them. It is meant for a server's shutdown and always
// returns nil.
func (h *Handler) Close() error {
	h.cancel()
	return nil
}

// Tool returns the name of the handler's tool.
func (h *Handler) Tool() string { return h.tool }

// errorResult is a tool result reporting a failure the client can act on.
func errorResult(format string, args ...any) *mcp.CallToolResult {
	return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: fmt.Sprintf(format, args...)}}}
}

// newSessionID returns the id of a new Loom session.
func newSessionID() string { return uuid.NewString() }
