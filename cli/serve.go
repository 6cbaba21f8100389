package cli

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/loomkit/loom/durable/temporal"
	"github.com/loomkit/loom/plugin"
	"github.com/loomkit/loom/plugin/telemetry"
	"github.com/loomkit/loom/runner"
	"github.com/loomkit/loom/server"
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
func serve(ctx context.Context, env Env, args []string, apps []App, withUI bool) error {
	cmd, what := "api", "the HTTP API"
	if withUI {
		cmd, what = "web", "the HTTP API and the dev web UI"
	}
	fs := newFlagSet(cmd, cmd+" [flags]\n\nServes "+what+".", env.Stderr)
	var o options
	o.register(fs)
	host := fs.String("host", "127.0.0.1", "`address` to listen on (0.0.0.0 for every interface)")
	port := fs.Int("port", 8000, "`port` to listen on (0 picks a free one)")
	origins := fs.String("allow-origins", "", "comma-separated browser `origins` allowed to call the API (\"*\" for any, without credentials)")
	var tf temporalFlags
	tf.register(fs, "start invocations there, as workflows that loom worker runs, instead of in this process")
	hosts := fs.String("allowed-hosts", "", "comma-separated `hosts` (name or name:port) accepted in the Host header besides localhost, 127.0.0.1 and [::1], and the --host address; \"*\" for any")
	if err := parse(fs, args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(env.Stderr, "loom %s: unexpected argument %q\n", cmd, fs.Arg(0))
		fs.Usage()
		return errUsage
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
	svc, runners, err := setup(ctx, env, &o, apps, tel.Plugin())
	if err != nil {
		return err
	}
	defer svc.close()
	allowed := splitList(*hosts)
	if ip := net.ParseIP(*host); *host != "" && (ip == nil || !ip.IsUnspecified()) {
		// The address asked for is a name the server is reached by; a
		// wildcard address is not, so its clients' names must be listed.
		allowed = append(allowed, *host)
	} else if len(allowed) == 0 {
		fmt.Fprintf(env.Stderr, "loom: listening on every interface; only localhost names are accepted as Host: pass --allowed-hosts with the names or addresses clients use\n")
	}
	cfg := server.Config{Apps: runners, AllowedOrigins: splitList(*origins), AllowedHosts: allowed, Version: version(), Traces: traceRoutes{tel}}
	if tf.addr != "" {
		if err := checkShared(o.sessions); err != nil {
			return err
		}
		c, err := tf.dial(ctx, env)
		if err != nil {
			return err
		}
		defer c.Close()
		if cfg.Invoker, err = temporal.NewClient(temporal.ClientConfig{Client: c, TaskQueue: tf.queue}); err != nil {
			return err
		}
		fmt.Fprintf(env.Stderr, "loom: invocations run on Temporal %s, task queue %s\n", tf.addr, tf.queue)
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
	hs.RegisterOnShutdown(func() { api.Close() })

	base := baseURL(ln.Addr())
	if withUI {
		fmt.Fprintf(env.Stderr, "loom: dev UI at %s%s (API at %s)\n", base, ui.Prefix, base)
	} else {
		fmt.Fprintf(env.Stderr, "loom: API at %s\n", base)
	}
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
func setup(ctx context.Context, env Env, o *options, apps []App, plugins ...*plugin.Plugin) (*services, []*runner.Runner, error) {
	choice, err := chooseModel(ctx, env, o.model, o.modelTimeout)
	if err != nil {
		return nil, nil, err
	}
	svc, err := openServices(ctx, o)
	if err != nil {
		return nil, nil, err
	}
	runners := make([]*runner.Runner, 0, len(apps))
	descs := make([]string, 0, len(apps))
	for _, app := range apps {
		r, desc, err := newRunner(app, choice, svc, plugins)
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

func newRunner(app App, choice *modelChoice, svc *services, plugins []*plugin.Plugin) (*runner.Runner, string, error) {
	ag, desc, err := choice.build(app)
	if err != nil {
		return nil, "", err
	}
	r, err := runner.New(runner.Config{
		AppName:   app.Name,
		Agent:     ag,
		Sessions:  svc.sessions,
		Artifacts: svc.artifacts,
		Memory:    svc.memory,
		Plugins:   plugins,
	})
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

// traceRoutes answers the server's debug trace routes from the telemetry
// plugin's in-memory spans. (The plugin, a lower layer, knows nothing of the
// server; this is where the two meet.)
type traceRoutes struct{ *telemetry.Telemetry }

func (t traceRoutes) SessionSpans(ctx context.Context, q server.TraceQuery) ([]server.Span, error) {
	spans, err := t.Telemetry.SessionSpans(ctx, telemetry.Owner(q))
	out := make([]server.Span, len(spans))
	for i, s := range spans {
		out[i] = server.Span(s)
	}
	return out, err
}

func (t traceRoutes) EventAttributes(ctx context.Context, q server.TraceQuery, eventID string) (map[string]any, error) {
	return t.Telemetry.EventAttributes(ctx, telemetry.Owner(q), eventID)
}
