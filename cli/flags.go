package cli

import (
	"flag"
	"fmt"
	"io"
	"net/url"
	"strings"
	"time"

	"github.com/loomkit/loom/model/retry"
)

// Default storage URLs.
const (
	DefaultSessions  = "sqlite://./.loom/sessions.db"
	DefaultArtifacts = "file://./.loom/artifacts"
	DefaultMemory    = "memory://"
)

// options are the flags every subcommand shares.
type options struct {
	model        string
	modelTimeout time.Duration
	sessions     string
	artifacts    string
	memory       string
	// namedOffline is set when the server honours the conformance
	// protocol: the agents of config files get, when no model is named
	// and no API key is set, offline models reporting the names the files
	// give (conformance replay compares them), and every model is wrapped
	// for replay.
	namedOffline bool
	// resumable makes the applications resumable (runner.Config.Resumable);
	// Temporal turns it on.
	resumable bool
}

func (o *options) register(fs *flag.FlagSet) {
	fs.StringVar(&o.model, "model", "", "model `name` for the applications (default: the provider's default model if an API key is set, else each application's offline model)")
	fs.DurationVar(&o.modelTimeout, "model-timeout", retry.DefaultTimeout, "how long a model call may wait for a response, or a stream for its next chunk, before the `attempt` is abandoned and retried (negative: no limit)")
	fs.StringVar(&o.sessions, "sessions", DefaultSessions, "session storage `URL`: sqlite://FILE, postgres://..., memory://")
	fs.StringVar(&o.artifacts, "artifacts", DefaultArtifacts, "artifact storage `URL`: file://DIR, memory://")
	fs.StringVar(&o.memory, "memory", DefaultMemory, "memory service `URL`")
	fs.BoolVar(&o.resumable, "resumable", false, "make the applications resumable, as ADK's ResumabilityConfig does: workflow agents record checkpoint events, so that an invocation can continue from the middle of a workflow after a pause or a crash (always on with Temporal)")
}

// newFlagSet returns a flag set that prints its usage to w.
func newFlagSet(name, synopsis string, w io.Writer) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(w)
	fs.Usage = func() {
		fmt.Fprintf(w, "Usage: loom %s\n\nFlags:\n", synopsis)
		fs.PrintDefaults()
	}
	return fs
}

// parse parses args, mapping a parse failure to errUsage (the flag package
// has printed the problem and the usage already).
func parse(fs *flag.FlagSet, args []string) error {
	if err := fs.Parse(args); err != nil {
		if err == flag.ErrHelp {
			return err
		}
		return errUsage
	}
	return nil
}

// redact hides the password of a storage URL for display.
func redact(raw string) string {
	u, err := url.Parse(raw)
	if err != nil || u.User == nil {
		return raw
	}
	return u.Redacted()
}

// splitList splits a comma-separated flag value.
func splitList(s string) []string {
	var out []string
	for _, f := range strings.Split(s, ",") {
		if f = strings.TrimSpace(f); f != "" {
			out = append(out, f)
		}
	}
	return out
}
