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
	// callKeyFile names the file of the key that authenticates stored
	// function calls (see callKey).
	callKeyFile string
	// credentialKeyFile names the file of the key users' credentials are
	// sealed with (see openCredentials).
	credentialKeyFile string
	// authCalls authenticates stored calls without --call-key-file, as
	// "loom api" does (see callKey).
	authCalls bool
	// sessionTTL is the session retention of the applications that set
	// none of their own (App.SessionTTL).
	sessionTTL time.Duration
}

func (o *options) register(fs *flag.FlagSet) {
	fs.StringVar(&o.model, "model", "", "model `name` for the applications (default: the provider's default model if an API key is set, else each application's offline model)")
	fs.DurationVar(&o.modelTimeout, "model-timeout", retry.DefaultTimeout, "how long a model call may wait for a response, or a stream for its next chunk, before the `attempt` is abandoned and retried (negative: no limit)")
	fs.StringVar(&o.sessions, "sessions", DefaultSessions, "session storage `URL`: sqlite://FILE, postgres://..., memory://")
	fs.StringVar(&o.artifacts, "artifacts", DefaultArtifacts, "artifact storage `URL`: file://DIR, memory://")
	fs.StringVar(&o.memory, "memory", DefaultMemory, "memory service `URL`")
	fs.StringVar(&o.callKeyFile, "call-key-file", "", "`file` holding the key (at least 32 random bytes) that authenticates stored function calls, so that a call edited in the session store is refused before its tool runs (loom api, without it: a key kept in "+CallKeyFile+" beside a SQLite session database, or one of the process for memory://)")
	fs.StringVar(&o.credentialKeyFile, "credential-key-file", "", "`file` holding the key (32 bytes in base64 or hex) that seals the credentials users grant to tools, such as OAuth2 tokens, kept per user in the session database (default: $"+EnvCredentialKey+"; without either, they are kept in memory until the process exits)")
	fs.BoolVar(&o.resumable, "resumable", false, "make the applications resumable, as ADK's ResumabilityConfig does: workflow agents record checkpoint events, so that an invocation can continue from the middle of a workflow after a pause or a crash (always on with Temporal)")
}

// newFlagSet returns the flag set of the command cmd ("run", "conformance
// test"), whose synopsis starts with cmd. Its help (-h) goes to env.Stdout
// in full; a command line it cannot parse is said in one line on
// env.Stderr, followed by a pointer to -h, not by the whole help. Calling
// the set's Usage after parsing (a bad positional argument) prints that
// pointer too.
func newFlagSet(cmd, synopsis string, env Env) *flag.FlagSet {
	env.fill()
	fs := flag.NewFlagSet(cmd, flag.ContinueOnError)
	out := &flagOutput{Writer: env.Stderr}
	out.help = func() {
		fmt.Fprintf(env.Stdout, "Usage: %s %s\n\nFlags:\n", env.Name, synopsis)
		fs.SetOutput(env.Stdout)
		fs.PrintDefaults()
		fs.SetOutput(out)
	}
	out.hint = func() {
		fmt.Fprintf(env.Stderr, "Run \"%s %s -h\" for its flags.\n", env.Name, cmd)
	}
	fs.SetOutput(out)
	fs.Usage = func() {
		if !out.parsing {
			out.hint()
		}
	}
	return fs
}

// flagOutput is the output of a flag set made by newFlagSet: the flag
// package writes its parse errors there; parse decides what follows them.
type flagOutput struct {
	io.Writer
	parsing    bool
	help, hint func()
}

// parse parses args. -h prints the command's help on standard output and
// returns flag.ErrHelp; a parse failure (the flag package has said what
// failed) adds a pointer to -h and returns errUsage.
func parse(fs *flag.FlagSet, args []string) error {
	out, _ := fs.Output().(*flagOutput)
	if out == nil {
		if err := fs.Parse(args); err != nil {
			if err == flag.ErrHelp {
				return err
			}
			return errUsage
		}
		return nil
	}
	out.parsing = true
	err := fs.Parse(args)
	out.parsing = false
	switch {
	case err == nil:
		return nil
	case err == flag.ErrHelp:
		out.help()
		return err
	default:
		out.hint()
		return errUsage
	}
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
