// Package cli is the command line of Loom, usable as a library: a program
// that calls [Main] with its own applications gets the same subcommands and
// flags as the loom binary.
//
//	func main() {
//		os.Exit(cli.Main(cli.App{Name: "helpdesk", New: helpdesk.New}))
//	}
//
// # Subcommands
//
//	web    serve the HTTP API and the dev web UI (open the printed URL)
//	api    serve the HTTP API only
//	run    chat with one application in the terminal
//	eval   run ADK eval sets against an application (exit status 1 when a
//	       case misses a threshold)
//	create scaffold a new application (--yaml: an agent config; --go: a Go module)
//	worker run the invocations that web and api start on Temporal
//	conformance
//	       test: run ADK conformance cases in replay mode against Loom (in
//	       process) or any server (--url); record: record cases
//	       (package conformance)
//	completion
//	       print a completion script for bash, zsh or fish
//	help   the commands, or with a command's name its flags
//	version
//
// web and api take --host (default 127.0.0.1), --port (default 8000),
// --allow-origins (comma-separated origins allowed to call the API from a
// browser, "*" for any), --evals (the directory of the eval sets and
// results the evaluation routes serve, default ./.loom/evals) and --a2a
// (also serve every application over the Agent2Agent protocol at
// [A2APath], package server/a2aserver) and --session-ttl (the session
// retention of the applications without one of their own, App.SessionTTL:
// expired sessions are deleted at start and then periodically). run takes the application's name,
// --session to continue a session (its earlier conversation is shown
// first), --user and --no-stream, before or after the name; it does not
// take --host, --port or --allow-origins. In a terminal run edits lines
// with history (golang.org/x/term), shows a thinking state and colours its
// output unless NO_COLOR is set. It exits with status 0 at the end of
// input, 1 when input ends while an approval is pending or (input not
// being a terminal) when a turn fails, and 130 on Ctrl-C.
//
// "help COMMAND" and "COMMAND -h" print the command's flags on standard
// output; a command line that does not parse is said in one line on
// standard error, with status 2.
//
// eval takes the application's name and eval set files, and --config,
// --print-details, --num-runs, --parallel, --judge-model and --evals; it
// exits with status 1 when a case misses a threshold.
//
// # Applications from config files
//
// web and api take directories after their flags: every sub-directory of
// DIR holding a root_agent.yaml (or DIR itself, if it holds one) is an
// application in ADK's Agent Config format (package agentconfig), named
// after its directory and served next to the compiled-in ones; "loom run
// DIR/APP" chats with one. Their config files are read again at the start
// of every invocation when they changed (hot reload, no restart): a version
// that loads replaces the one serving; one that does not keeps the
// previous version serving, and its error (file, line, field) is logged and
// shown in the app list of the API and the dev UI. Go tools, callbacks and
// agents that config files name are registered in [Program.Registry].
//
// # Durable execution
//
// web and api with --temporal HOST:PORT start each invocation as a workflow
// of that Temporal server instead of running it in process; "loom worker
// --temporal HOST:PORT", with the same applications and the same session
// storage, runs them (package durable/temporal). Both take
// --temporal-namespace and --temporal-task-queue; web and api also take
// --temporal-workflow-prefix, which starts the ids of the session
// workflows, so that deployments with session stores of their own can
// share a namespace, and --temporal-feed-addr (and --temporal-feed-url),
// where workers send the events of the turns, partial text included, as
// they are yielded. worker takes --prices, as web and api do.
//
// # Models and storage
//
// Every subcommand takes --model, --sessions, --artifacts and --memory. An
// application built from a constructor ([App.New]) gets the model named by
// --model; without it, the default model of the provider whose API key is in
// the environment; without one, the application's offline model
// ([App.Offline]), so the examples run anywhere. The agents of config files
// get the model named by --model; without it, the model each names (or the
// provider's default) when an API key is set; without one, an offline echo
// model that repeats the user's message, reports tool results and calls
// exit_loop when an agent has it. Storage is named by URL:
// sessions default to sqlite://./.loom/sessions.db, artifacts to
// file://./.loom/artifacts and memory to memory://. On start-up the CLI
// says on stderr which model and which storage it uses.
//
// # Signals
//
// Main stops gracefully on SIGINT and SIGTERM: open streams are cancelled
// and the server shuts down. [Run] leaves signals to its caller and stops
// when its context is done.
package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"strings"
	"syscall"
	"time"

	"github.com/loomkit/loom/agent"
	"github.com/loomkit/loom/agent/agentconfig"
	"github.com/loomkit/loom/eval"
	"github.com/loomkit/loom/model"
)

// Version is reported by "loom version" and GET /version. When empty, the
// module version from the build information is used. Set it at link time
// with -ldflags "-X github.com/loomkit/loom/cli.Version=v1.2.3".
var Version = ""

// App is an application the CLI serves.
type App struct {
	// Name identifies the application in URLs and scopes its sessions.
	// Required.
	Name string
	// Agent is the root agent, used as is (its models are its own).
	Agent agent.Agent
	// New builds the root agent around a model. It is used when Agent is
	// nil, and lets --model and API keys in the environment choose the
	// model.
	New func(llm model.LLM) (agent.Agent, error)
	// Offline returns the model New gets when no model is named and no API
	// key is set: typically a scripted model, so the application works
	// without a network. Optional.
	Offline func() model.LLM
	// SessionTTL is the application's session retention
	// (runner.Config.SessionTTL): when positive, "loom web" and "loom api"
	// delete its sessions unused for longer, with their events, state and
	// artifacts. Zero takes the --session-ttl flag (off by default).
	SessionTTL time.Duration

	// file is set for an application defined by config files (directory
	// mode, fileapps.go).
	file *fileApp
}

// Program is a command line program: the applications compiled into it and
// the registry of Go tools, toolsets, callbacks and agents that the config
// files of applications given as directories can name. Main(apps...) is
// Program{Apps: apps}.Main().
type Program struct {
	// Apps are the applications compiled into the program.
	Apps []App
	// Registry holds what config files may name beyond the built-in tools
	// and agent classes; nil for nothing more.
	Registry *agentconfig.Registry
	// EvalMetrics gives the scorers of the metrics eval configs and eval
	// runs name: ADK's, and custom metrics registered in Go under the
	// names configs use. Nil means [eval.NewRegistry].
	EvalMetrics *eval.Registry
}

// Env is what a run of the CLI reads and writes. Zero fields mean the
// process's own: os.Stdin, os.Stdout, os.Stderr, os.Getenv.
type Env struct {
	// Name is the program's name in its help and messages; default
	// "loom". Main sets it to the name the program was started by.
	Name           string
	Stdin          io.Reader
	Stdout, Stderr io.Writer
	Getenv         func(key string) string
	// Listening, if set, is called with the base URL of the server (web and
	// api) once it accepts connections.
	Listening func(url string)
}

func (e *Env) fill() {
	if e.Name == "" {
		e.Name = "loom"
	}
	if e.Stdin == nil {
		e.Stdin = os.Stdin
	}
	if e.Stdout == nil {
		e.Stdout = os.Stdout
	}
	if e.Stderr == nil {
		e.Stderr = os.Stderr
	}
	if e.Getenv == nil {
		e.Getenv = os.Getenv
	}
}

// errUsage reports a command line that could not be parsed; the usage has
// already been printed.
var errUsage = errors.New("usage")

// Main runs the command line of os.Args with apps, stopping gracefully on
// SIGINT or SIGTERM, and returns the process exit code: 0 on success, 1 on
// failure, 2 for a bad command line, and for "run" stopped by a signal
// 128 plus the signal's number (130 for Ctrl-C). Help and messages name
// the program as it was started (os.Args[0]).
func Main(apps ...App) int {
	return Program{Apps: apps}.Main()
}

// Main runs the command line of os.Args, like the function Main, with the
// program's applications and registry.
func (p Program) Main() int {
	ctx, cancel := context.WithCancelCause(context.Background())
	defer cancel(nil)
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	defer signal.Stop(sigs)
	go func() {
		select {
		case s := <-sigs:
			// A second signal gets the default treatment: it ends a
			// shutdown that hangs.
			signal.Stop(sigs)
			cancel(signalError{s})
		case <-ctx.Done():
		}
	}()
	name := "loom"
	if len(os.Args) > 0 && os.Args[0] != "" {
		name = filepath.Base(os.Args[0])
	}
	return p.Run(ctx, os.Args[1:], Env{Name: name})
}

// signalError is the cause of Main's context when a signal stopped it.
type signalError struct{ sig os.Signal }

func (e signalError) Error() string { return "stopped by " + e.sig.String() }

// interruptedError ends a command that its context or the user (Ctrl-C)
// stopped; the exit code is 128 plus the signal's number.
type interruptedError struct{ sig syscall.Signal }

func (e interruptedError) Error() string { return "interrupted" }

// interrupted returns the error that ends a command whose context is done
// (or whose user pressed Ctrl-C at a prompt, ctx nil): the signal that
// Main received, SIGINT otherwise.
func interrupted(ctx context.Context) error {
	if ctx != nil {
		var se signalError
		if errors.As(context.Cause(ctx), &se) {
			if s, ok := se.sig.(syscall.Signal); ok {
				return interruptedError{s}
			}
		}
	}
	return interruptedError{syscall.SIGINT}
}

// Run runs the command line args (without the program name) with apps and
// returns the exit code, like Main, but without installing signal handlers:
// it stops when ctx is done.
func Run(ctx context.Context, args []string, env Env, apps ...App) int {
	return Program{Apps: apps}.Run(ctx, args, env)
}

// Run runs the command line args, like the function Run, with the
// program's applications and registry.
func (p Program) Run(ctx context.Context, args []string, env Env) int {
	env.fill()
	if len(args) == 0 {
		usage(env.Stderr, env.Name)
		return 2
	}
	var err error
	switch cmd, rest := args[0], args[1:]; cmd {
	case "web":
		err = serve(ctx, env, rest, p, true)
	case "api":
		err = serve(ctx, env, rest, p, false)
	case "run":
		err = chat(ctx, env, rest, p)
	case "eval":
		err = evalCmd(ctx, env, rest, p)
	case "create":
		err = create(env, rest)
	case "worker":
		err = worker(ctx, env, rest, p)
	case "conformance":
		err = conformanceCmd(ctx, env, rest, p)
	case "version", "--version", "-version":
		fmt.Fprintf(env.Stdout, "%s %s (%s %s/%s)\n", env.Name, version(), runtime.Version(), runtime.GOOS, runtime.GOARCH)
	case "completion":
		err = completion(env, rest, p)
	case completeCommand:
		complete(env, rest, p)
	case "help", "-h", "-help", "--help":
		if len(rest) > 0 && rest[0] != "help" && rest[0] != "-h" && rest[0] != "-help" && rest[0] != "--help" {
			return p.Run(ctx, append([]string{rest[0], "-h"}, rest[1:]...), env)
		}
		usage(env.Stdout, env.Name)
	default:
		fmt.Fprintf(env.Stderr, "%s: unknown command %q\nRun \"%s help\" for the commands.\n", env.Name, cmd, env.Name)
		return 2
	}
	var ie interruptedError
	switch {
	case err == nil:
		return 0
	case errors.Is(err, flag.ErrHelp):
		return 0
	case errors.Is(err, errUsage):
		return 2
	case errors.As(err, &ie):
		return 128 + int(ie.sig)
	default:
		fmt.Fprintf(env.Stderr, "%s: %v\n", env.Name, err)
		return 1
	}
}

func usage(w io.Writer, name string) {
	text := `Usage:
  loom web [flags] [DIR]    serve the HTTP API and the dev web UI
  loom api [flags] [DIR]    serve the HTTP API only
  loom run [flags] APP      chat with an application (APP may be DIR/APP)
  loom eval [flags] APP EVALSET...
                            run eval sets against an application
  loom create NAME          scaffold a new application (--yaml or --go)
  loom conformance test [flags] PATH...
                            run ADK conformance cases (replay mode)
  loom conformance record [flags] PATH...
                            record ADK conformance cases
  loom worker --temporal HOST:PORT
                            run invocations started on Temporal
  loom completion bash|zsh|fish
                            print a shell completion script
  loom version              print the version

Run "loom help COMMAND" or "loom COMMAND -h" for the flags of a command.
`
	if name == "loom" {
		text = "Loom: build, run and serve ADK agents.\n\n" + text
	}
	fmt.Fprint(w, strings.ReplaceAll(strings.ReplaceAll(text, "  loom ", "  "+name+" "), `"loom `, `"`+name+" "))
}

// version returns Version, or the main module's version, or "dev".
func version() string {
	if Version != "" {
		return Version
	}
	if bi, ok := debug.ReadBuildInfo(); ok && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
		return bi.Main.Version
	}
	return "dev"
}
