// Package a2aserver serves a Loom application over the Agent2Agent (A2A)
// protocol, with the A2A project's Go SDK (github.com/a2aproject/a2a-go):
// an agent card at the well-known path and the JSON-RPC methods
// message/send, message/stream, tasks/get, tasks/cancel and
// tasks/resubscribe.
//
// # Tasks and sessions
//
// An A2A context is a Loom session (the context id is the session id, of
// the user "A2A_USER_" + context id, as ADK does; behind a server whose
// Config.Authenticate binds requests to users, of the authenticated user,
// and a task can then be read, cancelled or continued only by the user who
// started it); each task is one Loom invocation. The task's status follows the invocation: "working" with a
// message per committed event, an artifact update per final response text,
// then "completed", "failed" (an error event or a run error), "canceled"
// (tasks/cancel cancels the invocation) or "input-required" when the
// invocation pauses for a confirmation or a long-running tool
// ("auth-required" when it pauses only for credentials, an agent tool's
// request relaying its child's included: agent.AsksCredential). That status
// message lists the pausing function calls as data parts; the client's next
// message on the task answers them and resumes the invocation (see
// [Handler] for how a reply is read). A reply carrying credentials is kept
// in the task's history as the session log keeps it, without them.
//
// A task runs detached from the request that started it: a client that
// disconnects loses nothing, since the runner keeps committing, and it can
// read the task with tasks/get or follow it with tasks/resubscribe.
package a2aserver

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"time"

	"github.com/a2aproject/a2a-go/a2a"
	"github.com/a2aproject/a2a-go/a2asrv"
	"github.com/a2aproject/a2a-go/a2asrv/limiter"

	"github.com/loomkit/loom/agent"
	"github.com/loomkit/loom/runner"
	"github.com/loomkit/loom/server"
	"github.com/loomkit/loom/tool"
)

// CardPath is the agent card's path below the handler's base path.
const CardPath = a2asrv.WellKnownAgentCardPath

// LegacyCardPath is the card's path before version 0.3 of the protocol,
// which a2a-python clients and ADK's samples still fetch; the handler
// serves the same card there.
const LegacyCardPath = "/.well-known/agent.json"

// cardPath returns the card path r.URL.Path ends with, if any.
func cardPath(r *http.Request) (string, bool) {
	for _, p := range []string{CardPath, LegacyCardPath} {
		if strings.HasSuffix(r.URL.Path, p) {
			return p, true
		}
	}
	return "", false
}

// Defaults of the Config bounds.
const (
	DefaultMaxTasks           = 10000
	DefaultMaxTaskBytes       = 64 << 20
	DefaultMaxConcurrentTasks = 64
	DefaultMaxRequestBytes    = 4 << 20
)

// Config configures a Handler.
type Config struct {
	// Runner runs the application served. Required.
	Runner *runner.Runner
	// URL is the public URL of the JSON-RPC endpoint, published in the
	// agent card. Empty: the card names the URL it was fetched from, minus
	// CardPath.
	URL string
	// Version is the agent's version in the card (default "0.0.1").
	Version string
	// MaxTasks bounds the tasks kept for tasks/get (default
	// DefaultMaxTasks); the oldest finished ones are dropped first.
	MaxTasks int
	// MaxTaskBytes bounds the memory of the tasks kept, counted as the
	// size of their JSON (default DefaultMaxTaskBytes), as MaxTasks bounds
	// their number; the task last saved is kept even if it alone is
	// larger.
	MaxTaskBytes int64
	// MaxConcurrentTasks bounds the tasks running at once (default
	// DefaultMaxConcurrentTasks); a message beyond it is refused.
	MaxConcurrentTasks int
	// MaxRequestBytes bounds JSON-RPC request bodies (default
	// DefaultMaxRequestBytes).
	MaxRequestBytes int64
	// StreamWriteTimeout bounds the writing of each event of a
	// message/stream or tasks/resubscribe stream (default
	// server.DefaultStreamWriteTimeout, as for the API server's /run_sse;
	// negative for none): a client that does not take an event within it
	// is cut off, and what its request held is freed, while the task runs
	// on, as when a client disconnects. It is a write deadline on the
	// connection, renewed for every write (see server.StreamWriter), so
	// the time between events and the length of a stream are not limited;
	// other responses are not limited.
	StreamWriteTimeout time.Duration
	// Logger receives the SDK's logs (default slog.Default()).
	Logger *slog.Logger
}

// Handler is an http.Handler serving one application over A2A. It serves
// GET CardPath (and LegacyCardPath) and JSON-RPC on POST to any other path; mount it under a
// prefix with http.StripPrefix. It is safe for concurrent use.
//
// The reply to an input-required task answers every pausing call of the
// status message: a data part with "adk_type": "function_response" is
// taken as the answer to the call of its id (ADK's own form); otherwise a
// plain data part is the response object of each call, and text answers a
// confirmation (yes, y, ok, approve, approved, confirm, true: approved;
// anything else: rejected), a workflow node's input request
// (adk_request_input) as the response {"result": text}, as Loom's other
// clients send it, or, for another call, is the response
// {"response": text}. A reply that answers nothing (neither text nor
// data, or an explicit response to a call the task does not wait for) is
// refused with invalid params and leaves the task paused.
type Handler struct {
	cfg   Config
	rpc   http.Handler
	exec  *executor
	tools []skillSource
}

type skillSource struct {
	id, name, desc string
	tags           []string
}

// New returns a handler for cfg.
func New(cfg Config) (*Handler, error) {
	if cfg.Runner == nil {
		return nil, errors.New("a2aserver: a runner is required")
	}
	if cfg.Version == "" {
		cfg.Version = "0.0.1"
	}
	if cfg.MaxTasks <= 0 {
		cfg.MaxTasks = DefaultMaxTasks
	}
	if cfg.MaxTaskBytes <= 0 {
		cfg.MaxTaskBytes = DefaultMaxTaskBytes
	}
	if cfg.MaxConcurrentTasks <= 0 {
		cfg.MaxConcurrentTasks = DefaultMaxConcurrentTasks
	}
	if cfg.MaxRequestBytes <= 0 {
		cfg.MaxRequestBytes = DefaultMaxRequestBytes
	}
	if cfg.StreamWriteTimeout == 0 {
		cfg.StreamWriteTimeout = server.DefaultStreamWriteTimeout
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	exec := newExecutor(cfg.Runner)
	store := newTaskStore(cfg.MaxTasks, cfg.MaxTaskBytes)
	rh := a2asrv.NewHandler(exec,
		a2asrv.WithTaskStore(store),
		a2asrv.WithConcurrencyConfig(limiter.ConcurrencyConfig{MaxExecutions: cfg.MaxConcurrentTasks}),
		a2asrv.WithLogger(cfg.Logger),
	)
	return &Handler{cfg: cfg, rpc: a2asrv.NewJSONRPCHandler(settling{RequestHandler: rh, store: store}), exec: exec, tools: skills(cfg.Runner.Agent())}, nil
}

// ServeHTTP implements http.Handler.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if card, ok := cardPath(r); ok {
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			w.Header().Set("Allow", "GET, HEAD")
			http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
			return
		}
		a2asrv.NewStaticAgentCardHandler(h.Card(h.publicURL(r, card))).ServeHTTP(w, r)
		return
	}
	if r.Method != http.MethodPost {
		w.Header().Set("Allow", "POST")
		http.Error(w, "A2A JSON-RPC requests are POSTed; the agent card is at "+CardPath, http.StatusMethodNotAllowed)
		return
	}
	r.Body = http.MaxBytesReader(w, r.Body, h.cfg.MaxRequestBytes)
	sw := &streamBound{ResponseWriter: w, ctx: r.Context(), timeout: h.cfg.StreamWriteTimeout}
	defer sw.close()
	h.rpc.ServeHTTP(sw, r)
}

// Close cancels the invocations of the running tasks; they end as
// canceled. It is meant for a server's shutdown and always returns nil.
func (h *Handler) Close() error {
	h.exec.cancelAll()
	return nil
}

// publicURL is the JSON-RPC URL to publish for a request r of the card at
// cardPath.
func (h *Handler) publicURL(r *http.Request, cardPath string) string {
	if h.cfg.URL != "" {
		return h.cfg.URL
	}
	scheme := "http"
	if r.TLS != nil {
		scheme = "https"
	}
	path := r.URL.Path
	if r.RequestURI != "" && strings.HasPrefix(r.RequestURI, "/") {
		path, _, _ = strings.Cut(r.RequestURI, "?") // the path before any StripPrefix
	}
	path = strings.TrimSuffix(path, cardPath)
	if path == "" {
		path = "/"
	}
	return scheme + "://" + r.Host + path
}

// Card returns the agent card of the application, publishing url as its
// JSON-RPC endpoint. Its skills are the root agent, then every other agent
// of the tree and every tool of an agent, in tree order.
func (h *Handler) Card(url string) *a2a.AgentCard {
	root := h.cfg.Runner.Agent()
	desc := root.Description()
	if desc == "" {
		desc = "The " + h.cfg.Runner.AppName() + " agent."
	}
	card := &a2a.AgentCard{
		Name:               h.cfg.Runner.AppName(),
		Description:        desc,
		URL:                url,
		PreferredTransport: a2a.TransportProtocolJSONRPC,
		ProtocolVersion:    "0.3.0",
		Version:            h.cfg.Version,
		Capabilities:       a2a.AgentCapabilities{Streaming: true},
		DefaultInputModes:  []string{"text/plain"},
		DefaultOutputModes: []string{"text/plain"},
		Skills:             []a2a.AgentSkill{},
	}
	for _, s := range h.tools {
		card.Skills = append(card.Skills, a2a.AgentSkill{ID: s.id, Name: s.name, Description: s.desc, Tags: s.tags})
	}
	return card
}

// toolLister is implemented by agents with tools (LLM agents).
type toolLister interface{ Tools() []tool.Tool }

// skills lists the skills of the tree under root: its agents and their
// tools, in tree order.
func skills(root agent.Agent) []skillSource {
	var out []skillSource
	seen := map[string]bool{}
	var walk func(a agent.Agent, depth int)
	walk = func(a agent.Agent, depth int) {
		tags := []string{"agent"}
		if depth > 0 {
			tags = append(tags, "sub-agent")
		}
		desc := a.Description()
		if desc == "" {
			desc = "The " + a.Name() + " agent."
		}
		out = append(out, skillSource{id: a.Name(), name: a.Name(), desc: desc, tags: tags})
		if tl, ok := a.(toolLister); ok {
			for _, t := range tl.Tools() {
				if t == nil {
					continue
				}
				id := a.Name() + "." + t.Name()
				if seen[id] {
					continue
				}
				seen[id] = true
				desc := t.Description()
				if desc == "" {
					desc = fmt.Sprintf("The %s tool of %s.", t.Name(), a.Name())
				}
				out = append(out, skillSource{id: id, name: t.Name(), desc: desc, tags: []string{"tool", a.Name()}})
			}
		}
		for _, sub := range agent.SubAgents(a) {
			walk(sub, depth+1)
		}
	}
	walk(root, 0)
	return out
}

// streamBound passes a response through, and once it turns out to be an
// event stream (the JSON-RPC answer to message/stream or
// tasks/resubscribe), bounds each of its writes with a
// server.StreamWriter.
type streamBound struct {
	http.ResponseWriter
	ctx     context.Context
	timeout time.Duration
	sw      *server.StreamWriter // once the stream started
}

// WriteHeader implements http.ResponseWriter.
func (b *streamBound) WriteHeader(code int) {
	if b.sw == nil && strings.HasPrefix(b.Header().Get("Content-Type"), "text/event-stream") {
		b.sw = server.NewStreamWriter(b.ctx, b.ResponseWriter, b.timeout)
	}
	b.ResponseWriter.WriteHeader(code)
}

// Write implements http.ResponseWriter.
func (b *streamBound) Write(p []byte) (int, error) {
	if b.sw != nil {
		return b.sw.Write(p)
	}
	return b.ResponseWriter.Write(p)
}

// Flush implements http.Flusher (the SDK's event streams need it).
func (b *streamBound) Flush() {
	if b.sw != nil {
		b.sw.Flush()
		return
	}
	_ = http.NewResponseController(b.ResponseWriter).Flush()
}

// Unwrap returns the ResponseWriter written to, for
// http.ResponseController.
func (b *streamBound) Unwrap() http.ResponseWriter { return b.ResponseWriter }

func (b *streamBound) close() {
	if b.sw != nil {
		b.sw.Close()
	}
}
