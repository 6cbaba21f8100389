package cli

import (
	"cmp"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/loomkit/loom/agent/agentconfig"
	"github.com/loomkit/loom/conformance"
	"github.com/loomkit/loom/conformance/adkagents"
	"github.com/loomkit/loom/cost"
	"github.com/loomkit/loom/durable/temporal"
	"github.com/loomkit/loom/event"
	"github.com/loomkit/loom/plugin"
	"github.com/loomkit/loom/plugin/telemetry"
	"github.com/loomkit/loom/runner"
	"github.com/loomkit/loom/server"
	"github.com/loomkit/loom/server/a2aserver"
	"github.com/loomkit/loom/server/mcpserver"
	"github.com/loomkit/loom/server/ui"
)

// shutdownTimeout bounds a graceful shutdown.
const shutdownTimeout = 10 * time.Second

// Connection limits of the HTTP server: the time a client has to send its
// request headers, and the time an idle keep-alive connection is kept.
// Request bodies are bounded by server.Config.BodyReadTimeout; responses,
// event streams included, are not. Variables for the tests.
var (
	readHeaderTimeout = 10 * time.Second
	idleTimeout       = 2 * time.Minute
)

// serveFlags are the flags of "loom web" and "loom api".
type serveFlags struct {
	o         options
	tf        temporalFlags
	host      string
	port      int
	origins   string
	evals     string
	withMCP   bool
	withA2A   bool
	conf      bool
	confRoots string
	hosts     string
	prices    string
}

// register defines the flags in fs.
func (f *serveFlags) register(fs *flag.FlagSet) {
	f.o.register(fs)
	fs.DurationVar(&f.o.sessionTTL, "session-ttl", 0, "delete the sessions of applications without a retention of their own that are unused for longer than this `duration` (e.g. 720h), with their events, state and artifacts, at start and then periodically; 0 keeps them")
	fs.StringVar(&f.host, "host", "127.0.0.1", "`address` to listen on (0.0.0.0 for every interface)")
	fs.IntVar(&f.port, "port", 8000, "`port` to listen on (0 picks a free one)")
	fs.StringVar(&f.origins, "allow-origins", "", "comma-separated browser `origins` allowed to call the API (\"*\" for any, without credentials)")
	fs.StringVar(&f.evals, "evals", DefaultEvals, "`directory` of the eval sets and results the evaluation routes serve (results go to the session database when --sessions names one other than the default)")
	fs.BoolVar(&f.withMCP, "mcp", false, "also serve every application as an MCP server over Streamable HTTP, at /mcp/APP: one tool, the agent")
	fs.BoolVar(&f.withA2A, "a2a", false, "also serve every application over the Agent2Agent (A2A) protocol, at /a2a/APP (agent card at /a2a/APP"+a2aserver.CardPath+")")
	f.tf.registerClient(fs, "start invocations there, as workflows that loom worker runs, instead of in this process")
	fs.BoolVar(&f.conf, "conformance", false, "honour ADK's conformance protocol: a run whose state delta holds _adk_replay_config answers model and tool calls from recordings, one holding _adk_recordings_config records them (it swaps models: for test servers only)")
	fs.StringVar(&f.confRoots, "conformance-root", ".", "comma-separated `directories` the case directories of --conformance requests must lie in")
	fs.StringVar(&f.prices, "prices", "", "JSON or YAML `file` of model prices per million tokens ({\"models\": {\"NAME\": {\"input\": 0.3, \"output\": 2.5, \"cached_input\": 0.03}}}): the dev UI and the session usage route show costs, the loom.model.cost metric counts them; models without a price show tokens only")
	fs.StringVar(&f.hosts, "allowed-hosts", "", "comma-separated `hosts` (name or name:port) accepted in the Host header besides localhost, 127.0.0.1 and [::1], and the --host address; \"*\" for any")
}

// appsToServe parses the arguments, directories of applications, and
// returns the program's applications with theirs.
func appsToServe(env Env, fs *flag.FlagSet, args []string, programApps []App) ([]App, error) {
	dirs, err := parseInterspersed(fs, args)
	if err != nil {
		return nil, err
	}
	for _, d := range dirs {
		if fi, err := os.Stat(d); err != nil || !fi.IsDir() {
			fmt.Fprintf(env.Stderr, "loom %s: unexpected argument %q: not a directory of applications\n", fs.Name(), d)
			fs.Usage()
			return nil, errUsage
		}
	}
	apps, err := withFileApps(programApps, dirs)
	if err != nil {
		return nil, err
	}
	if len(apps) == 0 {
		return nil, errors.New("no applications to serve")
	}
	return apps, nil
}

// serve runs "loom web" (withUI) or "loom api".
func serve(ctx context.Context, env Env, args []string, p Program, withUI bool) error {
	cmd, what := "api", "the HTTP API"
	if withUI {
		cmd, what = "web", "the HTTP API and the dev web UI"
	}
	fs := newFlagSet(cmd, cmd+" [flags] [DIR...]\n\nServes "+what+" for the program's applications and, for each DIR, every sub-directory holding root_agent.yaml (or DIR itself if it holds one). Applications from files reload when their files change.", env)
	var f serveFlags
	f.register(fs)
	f.o.authCalls = !withUI // nothing of it reaches the wire
	apps, err := appsToServe(env, fs, args, p.Apps)
	if err != nil {
		return err
	}
	if err := f.tf.prepare(env, f.o.sessions); err != nil {
		return err
	}
	// Listen first: the port accepts connections from here on, and requests
	// queue until the handler is ready a few milliseconds later.
	ln, err := net.Listen("tcp", net.JoinHostPort(f.host, strconv.Itoa(f.port)))
	if err != nil {
		return fmt.Errorf("listen: %w", err)
	}
	defer ln.Close()
	if f.conf {
		// The suite's MCP agent starts its server with npx: the release
		// its recording was made against, when scripts/mcp-server.sh
		// installed it.
		restore, err := mcpEverythingShim(env)
		if err != nil {
			return err
		}
		defer restore()
	}

	var prices cost.Prices
	if f.prices != "" {
		if prices, err = cost.Load(f.prices); err != nil {
			return err
		}
	}
	// Traces of every app, kept in memory for the debug trace routes.
	tel, err := telemetry.New(telemetry.Config{Prices: prices})
	if err != nil {
		return err
	}
	defer tel.Shutdown(context.WithoutCancel(ctx))
	reg, plugins := f.extend(env, p.Registry, tel.Plugin())
	svc, runners, err := setup(ctx, env, &f.o, apps, reg, plugins...)
	if err != nil {
		return err
	}
	defer svc.close()
	defer closeFileApps(apps)
	prot, err := mountProtocols(runners, f.withA2A, f.withMCP)
	if err != nil {
		return err
	}
	cfg := server.Config{Apps: runners, AllowedOrigins: splitList(f.origins), AllowedHosts: allowedHosts(env, f.host, f.hosts), Version: version(), Traces: server.TelemetryTraces(tel), Prices: prices, Mounts: prot.mounts, Status: statusOf(apps), AppFiles: appFilesOf(apps)}
	evals, _, closeEvals, err := evalStore(ctx, &f.o, f.evals)
	if err != nil {
		return err
	}
	defer closeEvals()
	cfg.Evals = evals
	cfg.EvalMetrics = p.EvalMetrics
	if name := cmp.Or(f.o.model, defaultModel(env.Getenv)); name != "" {
		// The judge of LLM-judged metrics in eval runs started from the UI.
		if cfg.EvalJudge, err = openModel(ctx, name, env.Getenv, f.o.modelTimeout); err != nil {
			return fmt.Errorf("model %s: %w", name, err)
		}
	}
	if f.tf.addr != "" {
		inv, closeClient, err := f.tf.invoker(ctx, env)
		if err != nil {
			return err
		}
		defer closeClient()
		cfg.Invoker = inv
	}
	api, err := server.New(cfg)
	if err != nil {
		return err
	}
	var h http.Handler = api
	if withUI {
		h = ui.Wrap(api)
	}
	hs := &http.Server{Handler: h, ReadHeaderTimeout: readHeaderTimeout, IdleTimeout: idleTimeout}
	hs.RegisterOnShutdown(func() {
		api.Close()
		prot.close()
	})

	base := baseURL(ln.Addr())
	announce(env, base, withUI, runners, f.withA2A, f.withMCP)
	sweepCtx, stopSweep := context.WithCancel(ctx)
	sweepDone := expireSessions(sweepCtx, env, runners, time.Now)
	defer func() { stopSweep(); <-sweepDone }()
	return serveUntilDone(ctx, env, hs, ln, base)
}

// extend returns the registry and plugins the applications get: the
// telemetry plugin tp and, with --conformance, the protocol's. With
// --temporal, the applications become resumable.
func (f *serveFlags) extend(env Env, reg *agentconfig.Registry, tp *plugin.Plugin) (*agentconfig.Registry, []*plugin.Plugin) {
	plugins := []*plugin.Plugin{tp}
	if f.conf {
		var cp []*plugin.Plugin
		reg, cp = conformanceOn(env, reg, &f.o, f.confRoots)
		plugins = append(plugins, cp...)
	}
	if f.tf.addr != "" {
		f.o.resumable = true // Temporal's steps continue invocations from their checkpoints
	}
	return reg, plugins
}

// conformanceOn sets up ADK's conformance protocol for --conformance: the
// registry gets the suite's agents, models are chosen by name offline, and
// the returned plugins replay and record the cases under the roots.
func conformanceOn(env Env, reg *agentconfig.Registry, o *options, roots string) (*agentconfig.Registry, []*plugin.Plugin) {
	// The agents of the conformance suite name Go equivalents of its
	// Python code; their models report the names the config files give,
	// as the recordings expect.
	if reg == nil {
		reg = agentconfig.NewRegistry()
	}
	adkagents.Register(reg)
	o.namedOffline = true
	copts := &conformance.Options{Roots: splitList(roots)}
	fmt.Fprintf(env.Stderr, "loom: ADK conformance replay and recording on, for case directories in %s\n", strings.Join(copts.Roots, ", "))
	return reg, []*plugin.Plugin{conformance.Replay(copts), conformance.Record(copts)}
}

// protocols are the handlers served beside the API: A2A agents and MCP
// servers, mounted under their paths.
type protocols struct {
	mounts map[string]http.Handler
	a2a    []*a2aserver.Handler
	mcp    []*mcpserver.Handler
}

// mountProtocols makes the A2A (withA2A) and MCP (withMCP) handlers of the
// runners.
func mountProtocols(runners []*runner.Runner, withA2A, withMCP bool) (p protocols, err error) {
	if withA2A {
		if p.mounts, p.a2a, err = a2aMounts(runners); err != nil {
			return p, err
		}
	}
	if withMCP {
		if p.mounts, p.mcp, err = mcpMounts(runners, p.mounts); err != nil {
			return p, err
		}
	}
	return p, nil
}

// close closes every handler.
func (p protocols) close() {
	for _, a := range p.a2a {
		a.Close()
	}
	for _, m := range p.mcp {
		m.Close()
	}
}

// allowedHosts returns the Host header names accepted besides localhost:
// the --allowed-hosts list and the --host address, unless that is a
// wildcard, whose clients' names must be listed.
func allowedHosts(env Env, host, hosts string) []string {
	allowed := splitList(hosts)
	if ip := net.ParseIP(host); host != "" && (ip == nil || !ip.IsUnspecified()) {
		// The address asked for is a name the server is reached by; a
		// wildcard address is not, so its clients' names must be listed.
		allowed = append(allowed, host)
	} else if len(allowed) == 0 {
		fmt.Fprintf(env.Stderr, "loom: listening on every interface; only localhost names are accepted as Host: pass --allowed-hosts with the names or addresses clients use\n")
	}
	return allowed
}

// invoker returns the invoker that starts invocations as Temporal
// workflows, and the function that closes its client.
func (t *temporalFlags) invoker(ctx context.Context, env Env) (server.Invoker, func(), error) {
	c, err := t.dial(ctx, env)
	if err != nil {
		return nil, nil, err
	}
	inv, err := temporal.NewClient(temporal.ClientConfig{Client: c, TaskQueue: t.queue, WorkflowIDPrefix: t.prefix, FeedAddr: t.feedAddr, FeedURL: t.feedURL})
	if err != nil {
		c.Close()
		return nil, nil, err
	}
	fmt.Fprintf(env.Stderr, "loom: invocations run on Temporal %s, task queue %s, workflow ids %s/...\n", t.addr, t.queue, t.prefix)
	if u := inv.FeedURL(); u != "" {
		fmt.Fprintf(env.Stderr, "loom: workers send the events of turns to %s\n", u)
	}
	return inv, func() { inv.Close(); c.Close() }, nil
}

// announce tells where the server answers: the API or the dev UI, and the
// A2A agents and MCP servers when they are on.
func announce(env Env, base string, withUI bool, runners []*runner.Runner, withA2A, withMCP bool) {
	if withUI {
		fmt.Fprintf(env.Stderr, "loom: dev UI at %s%s (API at %s)\n", base, ui.Prefix, base)
	} else {
		fmt.Fprintf(env.Stderr, "loom: API at %s\n", base)
	}
	for _, r := range runners {
		if withA2A {
			fmt.Fprintf(env.Stderr, "loom: A2A agent %s at %s%s\n", r.AppName(), base, A2APath(r.AppName()))
		}
		if withMCP {
			fmt.Fprintf(env.Stderr, "loom: MCP server %s at %s%s\n", r.AppName(), base, MCPPath(r.AppName()))
		}
	}
}

// serveUntilDone serves on ln until ctx is done, then shuts the server down
// gracefully, within shutdownTimeout.
func serveUntilDone(ctx context.Context, env Env, hs *http.Server, ln net.Listener, base string) error {
	errc := make(chan error, 1)
	go func() { errc <- hs.Serve(ln) }()
	if env.Listening != nil {
		env.Listening(base)
	}
	select {
	case err := <-errc:
		return fmt.Errorf("serve: %w", err)
	case <-ctx.Done():
	}
	fmt.Fprintln(env.Stderr, "loom: shutting down")
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), shutdownTimeout)
	defer cancel()
	err := hs.Shutdown(sctx)
	<-errc
	if err != nil {
		return fmt.Errorf("shutdown: %w", err)
	}
	return nil
}

// setup opens storage, chooses models and builds a runner per application,
// reporting the choices on stderr. Every runner gets the plugins.
func setup(ctx context.Context, env Env, o *options, apps []App, reg *agentconfig.Registry, plugins ...*plugin.Plugin) (*services, []*runner.Runner, error) {
	choice, err := chooseModel(ctx, env, o.model, o.modelTimeout)
	if err != nil {
		return nil, nil, err
	}
	if files := fileAppsOf(apps); len(files) > 0 {
		log := &lockedWriter{w: env.Stderr}
		opts := agentconfig.Options{Registry: reg, Model: choice.resolver(ctx, env, o), Stderr: io.Discard}
		for _, f := range files {
			f.start(opts, log)
		}
	}
	key, err := callKey(o, o.authCalls, func(note string) { fmt.Fprintf(env.Stderr, "loom: %s\n", note) })
	if err != nil {
		return nil, nil, err
	}
	svc, err := openServices(ctx, o)
	if err != nil {
		return nil, nil, err
	}
	if svc.credentials, svc.closeCredentials, err = openCredentials(ctx, env, o); err != nil {
		svc.close()
		return nil, nil, err
	}
	runners := make([]*runner.Runner, 0, len(apps))
	descs := make([]string, 0, len(apps))
	for _, app := range apps {
		r, desc, err := newRunner(app, choice, o, svc, key, plugins)
		if err != nil {
			svc.close()
			return nil, nil, err
		}
		runners = append(runners, r)
		descs = append(descs, fmt.Sprintf("%s (%s)", app.Name, desc))
	}
	fmt.Fprintf(env.Stderr, "loom: apps: %s\n", strings.Join(descs, ", "))
	fmt.Fprintf(env.Stderr, "loom: storage: sessions %s, artifacts %s, memory %s\n", redact(o.sessions), redact(o.artifacts), redact(o.memory))
	return svc, runners, nil
}

func newRunner(app App, choice *modelChoice, o *options, svc *services, key *event.CallKey, plugins []*plugin.Plugin) (*runner.Runner, string, error) {
	cfg := runner.Config{
		AppName:     app.Name,
		SessionTTL:  cmp.Or(app.SessionTTL, o.sessionTTL),
		Resumable:   o.resumable,
		Sessions:    svc.sessions,
		Artifacts:   svc.artifacts,
		Memory:      svc.memory,
		Plugins:     plugins,
		CallKey:     key,
		Credentials: svc.credentials,
	}
	var desc string
	if f := app.file; f != nil {
		cfg.Agent, cfg.Refresh = f.root(), f.refresh
		if cfg.Agent == nil {
			cfg.Agent = f.missing
		}
		desc = "from " + filepath.Join(f.dir, agentconfig.RootFile) + ", " + choice.fileDesc()
	} else {
		var err error
		if cfg.Agent, desc, err = choice.build(app, o); err != nil {
			return nil, "", err
		}
	}
	r, err := runner.New(cfg)
	if err != nil {
		return nil, "", fmt.Errorf("app %s: %w", app.Name, err)
	}
	return r, desc, nil
}

// baseURL is the URL to print for a listener: a wildcard address is shown
// as localhost.
func baseURL(addr net.Addr) string {
	tcp, ok := addr.(*net.TCPAddr)
	if !ok {
		return "http://" + addr.String()
	}
	host := tcp.IP.String()
	if tcp.IP.IsUnspecified() {
		host = "localhost"
	}
	return "http://" + net.JoinHostPort(host, strconv.Itoa(tcp.Port))
}

// A2APath is where "loom web --a2a" and "loom api --a2a" serve the
// application app over A2A, as ADK's servers do: JSON-RPC at the path
// itself, the agent card below it at a2aserver.CardPath.
func A2APath(app string) string { return "/a2a/" + app }

// MCPPath is where "loom web --mcp" and "loom api --mcp" serve the
// application app as an MCP server (Streamable HTTP).
func MCPPath(app string) string { return "/mcp/" + app }

// mcpMounts adds the MCP handlers of the runners to mounts (a new map if
// nil), by mount path.
func mcpMounts(runners []*runner.Runner, mounts map[string]http.Handler) (map[string]http.Handler, []*mcpserver.Handler, error) {
	if mounts == nil {
		mounts = map[string]http.Handler{}
	}
	var handlers []*mcpserver.Handler
	for _, r := range runners {
		h, err := mcpserver.New(mcpserver.Config{Runner: r, Version: version()})
		if err != nil {
			return nil, nil, err
		}
		mounts[MCPPath(r.AppName())] = h
		handlers = append(handlers, h)
	}
	return mounts, handlers, nil
}

// a2aMounts returns the A2A handlers of the runners, by mount path.
func a2aMounts(runners []*runner.Runner) (map[string]http.Handler, []*a2aserver.Handler, error) {
	mounts := map[string]http.Handler{}
	var handlers []*a2aserver.Handler
	for _, r := range runners {
		h, err := a2aserver.New(a2aserver.Config{Runner: r, Version: version()})
		if err != nil {
			return nil, nil, err
		}
		p := A2APath(r.AppName())
		mounts[p] = http.StripPrefix(p, h)
		handlers = append(handlers, h)
	}
	return mounts, handlers, nil
}

// maxSweepInterval bounds the time between two retention sweeps.
const maxSweepInterval = time.Hour

// expireSessions applies the retention of the runners that have one
// (runner.Config.SessionTTL) at once and then every tenth of the shortest
// TTL (at most an hour), until ctx is done, reporting what it deletes and
// what fails on stderr. The returned channel is closed when it has
// stopped; it is closed at once when no runner has a TTL.
func expireSessions(ctx context.Context, env Env, runners []*runner.Runner, now func() time.Time) <-chan struct{} {
	done := make(chan struct{})
	var ttl time.Duration
	for _, r := range runners {
		if t := r.SessionTTL(); t > 0 && (ttl == 0 || t < ttl) {
			ttl = t
		}
	}
	if ttl == 0 {
		close(done)
		return done
	}
	interval := min(max(ttl/10, time.Second), maxSweepInterval)
	go func() {
		defer close(done)
		t := time.NewTicker(interval)
		defer t.Stop()
		for {
			for _, r := range runners {
				n, err := r.ExpireSessions(ctx, now())
				if err != nil && ctx.Err() == nil {
					fmt.Fprintf(env.Stderr, "loom: app %s: expiring sessions: %v\n", r.AppName(), err)
				}
				if n > 0 {
					fmt.Fprintf(env.Stderr, "loom: app %s: %d expired sessions deleted\n", r.AppName(), n)
				}
			}
			select {
			case <-ctx.Done():
				return
			case <-t.C:
			}
		}
	}()
	return done
}
