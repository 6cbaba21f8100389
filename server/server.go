// Package server serves Loom applications over ADK's REST and SSE API, so
// that ADK clients and the ADK web UI can talk to a Loom program unchanged.
//
// [New] returns a [Server], an [http.Handler]; the caller owns the listener
// and the [http.Server]:
//
//	srv, err := server.New(server.Config{Apps: []*runner.Runner{app}})
//	if err != nil { ... }
//	hs := &http.Server{Addr: "127.0.0.1:8000", Handler: srv}
//	hs.RegisterOnShutdown(func() { srv.Close() })
//	err = hs.ListenAndServe()
//
// # Routes
//
// Every route of ADK's api_server is served with ADK's paths, status codes
// and JSON shapes: health and version, the app list and app info, session
// create/list/get/patch/delete, artifact list/read/versions/delete, /run (a
// JSON array of events), /run_sse (a text/event-stream), /config/telemetry
// and the debug trace routes (answered by [Config.Traces], empty without
// one). Requests accept camelCase and snake_case keys; a JSON null is treated
// as an absent field. Errors are {"detail": "..."} with a fitting status; a
// model provider's failure gets a gateway's status (429 for its rate limit,
// 503 when overloaded, 504 on a timeout, 502 otherwise).
//
// The trace routes read only the traces of one user's sessions: the user
// named by the user_id query parameter (or bound by [Config.Authenticate]),
// in the {app} of the path or the app_name parameter. Without a user the
// session route answers an empty list and the event route 404, as it does
// for an event of another user's session; except in the development
// setting (no Config.Authenticate, only loopback names in
// Config.AllowedHosts, a client on a loopback address), where a request
// naming no user, as ADK's web UI sends them, reads the traces of any
// user.
//
// # Exposure
//
// The Host header must be a loopback name or one of [Config.AllowedHosts]
// (else 421), which defeats DNS rebinding; browsers are held to
// [Config.AllowedOrigins]. [Config.Authenticate] binds each request to a
// user, who may reach only their own sessions (403 otherwise) and their own
// eval sets and results (others' are not found); app-scoped state from a
// client is written only as [Config.AuthorizeAppState] allows (under
// Authenticate, by default, not at all). Eval runs are bounded by
// [Config.EvalLimits]. Bodies are
// limited in size, nesting depth and read time, and app, user and session
// ids to 128 bytes without control characters.
//
// Three routes go beyond ADK:
//
//	POST /apps/{app}/users/{user}/sessions/{sid}/cancel  → {"cancelled": n}
//
// cancels the invocations running in that session;
//
//	GET /apps/{app}/users/{user}/sessions/{sid}/usage  → {"total": {...}, "turns": [...]}
//
// reports the session's token usage and cost, in total and per invocation
// ([cost.Session] over its stored events, priced by [Config.Prices]); and every /run_sse
// stream that ends normally ends with the SSE comment line ": done" followed
// by a blank line. Comment lines are skipped by EventSource and by ADK's own
// clients, which read only "data:" lines, while raw clients can use the
// marker to tell a complete stream from a cut connection.
//
// # Server-sent events
//
// Each event is one frame "data: <Event JSON>\n\n", written with a single
// Write and flushed. With "streaming": true partial events are forwarded as
// they arrive; with false only complete events. An event carrying both
// content and a non-empty artifactDelta is sent as two frames with the same
// id: first the content with an empty artifactDelta, then the actions
// without content. An error before the first frame is an ordinary JSON error
// response; after it, the stream ends with the frame
// data: {"error": "<message>"}.
//
// # Cancellation and shutdown
//
// An invocation runs under its request's context: a client that disconnects
// cancels it, as in ADK, unless [Config.KeepRunningOnDisconnect] is set. A
// cancelled invocation is closed in the session as the runner closes every
// aborted invocation (its open calls answered with INVOCATION_ABORTED
// responses, see package runner), so the session's next turn works. The
// cancel route above cancels it on demand (a /run_sse client
// then gets a 200 stream ending with the error frame "Invocation
// cancelled", even before any event; a /run client gets 409), and [Server.Close]
// cancels every invocation in flight and refuses new ones, which lets
// [http.Server.Shutdown] finish promptly when open streams would otherwise
// keep it waiting.
package server

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"log/slog"
	"net/http"
	"net/url"
	"runtime"
	"slices"
	"strings"
	"sync"
	"time"

	"google.golang.org/genai"

	"github.com/loomkit/loom/agent"
	"github.com/loomkit/loom/cost"
	"github.com/loomkit/loom/eval"
	"github.com/loomkit/loom/event"
	"github.com/loomkit/loom/model"
	"github.com/loomkit/loom/runner"
)

// DefaultMaxRequestBytes is the request body limit used when
// Config.MaxRequestBytes is zero.
const DefaultMaxRequestBytes = 32 << 20

// Config configures a Server.
type Config struct {
	// Apps are the applications served, one runner each, addressed by the
	// runner's app name. At least one is required; names must be unique.
	// Sessions and artifacts of an app are those of its runner.
	Apps []*runner.Runner
	// AllowedOrigins lists the browser origins ("https://ui.example.com")
	// allowed to call the API cross-origin; "*" allows every origin. Write
	// requests from any other foreign origin are refused with 403.
	AllowedOrigins []string
	// MaxRequestBytes limits request bodies (default DefaultMaxRequestBytes;
	// larger bodies get 413).
	MaxRequestBytes int64
	// Version is reported by GET /version (default "dev").
	Version string
	// Logger receives server-side failures (default slog.Default()).
	Logger *slog.Logger
	// Traces answers the debug trace routes; nil answers them with empty
	// results.
	Traces TraceSource
	// Prices price the token usage the session usage route reports; a
	// model without a price has its tokens reported and no cost.
	Prices cost.Prices
	// RefuseSessionHistory refuses (403) requests that create a session
	// with events. Histories a client supplies are checked and stored as
	// data that can never pause or resume a call (runner.CreateSession);
	// deployments that have no use for them can refuse them outright.
	RefuseSessionHistory bool
	// AllowedHosts lists the host names ("api.example.com", any port) or
	// host:port pairs accepted in the Host header besides the loopback
	// names localhost, 127.0.0.1 and [::1]; "*" accepts every host. Other
	// hosts get 421, which defeats DNS rebinding. A server reached under
	// another name or address (listening on 0.0.0.0, behind a proxy) must
	// list it.
	AllowedHosts []string
	// Authenticate, when set, authenticates every request but GET /health
	// and returns the user it acts for; an error (or an empty user) is
	// answered with 401. A route naming a user (in its path, a run
	// request's userId, the user_id query parameter of the trace routes,
	// the sessionInput.userId of an eval case written or run) must name
	// that user, or gets 403; a run request without userId runs as that
	// user, and so does an eval case without one.
	//
	// Eval sets and results then belong to the user: every evaluation
	// route sees only the caller's own, another user's set or result is
	// answered as if it did not exist (404; a run of it 400, as of any
	// missing set), and users' ids do not collide (each may have a set
	// "smoke"). Evals keeps them under the caller's ids with a prefix
	// derived from a hash of the user id ("u", 24 hex digits, "_"), which
	// clients never see; a set id may therefore be at most 174 bytes.
	// Sets and results stored without the prefix (written while the server
	// ran without Authenticate, or straight to the store) are reached by
	// no authenticated user, and a server without Authenticate sees every
	// user's under their prefixed ids.
	Authenticate func(*http.Request) (userID string, err error)
	// AuthorizeAppState decides whether a request may write app-scoped
	// state: keys starting with "app:", which every user of the app reads.
	// It is asked, with the user the write acts for and the app: keys
	// (sorted), wherever state from a client enters: a session's initial
	// state and the state deltas of a history it is created with, a PATCH
	// of its state, a run's stateDelta, and an eval case's initial state
	// when the case is written and when it is run. An error refuses the
	// request with 403 (its text in the detail) and nothing is written.
	// When it is nil, app: writes are refused (403) if Authenticate is set,
	// since one user would write what every other user reads, and allowed
	// otherwise, as ADK allows them.
	AuthorizeAppState func(r *http.Request, user string, keys []string) error
	// MaxJSONDepth limits the nesting of JSON request bodies (default
	// DefaultMaxJSONDepth; deeper bodies get 400).
	MaxJSONDepth int
	// BodyReadTimeout bounds the reading of a request body (default
	// DefaultBodyReadTimeout; negative for none): a client that trickles
	// its body in is cut off with 400. It is a read deadline on the
	// connection, lifted once the body is read, so responses (event
	// streams included) may take as long as they need.
	BodyReadTimeout time.Duration
	// StreamWriteTimeout bounds the writing of each frame of a /run_sse
	// event stream (default DefaultStreamWriteTimeout; negative for none):
	// a client that does not take a frame within it is cut off, and its
	// invocation stops as if the client had disconnected (what it
	// committed stays). It is a write deadline on the connection, renewed
	// for every frame, so the time between frames and the length of a
	// stream are not limited. Cancelling the invocation (the cancel route,
	// Close, the client leaving) also ends a write in progress.
	StreamWriteTimeout time.Duration
	// KeepRunningOnDisconnect lets an invocation started by /run or
	// /run_sse run on to its end, committing its events, when its client
	// disconnects (or is cut off by StreamWriteTimeout); the cancel route
	// and Close still stop it. The default is ADK's: a disconnect aborts
	// the invocation, whose open calls are then answered with
	// INVOCATION_ABORTED responses (see package runner).
	KeepRunningOnDisconnect bool
	// Evals keeps the eval sets and results the evaluation routes serve
	// (see server/eval.go); without it those routes answer 501.
	Evals eval.Store
	// EvalLimits bound eval sets, runs and results, and the runs going on
	// at once, in all and per user (see EvalLimits for the defaults).
	EvalLimits EvalLimits
	// EvalJudge is the judge model of LLM-judged metrics in eval runs, and
	// the simulated user of scenario cases. Optional.
	EvalJudge model.LLM
	// EvalMetrics gives the scorers of the metrics eval runs name: ADK's
	// and custom ones registered in Go. Nil means [eval.NewRegistry].
	EvalMetrics *eval.Registry
	// Mounts serves more handlers under path prefixes ("/a2a/assistant"
	// serves that path and every path below it), behind the same host,
	// origin and body-size guards and Authenticate as the API routes. The
	// handler sees the full request path. Prefixes start with "/" and must
	// not be "/" itself or overlap the API's routes.
	Mounts map[string]http.Handler
	// Status, when set, reports where an app comes from and why its latest
	// version failed to load, for apps whose agents can change while the
	// server runs (runner.Config.Refresh). GET /list-apps?detailed=true
	// and app-info show it as the fields "source" and "loadError".
	Status func(app string) AppStatus
	// AppFiles, when set, gives ADK's agent builder the YAML files of apps
	// defined by files (see AppFiles): they can be read, and written in
	// the development setting only. Without it the builder reads empty
	// files and cannot save.
	AppFiles AppFiles
	// Invoker, when set, runs the invocations of the run routes instead
	// of the apps' runners in this process (durable/temporal.Client runs
	// them on Temporal workers), and the cancel route cancels them through
	// it as well.
	Invoker Invoker
}

// AppStatus is what Config.Status reports of an app.
type AppStatus struct {
	// Source names where the app is defined, such as the path of its
	// config file; empty for an app compiled into the program.
	Source string `json:"source,omitempty"`
	// LoadError is why the latest version of the app's definition failed
	// to load, while the previous version keeps serving; empty when the
	// latest version is the one serving.
	LoadError string `json:"loadError,omitempty"`
	// Language is what /list-apps?detailed=true reports the app is written
	// in, by ADK's names: "yaml" for an app defined by an Agent Config
	// file. Empty means "go", an app compiled into the program.
	Language string `json:"-"`
}

// Invoker runs invocations outside the server's process. Run behaves as
// runner.Runner.Run of app: it yields the invocation's committed events as
// they are committed; cancelling ctx stops the streaming (the client left,
// or the server shuts down), not the invocation. Cancel stops the
// invocations of a session.
type Invoker interface {
	Run(ctx context.Context, app *runner.Runner, userID, sessionID string, msg *genai.Content, opts *runner.RunOptions) iter.Seq2[*event.Event, error]
	Cancel(ctx context.Context, app *runner.Runner, userID, sessionID string) error
}

// DefaultBodyReadTimeout is the body read limit used when
// Config.BodyReadTimeout is zero.
const DefaultBodyReadTimeout = time.Minute

// DefaultStreamWriteTimeout is the limit on writing one event-stream frame
// used when Config.StreamWriteTimeout is zero.
const DefaultStreamWriteTimeout = 30 * time.Second

// DefaultMaxJSONDepth is the nesting limit of JSON request bodies used when
// Config.MaxJSONDepth is zero.
const DefaultMaxJSONDepth = 64

// Server serves the ADK HTTP API for a set of applications. It is an
// http.Handler and is safe for concurrent use.
type Server struct {
	cfg     Config
	apps    map[string]*runner.Runner
	names   []string
	log     *slog.Logger
	mux     *http.ServeMux
	handler http.Handler
	runs    runTracker
	// evalSlots counts the eval runs in progress (Config.EvalLimits).
	evalSlots evalSlots
}

// New returns a server for cfg.
func New(cfg Config) (*Server, error) {
	if len(cfg.Apps) == 0 {
		return nil, errors.New("server: at least one app is required")
	}
	s := &Server{cfg: cfg, apps: map[string]*runner.Runner{}, log: cfg.Logger, mux: http.NewServeMux()}
	for _, a := range cfg.Apps {
		if a == nil {
			return nil, errors.New("server: nil app runner")
		}
		name := a.AppName()
		if _, dup := s.apps[name]; dup {
			return nil, fmt.Errorf("server: duplicate app name %q", name)
		}
		s.apps[name] = a
		s.names = append(s.names, name)
	}
	slices.Sort(s.names)
	if s.log == nil {
		s.log = slog.Default()
	}
	if s.cfg.MaxRequestBytes <= 0 {
		s.cfg.MaxRequestBytes = DefaultMaxRequestBytes
	}
	if s.cfg.Version == "" {
		s.cfg.Version = "dev"
	}
	if s.cfg.BodyReadTimeout == 0 {
		s.cfg.BodyReadTimeout = DefaultBodyReadTimeout
	}
	if s.cfg.StreamWriteTimeout == 0 {
		s.cfg.StreamWriteTimeout = DefaultStreamWriteTimeout
	}
	if s.cfg.MaxJSONDepth <= 0 {
		s.cfg.MaxJSONDepth = DefaultMaxJSONDepth
	}
	s.cfg.EvalLimits.setDefaults()
	s.routes()
	if err := s.mount(); err != nil {
		return nil, err
	}
	hosts, err := s.hostGuard()
	if err != nil {
		return nil, err
	}
	origins, err := s.originGuard()
	if err != nil {
		return nil, err
	}
	s.handler = chain(http.HandlerFunc(s.serveMux), hosts, origins, s.limitBody)
	return s, nil
}

// ServeHTTP implements http.Handler.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	s.handler.ServeHTTP(w, r)
}

// Close cancels every invocation in flight and makes new run requests fail
// with 503. Other routes keep working. It is meant to be registered with
// http.Server.RegisterOnShutdown, so that open event streams end when the
// server shuts down, those whose client has stopped reading included. It
// always returns nil.
func (s *Server) Close() error {
	s.runs.close()
	return nil
}

// apiFunc is a handler that reports failure by returning an error, which is
// turned into a response by serveError.
type apiFunc func(w http.ResponseWriter, r *http.Request) error

func (s *Server) handle(pattern string, fn apiFunc) {
	s.mux.HandleFunc(pattern, func(w http.ResponseWriter, r *http.Request) {
		r, err := s.authenticate(r)
		if err == nil {
			err = checkPathIDs(r)
		}
		if err == nil {
			err = fn(w, r)
		}
		if err != nil {
			s.serveError(w, r, err)
		}
	})
}

func (s *Server) routes() {
	const (
		sessions = "/apps/{app}/users/{user}/sessions"
		sess     = sessions + "/{sid}"
		arts     = sess + "/artifacts"
	)
	s.handle("GET /health", func(w http.ResponseWriter, r *http.Request) error {
		return writeJSON(w, http.StatusOK, map[string]string{"status": "ok"})
	})
	s.handle("GET /version", s.version)
	s.handle("GET /list-apps", s.listApps)
	s.handle("GET /apps/{app}/app-info", s.appInfo)
	s.handle("GET /config/telemetry", func(w http.ResponseWriter, r *http.Request) error {
		return writeJSON(w, http.StatusOK, map[string]bool{"telemetry": false})
	})

	s.handle("POST "+sessions, s.createSession)
	s.handle("GET "+sessions, s.listSessions)
	s.handle("POST "+sess, s.createSessionLegacy)
	s.handle("GET "+sess, s.getSession)
	s.handle("PATCH "+sess, s.patchSession)
	s.handle("DELETE "+sess, s.deleteSession)
	s.handle("POST "+sess+"/cancel", s.cancelSession)
	s.handle("POST "+sess+"/fork", s.forkSession)
	s.handle("GET "+sess+"/usage", s.sessionUsage)

	s.handle("GET "+arts, s.listArtifacts)
	s.handle("GET "+arts+"/{name}", s.loadArtifact)
	s.handle("GET "+arts+"/{name}/versions", s.artifactVersions)
	s.handle("GET "+arts+"/{name}/versions/{version}", s.loadArtifact)
	s.handle("DELETE "+arts+"/{name}", s.deleteArtifact)

	s.handle("POST /run", s.run)
	s.handle("POST /run_sse", s.runSSE)

	s.handle("GET /dev/apps/{app}/build_graph", s.buildGraph)
	s.handle("GET /dev/apps/{app}/build_graph_image", s.buildGraphImage)
	s.handle("GET /dev/apps/{app}/builder", s.builderRead)
	s.handle("POST /dev/apps/{app}/builder/save", s.builderSave)
	s.handle("POST /dev/apps/{app}/builder/cancel", s.builderCancel)
	s.handle("GET /dev/apps/{app}/debug/trace/session/{sid}", s.traceSession)
	s.handle("GET /dev/apps/{app}/debug/trace/{eventID}", s.traceEvent)
	s.handle("GET /debug/trace/session/{sid}", s.traceSession)
	s.handle("GET /debug/trace/{eventID}", s.traceEvent)
	s.registerEvalRoutes()
}

// mount registers Config.Mounts.
func (s *Server) mount() (err error) {
	for prefix, h := range s.cfg.Mounts {
		p := strings.TrimSuffix(prefix, "/")
		if !strings.HasPrefix(p, "/") || h == nil {
			return fmt.Errorf("server: bad mount %q: want a path below / and a handler", prefix)
		}
		for _, m := range []string{http.MethodGet, http.MethodPost} {
			if _, taken := s.mux.Handler(&http.Request{Method: m, Host: "localhost", URL: &url.URL{Path: p}}); taken != "" {
				return fmt.Errorf("server: mount %q overlaps the route %q", prefix, taken)
			}
		}
		serve := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			r, err := s.authenticate(r)
			if err != nil {
				s.serveError(w, r, err)
				return
			}
			h.ServeHTTP(w, r)
		})
		func() {
			defer func() { // the mux panics on a pattern that conflicts with a route
				if v := recover(); v != nil {
					err = fmt.Errorf("server: mount %q: %v", prefix, v)
				}
			}()
			s.mux.Handle(p, serve)
			s.mux.Handle(p+"/", serve)
		}()
		if err != nil {
			return err
		}
	}
	return nil
}

// serveMux dispatches to the routes. Requests no route matches get ADK's
// JSON error body instead of the mux's plain-text one.
func (s *Server) serveMux(w http.ResponseWriter, r *http.Request) {
	if _, pattern := s.mux.Handler(r); pattern == "" {
		w = &jsonMiss{ResponseWriter: w}
	}
	s.mux.ServeHTTP(w, r)
}

// jsonMiss rewrites the mux's 404 and 405 replies as {"detail": ...}.
type jsonMiss struct {
	http.ResponseWriter
	swallow bool
}

func (m *jsonMiss) WriteHeader(code int) {
	if code == http.StatusNotFound || code == http.StatusMethodNotAllowed {
		m.swallow = true
		detail := "Not Found"
		if code == http.StatusMethodNotAllowed {
			detail = "Method Not Allowed"
		}
		m.ResponseWriter.Header().Del("X-Content-Type-Options")
		_ = writeJSON(m.ResponseWriter, code, errorBody{detail})
		return
	}
	m.ResponseWriter.WriteHeader(code)
}

func (m *jsonMiss) Write(b []byte) (int, error) {
	if m.swallow {
		return len(b), nil
	}
	return m.ResponseWriter.Write(b)
}

func (m *jsonMiss) Unwrap() http.ResponseWriter { return m.ResponseWriter }

// app returns the runner of the request's {app}.
func (s *Server) app(name string) (*runner.Runner, error) {
	if a := s.apps[name]; a != nil {
		return a, nil
	}
	return nil, &detailError{detail: "App not found: " + name, err: errAppNotFound}
}

func (s *Server) version(w http.ResponseWriter, r *http.Request) error {
	return writeJSON(w, http.StatusOK, map[string]string{
		"version":          s.cfg.Version,
		"language":         "go",
		"language_version": strings.TrimPrefix(runtime.Version(), "go"),
	})
}

// appSummary is one entry of GET /list-apps?detailed=true.
type appSummary struct {
	Name          string `json:"name"`
	RootAgentName string `json:"rootAgentName"`
	Description   string `json:"description"`
	Language      string `json:"language"`
	AppStatus
}

// summary describes an app, refreshing its agents first (see
// runner.Config.Refresh) so that the description and status are current.
func (s *Server) summary(r *http.Request, name string) appSummary {
	root := s.apps[name].Refresh(r.Context()).Root()
	sum := appSummary{Name: name, RootAgentName: root.Name(), Description: root.Description(), Language: "go"}
	if s.cfg.Status != nil {
		sum.AppStatus = s.cfg.Status(name)
		if sum.AppStatus.Language != "" {
			sum.Language = sum.AppStatus.Language
		}
	}
	return sum
}

func (s *Server) listApps(w http.ResponseWriter, r *http.Request) error {
	if detailed, _ := parseBool(r.URL.Query().Get("detailed")); detailed {
		apps := make([]appSummary, len(s.names))
		for i, n := range s.names {
			apps[i] = s.summary(r, n)
		}
		return writeJSON(w, http.StatusOK, map[string]any{"apps": apps})
	}
	return writeJSON(w, http.StatusOK, s.names)
}

// agentInfo describes one agent of an app's tree.
type agentInfo struct {
	Name        string      `json:"name"`
	Description string      `json:"description"`
	SubAgents   []agentInfo `json:"subAgents"`
}

func (s *Server) appInfo(w http.ResponseWriter, r *http.Request) error {
	name := r.PathValue("app")
	a, err := s.app(name)
	if err != nil {
		return err
	}
	info := struct {
		appSummary
		RootAgent agentInfo `json:"rootAgent"`
	}{s.summary(r, name), describe(a.Tree().Root())}
	return writeJSON(w, http.StatusOK, info)
}

func describe(a agent.Agent) agentInfo {
	info := agentInfo{Name: a.Name(), Description: a.Description(), SubAgents: []agentInfo{}}
	for _, sub := range agent.SubAgents(a) {
		info.SubAgents = append(info.SubAgents, describe(sub))
	}
	return info
}

// runTracker records the cancel functions of running invocations by session.
type runTracker struct {
	mu     sync.Mutex
	closed bool
	runs   map[sessionRef]map[*runHandle]struct{}
}

type sessionRef struct{ app, user, session string }

type runHandle struct{ cancel context.CancelCauseFunc }

// start derives the context of one invocation and registers its cancel
// function. done must be called when the invocation has ended.
// stop cancels that invocation alone, with cause.
func (t *runTracker) start(parent context.Context, ref sessionRef) (ctx context.Context, stop context.CancelCauseFunc, done func(), err error) {
	ctx, cancel := context.WithCancelCause(parent)
	h := &runHandle{cancel: cancel}
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.closed {
		cancel(errShutdown)
		return nil, nil, nil, errShutdown
	}
	if t.runs == nil {
		t.runs = map[sessionRef]map[*runHandle]struct{}{}
	}
	set := t.runs[ref]
	if set == nil {
		set = map[*runHandle]struct{}{}
		t.runs[ref] = set
	}
	set[h] = struct{}{}
	return ctx, cancel, func() {
		t.mu.Lock()
		delete(set, h)
		if len(set) == 0 {
			delete(t.runs, ref)
		}
		t.mu.Unlock()
		cancel(context.Canceled)
	}, nil
}

// cancel cancels the invocations of one session and returns how many.
func (t *runTracker) cancel(ref sessionRef) int {
	t.mu.Lock()
	defer t.mu.Unlock()
	for h := range t.runs[ref] {
		h.cancel(errCancelled)
	}
	return len(t.runs[ref])
}

// close cancels every invocation and refuses new ones.
func (t *runTracker) close() {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.closed = true
	for _, set := range t.runs {
		for h := range set {
			h.cancel(errShutdown)
		}
	}
}

// chain applies middleware so that the first one listed runs first.
func chain(h http.Handler, mw ...func(http.Handler) http.Handler) http.Handler {
	for _, m := range slices.Backward(mw) {
		h = m(h)
	}
	return h
}

func parseBool(s string) (bool, bool) {
	switch strings.ToLower(s) {
	case "1", "true", "yes":
		return true, true
	case "0", "false", "no":
		return false, true
	}
	return false, false
}
