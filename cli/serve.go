package cli

import (
	"cmp"
	"context"
	"errors"
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
	"github.com/loomkit/loom/durable/temporal"
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

// serve runs "loom web" (withUI) or "loom api".
func serve(ctx context.Context, env Env, args []string, p Program, withUI bool) error {
	cmd, what := "api", "the HTTP API"
	if withUI {
		cmd, what = "web", "the HTTP API and the dev web UI"
	}
	fs := newFlagSet(cmd, cmd+" [flags] [DIR...]\n\nServes "+what+" for the program's applications and, for each DIR, every sub-directory holding root_agent.yaml (or DIR itself if it holds one). Applications from files reload when their files change.", env)
	var o options
	o.register(fs)
	fs.DurationVar(&o.sessionTTL, "session-ttl", 0, "delete the sessions of applications without a retention of their own that are unused for longer than this `duration` (e.g. 720h), with their events, state and artifacts, at start and then periodically; 0 keeps them")
	host := fs.String("host", "127.0.0.1", "`address` to listen on (0.0.0.0 for every interface)")
	port := fs.Int("port", 8000, "`port` to listen on (0 picks a free one)")
	origins := fs.String("allow-origins", "", "comma-separated browser `origins` allowed to call the API (\"*\" for any, without credentials)")
	evals := fs.String("evals", DefaultEvals, "`directory` of the eval sets and results the evaluation routes serve (results go to the session database when --sessions names one other than the default)")
	withMCP := fs.Bool("mcp", false, "also serve every application as an MCP server over Streamable HTTP, at /mcp/APP: one tool, the agent")
	withA2A := fs.Bool("a2a", false, "also serve every application over the Agent2Agent (A2A) protocol, at /a2a/APP (agent card at /a2a/APP"+a2aserver.CardPath+")")
	var tf temporalFlags
	tf.registerClient(fs, "start invocations there, as workflows that loom worker runs, instead of in this process")
	conf := fs.Bool("conformance", false, "honour ADK's conformance protocol: a run whose state delta holds _adk_replay_config answers model and tool calls from recordings, one holding _adk_recordings_config records them (it swaps models: for test servers only)")
	confRoots := fs.String("conformance-root", ".", "comma-separated `directories` the case directories of --conformance requests must lie in")
	hosts := fs.String("allowed-hosts", "", "comma-separated `hosts` (name or name:port) accepted in the Host header besides localhost, 127.0.0.1 and [::1], and the --host address; \"*\" for any")
	dirs, err := parseInterspersed(fs, args)
	if err != nil {
		return err
	}
	for _, d := range dirs {
		if fi, err := os.Stat(d); err != nil || !fi.IsDir() {
			fmt.Fprintf(env.Stderr, "loom %s: unexpected argument %q: not a directory of applications\n", cmd, d)
			fs.Usage()
			return errUsage
		}
	}
	apps, err := withFileApps(p.Apps, dirs)
	if err != nil {
		return err
	}
	if len(apps) == 0 {
		return errors.New("no applications to serve")
	}

	// Listen first: the port accepts connections from here on, and requests
	// queue until the handler is ready a few milliseconds later.
	ln, err := net.Listen("tcp", net.JoinHostPort(*host, strconv.Itoa(*port)))
	if err != nil {
		return fmt.Errorf("listen: %w", err)
	}
	defer ln.Close()

	// Traces of every app, kept in memory for the debug trace routes.
	tel, err := telemetry.New(telemetry.Config{})
	if err != nil {
		return err
	}
	defer tel.Shutdown(context.WithoutCancel(ctx))
	plugins := []*plugin.Plugin{tel.Plugin()}
	reg := p.Registry
	if *conf {
		// The agents of the conformance suite name Go equivalents of
		// its Python code; their models report the names the config
		// files give, as the recordings expect.
		if reg == nil {
			reg = agentconfig.NewRegistry()
		}
		adkagents.Register(reg)
		o.namedOffline = true
		copts := &conformance.Options{Roots: splitList(*confRoots)}
		plugins = append(plugins, conformance.Replay(copts), conformance.Record(copts))
		fmt.Fprintf(env.Stderr, "loom: ADK conformance replay and recording on, for case directories in %s\n", strings.Join(copts.Roots, ", "))
	}
	if tf.addr != "" {
		o.resumable = true // Temporal's steps continue invocations from their checkpoints
	}
	svc, runners, err := setup(ctx, env, &o, apps, reg, plugins...)
	if err != nil {
		return err
	}
	defer svc.close()
	defer closeFileApps(apps)
	allowed := splitList(*hosts)
	if ip := net.ParseIP(*host); *host != "" && (ip == nil || !ip.IsUnspecified()) {
		// The address asked for is a name the server is reached by; a
		// wildcard address is not, so its clients' names must be listed.
		allowed = append(allowed, *host)
	} else if len(allowed) == 0 {
		fmt.Fprintf(env.Stderr, "loom: listening on every interface; only localhost names are accepted as Host: pass --allowed-hosts with the names or addresses clients use\n")
	}
	var mounts map[string]http.Handler
	var agents []*a2aserver.Handler
	if *withA2A {
		if mounts, agents, err = a2aMounts(runners); err != nil {
			return err
		}
	}
	var mcps []*mcpserver.Handler
	if *withMCP {
		if mounts, mcps, err = mcpMounts(runners, mounts); err != nil {
			return err
		}
	}
	cfg := server.Config{Apps: runners, AllowedOrigins: splitList(*origins), AllowedHosts: allowed, Version: version(), Traces: server.TelemetryTraces(tel), Mounts: mounts, Status: statusOf(apps), AppFiles: appFilesOf(apps)}
	cfg.Evals, _ = evalStore(&o, svc, *evals)
	cfg.EvalMetrics = p.EvalMetrics
	if name := cmp.Or(o.model, defaultModel(env.Getenv)); name != "" {
		// The judge of LLM-judged metrics in eval runs started from the UI.
		if cfg.EvalJudge, err = openModel(ctx, name, env.Getenv, o.modelTimeout); err != nil {
			return fmt.Errorf("model %s: %w", name, err)
		}
	}
	if tf.addr != "" {
		if err := checkShared(o.sessions); err != nil {
			return err
		}
		c, err := tf.dial(ctx, env)
		if err != nil {
			return err
		}
		defer c.Close()
		if cfg.Invoker, err = temporal.NewClient(temporal.ClientConfig{Client: c, TaskQueue: tf.queue, WorkflowIDPrefix: tf.prefix}); err != nil {
			return err
		}
		fmt.Fprintf(env.Stderr, "loom: invocations run on Temporal %s, task queue %s, workflow ids %s/...\n", tf.addr, tf.queue, tf.prefix)
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
		for _, a := range agents {
			a.Close()
		}
		for _, m := range mcps {
			m.Close()
		}
	})

	base := baseURL(ln.Addr())
	if withUI {
		fmt.Fprintf(env.Stderr, "loom: dev UI at %s%s (API at %s)\n", base, ui.Prefix, base)
	} else {
		fmt.Fprintf(env.Stderr, "loom: API at %s\n", base)
	}
	for _, r := range runners {
		if *withA2A {
			fmt.Fprintf(env.Stderr, "loom: A2A agent %s at %s%s\n", r.AppName(), base, A2APath(r.AppName()))
		}
		if *withMCP {
			fmt.Fprintf(env.Stderr, "loom: MCP server %s at %s%s\n", r.AppName(), base, MCPPath(r.AppName()))
		}
	}
	sweepCtx, stopSweep := context.WithCancel(ctx)
	defer stopSweep()
	sweepDone := expireSessions(sweepCtx, env, runners, time.Now)
	defer func() { stopSweep(); <-sweepDone }()
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
	err = hs.Shutdown(sctx)
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
	svc, err := openServices(ctx, o)
	if err != nil {
		return nil, nil, err
	}
	runners := make([]*runner.Runner, 0, len(apps))
	descs := make([]string, 0, len(apps))
	for _, app := range apps {
		r, desc, err := newRunner(app, choice, o, svc, plugins)
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

func newRunner(app App, choice *modelChoice, o *options, svc *services, plugins []*plugin.Plugin) (*runner.Runner, string, error) {
	cfg := runner.Config{
		AppName:    app.Name,
		SessionTTL: cmp.Or(app.SessionTTL, o.sessionTTL),
		Resumable:  o.resumable,
		Sessions:   svc.sessions,
		Artifacts:  svc.artifacts,
		Memory:     svc.memory,
		Plugins:    plugins,
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
