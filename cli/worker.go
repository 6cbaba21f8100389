package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"strings"

	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/log"

	"github.com/loomkit/loom/durable/temporal"
	"github.com/loomkit/loom/plugin/telemetry"
)

// temporalFlags are the flags that put invocations on Temporal.
type temporalFlags struct {
	addr      string
	namespace string
	queue     string
	prefix    string // of the workflow ids (servers only)
}

func (t *temporalFlags) register(fs *flag.FlagSet, what string) {
	fs.StringVar(&t.addr, "temporal", "", "`host:port` of a Temporal server: "+what)
	fs.StringVar(&t.namespace, "temporal-namespace", "default", "Temporal `namespace`")
	fs.StringVar(&t.queue, "temporal-task-queue", temporal.DefaultTaskQueue, "Temporal task `queue` of the workers")
}

// registerClient registers, besides the flags of register, those of a
// process that starts workflows.
func (t *temporalFlags) registerClient(fs *flag.FlagSet, what string) {
	t.register(fs, what)
	fs.StringVar(&t.prefix, "temporal-workflow-prefix", temporal.DefaultWorkflowIDPrefix,
		"`prefix` of the session workflows' ids: deployments that share a Temporal namespace but not their session store each need their own")
}

// dial connects to the Temporal server; its SDK logs warnings and errors
// to stderr.
func (t *temporalFlags) dial(ctx context.Context, env Env) (client.Client, error) {
	logger := log.NewStructuredLogger(slog.New(slog.NewTextHandler(env.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn})))
	c, err := client.DialContext(ctx, client.Options{HostPort: t.addr, Namespace: t.namespace, Logger: logger})
	if err != nil {
		return nil, fmt.Errorf("temporal %s: %w", t.addr, err)
	}
	return c, nil
}

// checkShared refuses a session store that only this process sees: the
// workers and the servers of a Temporal deployment share their sessions.
func checkShared(url string) error {
	if strings.HasPrefix(url, "memory:") || url == "sqlite::memory:" {
		return fmt.Errorf("sessions %s live in this process only: Temporal workers and servers must share a session store (sqlite://FILE on one machine, postgres://...)", url)
	}
	return nil
}

// worker runs "loom worker": a Temporal worker that runs the invocations
// of the applications.
func worker(ctx context.Context, env Env, args []string, p Program) error {
	apps := p.Apps
	fs := newFlagSet("worker", "worker --temporal HOST:PORT [flags]\n\nRuns the applications' invocations started on Temporal (by loom web or api --temporal).", env)
	var o options
	o.register(fs)
	o.authCalls = true // it runs what loom api starts, as loom api would
	var tf temporalFlags
	tf.register(fs, "the server whose workflows this worker runs (required)")
	if err := parse(fs, args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(env.Stderr, "loom worker: unexpected argument %q\n", fs.Arg(0))
		fs.Usage()
		return errUsage
	}
	if tf.addr == "" {
		fmt.Fprintln(env.Stderr, "loom worker: --temporal is required")
		fs.Usage()
		return errUsage
	}
	if len(apps) == 0 {
		return errors.New("no applications to run")
	}
	if err := checkShared(o.sessions); err != nil {
		return err
	}
	tel, err := telemetry.New(telemetry.Config{})
	if err != nil {
		return err
	}
	defer tel.Shutdown(context.WithoutCancel(ctx))
	o.resumable = true // each step continues the invocation from its checkpoints
	svc, runners, err := setup(ctx, env, &o, apps, p.Registry, tel.Plugin())
	if err != nil {
		return err
	}
	defer svc.close()
	c, err := tf.dial(ctx, env)
	if err != nil {
		return err
	}
	defer c.Close()
	w, err := temporal.NewWorker(c, tf.queue, runners...)
	if err != nil {
		return err
	}
	if err := w.Start(); err != nil {
		return fmt.Errorf("temporal worker: %w", err)
	}
	fmt.Fprintf(env.Stderr, "loom: worker on %s, task queue %s\n", tf.addr, tf.queue)
	if env.Listening != nil {
		env.Listening(tf.addr)
	}
	<-ctx.Done()
	fmt.Fprintln(env.Stderr, "loom: stopping the worker")
	w.Stop()
	return nil
}
