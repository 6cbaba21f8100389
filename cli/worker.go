package cli

import (
	"context"
	"encoding/base64"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"

	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/log"

	"github.com/loomkit/loom/cost"
	"github.com/loomkit/loom/credential"
	"github.com/loomkit/loom/durable/temporal"
	"github.com/loomkit/loom/plugin/telemetry"
)

// temporalFlags are the flags that put invocations on Temporal.
type temporalFlags struct {
	addr      string
	namespace string
	queue     string
	prefix    string          // of the workflow ids (servers only)
	feedAddr  string          // where the feed listener listens (servers only)
	feedURL   string          // where workers reach it (servers only)
	prices    string          // of the models (workers only)
	keyFile   string          // of the keys of the payload codec
	codec     *temporal.Codec // of the keys, set by prepare
}

// EnvTemporalKey names the environment variable that may hold the keys
// Temporal payloads are encrypted with, when --temporal-key-file names no
// file: KeySize bytes of package durable/temporal each, in base64 or hex,
// separated by spaces or newlines, the first encrypting.
const EnvTemporalKey = "LOOM_TEMPORAL_KEY"

func (t *temporalFlags) register(fs *flag.FlagSet, what string) {
	fs.StringVar(&t.addr, "temporal", "", "`host:port` of a Temporal server: "+what)
	fs.StringVar(&t.namespace, "temporal-namespace", "default", "Temporal `namespace`")
	fs.StringVar(&t.queue, "temporal-task-queue", temporal.DefaultTaskQueue, "Temporal task `queue` of the workers")
	fs.StringVar(&t.keyFile, "temporal-key-file", "",
		"`file` of the keys (32 bytes each, base64 or hex, one per line) that encrypt everything Temporal keeps of the invocations (messages, state, tokens, results): the first encrypts, the others, rotated out, still decrypt; servers and workers need the same (default: $"+EnvTemporalKey+"; one of them is required)")
}

// TemporalKeyFile is the name of the file, beside a SQLite session
// database, in which the processes that share that database keep the key
// of Temporal's payloads when neither --temporal-key-file nor
// $LOOM_TEMPORAL_KEY gives one.
const TemporalKeyFile = "temporal.key"

// keys returns the payload codec of the keys of --temporal-key-file, else
// of $LOOM_TEMPORAL_KEY, else of TemporalKeyFile beside a SQLite session
// database (made, readable by the owner only, on first use: the servers
// and workers of one machine share it as they share the database). Without
// keys it refuses to run: Temporal would keep every message, credential
// answers included, in clear.
func (t *temporalFlags) keys(env Env, sessions string) (*temporal.Codec, error) {
	text, from := env.Getenv(EnvTemporalKey), "$"+EnvTemporalKey
	file := t.keyFile
	if file == "" && strings.TrimSpace(text) == "" {
		if db, ok := sqliteFile(sessions); ok {
			file = filepath.Join(filepath.Dir(db), TemporalKeyFile)
			key := base64.StdEncoding.EncodeToString(credential.GenerateKey()) + "\n"
			if err := makeParentDir(sessions); err != nil {
				return nil, fmt.Errorf("temporal key: %w", err)
			}
			if _, err := keepSecret(file, []byte(key)); err != nil {
				return nil, fmt.Errorf("temporal key: %w", err)
			}
		}
	}
	if file != "" {
		b, err := os.ReadFile(file)
		if err != nil {
			return nil, fmt.Errorf("temporal key: %w", err)
		}
		text, from = string(b), file
	}
	var keys [][]byte
	for i, f := range strings.Fields(text) {
		k, err := credential.ParseKey(f)
		if err != nil {
			return nil, fmt.Errorf("temporal key %d in %s: %w", i+1, from, err)
		}
		keys = append(keys, k)
	}
	if len(keys) == 0 {
		return nil, fmt.Errorf("no Temporal key: Temporal keeps every message and result in its workflow histories; give the key that encrypts them with --temporal-key-file or $%s (the same for servers and workers; make one with openssl rand -base64 %d), or keep the sessions in SQLite, beside which one is kept", EnvTemporalKey, temporal.KeySize)
	}
	return temporal.NewCodec(keys[0], keys[1:]...)
}

// registerClient registers, besides the flags of register, those of a
// process that starts workflows.
func (t *temporalFlags) registerClient(fs *flag.FlagSet, what string) {
	t.register(fs, what)
	fs.StringVar(&t.prefix, "temporal-workflow-prefix", temporal.DefaultWorkflowIDPrefix,
		"`prefix` of the session workflows' ids: deployments that share a Temporal namespace but not their session store each need their own")
	fs.StringVar(&t.feedAddr, "temporal-feed-addr", "127.0.0.1:0",
		"`host:port` of the feed listener, where workers of other processes send each turn's events, partial text included, as they are yielded (port 0 picks one; \"\" turns it off: the events then arrive when the turn ends)")
	fs.StringVar(&t.feedURL, "temporal-feed-url", "",
		"base `URL` workers reach the feed listener at (default http:// and its address; required when it listens on every interface)")
}

// prepare checks, before anything is opened, what a process on Temporal
// needs: a session store others share and the keys of the payload codec.
// It does nothing without --temporal.
func (t *temporalFlags) prepare(env Env, sessions string) error {
	if t.addr == "" {
		return nil
	}
	if err := checkShared(sessions); err != nil {
		return err
	}
	var err error
	t.codec, err = t.keys(env, sessions)
	return err
}

// dial connects to the Temporal server, every payload encrypted with the
// codec prepare made; its SDK logs warnings and errors to stderr.
func (t *temporalFlags) dial(ctx context.Context, env Env) (client.Client, error) {
	codec := t.codec
	logger := log.NewStructuredLogger(slog.New(slog.NewTextHandler(env.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn})))
	c, err := client.DialContext(ctx, codec.ClientOptions(client.Options{HostPort: t.addr, Namespace: t.namespace, Logger: logger}))
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
	fs.StringVar(&tf.prices, "prices", "", "JSON or YAML `file` of model prices per million tokens ({\"models\": {\"NAME\": {\"input\": 0.3, \"output\": 2.5, \"cached_input\": 0.03}}}): the loom.model.cost metric counts the costs of the invocations this worker runs; models without a price count tokens only")
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
	if err := tf.prepare(env, o.sessions); err != nil {
		return err
	}
	var prices cost.Prices
	if tf.prices != "" {
		var err error
		if prices, err = cost.Load(tf.prices); err != nil {
			return err
		}
	}
	tel, err := telemetry.New(telemetry.Config{Prices: prices})
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
