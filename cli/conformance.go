package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/loomkit/loom/conformance"
	"github.com/loomkit/loom/session"
)

// conformanceCmd runs "loom conformance test|record".
func conformanceCmd(ctx context.Context, env Env, args []string, p Program) error {
	if len(args) == 0 || (args[0] != "test" && args[0] != "record") {
		return conformanceUsage(env, args)
	}
	sub, rest := args[0], args[1:]
	synopsis := "conformance test [flags] PATH...\n\nRuns the ADK conformance cases (directories holding spec.yaml) under each PATH in replay mode and compares the sessions they leave with the recorded ones. Without --url, Loom is started in process on the cases' agents folder."
	if sub == "record" {
		synopsis = "conformance record [flags] PATH...\n\nRecords the cases under each PATH from a live model (--model or a provider's API key), writing generated-recordings.yaml and generated-session.yaml; with --from-session, writes a case from a stored session instead."
	}
	fs := newFlagSet("conformance "+sub, synopsis, env)
	var o options
	o.register(fs)
	mode := fs.String("mode", "replay", "`mode` of the run: replay (live is not implemented, as in ADK)")
	streaming := fs.String("streaming-mode", conformance.StreamingNone, "`mode` of the runs: none (/run_sse without streaming) or sse")
	url := fs.String("url", "", "base `URL` of an ADK-compatible server started with its conformance protocol on (loom api --conformance); default: Loom in process")
	agents := fs.String("agents", "", "`directory` of the agents the cases name (default: the agents folder beside the nearest ancestor of PATH holding one)")
	fromSession := fs.String("from-session", "", "record: write a case from the stored session `APP/USER/SESSION` (of --sessions) into the single PATH")
	paths, err := parseInterspersed(fs, rest)
	if err != nil {
		return err
	}
	if *streaming != conformance.StreamingNone && *streaming != conformance.StreamingSSE {
		fmt.Fprintf(env.Stderr, "loom conformance: --streaming-mode must be none or sse\n")
		return errUsage
	}
	if len(paths) == 0 {
		fmt.Fprintf(env.Stderr, "loom conformance %s: no PATH given\n", sub)
		fs.Usage()
		return errUsage
	}
	if sub == "record" && *fromSession != "" {
		return caseFromSession(ctx, &o, *fromSession, paths)
	}
	if sub == "test" && *mode != "replay" {
		return fmt.Errorf("conformance: mode %q is not implemented (only replay)", *mode)
	}
	cases, err := conformance.Discover(paths)
	if err != nil {
		return err
	}
	base := *url
	if base == "" {
		dir := *agents
		if dir == "" {
			if dir, err = findAgents(paths[0]); err != nil {
				return err
			}
		}
		var stop func() error
		base, stop, err = startConformanceServer(ctx, env, p, &o, dir, paths)
		if err != nil {
			return err
		}
		defer stop()
	}
	client := &conformance.Client{BaseURL: base}
	if sub == "record" {
		return recordCases(ctx, env, client, cases, *streaming)
	}
	return testCases(ctx, env, client, cases, *streaming)
}

// conformanceUsage prints the usage of "loom conformance" when args name
// no subcommand, and returns the error to end with.
func conformanceUsage(env Env, args []string) error {
	fmt.Fprint(env.Stderr, `Usage:
  loom conformance test [flags] PATH...     run ADK conformance cases in replay mode
  loom conformance record [flags] PATH...   record cases from a live model

Run "loom conformance test -h" for the flags.
`)
	if len(args) > 0 && (args[0] == "-h" || args[0] == "--help" || args[0] == "help") {
		return flag.ErrHelp
	}
	return errUsage
}

// recordCases records each case through client and reports each outcome.
func recordCases(ctx context.Context, env Env, client *conformance.Client, cases []*conformance.Case, streaming string) error {
	var failed int
	for _, c := range cases {
		if err := client.Record(ctx, c, streaming); err != nil {
			failed++
			fmt.Fprintf(env.Stdout, "FAIL %s\n%s\n", c.ID(), indent(err.Error()))
			continue
		}
		fmt.Fprintf(env.Stdout, "recorded %s\n", c.ID())
	}
	fmt.Fprintf(env.Stdout, "%d recorded, %d failed\n", len(cases)-failed, failed)
	if failed > 0 {
		return fmt.Errorf("%d case(s) not recorded", failed)
	}
	return nil
}

// testCases runs, in replay mode through client, each case recorded for
// the streaming mode, and reports each outcome.
func testCases(ctx context.Context, env Env, client *conformance.Client, cases []*conformance.Case, streaming string) error {
	var passed, failed int
	for _, c := range cases {
		if _, err := os.Stat(conformance.RecordingsPath(c.Dir, streaming)); err != nil {
			fmt.Fprintf(env.Stderr, "skipping %s: no recordings for streaming mode %s\n", c.ID(), streaming)
			continue
		}
		res := client.Run(ctx, c, streaming)
		if res.Passed() {
			passed++
			fmt.Fprintf(env.Stdout, "PASS %s\n", c.ID())
			continue
		}
		failed++
		fmt.Fprintf(env.Stdout, "FAIL %s\n%s\n", c.ID(), indent(res.Err.Error()))
	}
	fmt.Fprintf(env.Stdout, "%d passed, %d failed\n", passed, failed)
	if failed > 0 {
		return fmt.Errorf("%d conformance case(s) failed", failed)
	}
	return nil
}

func indent(s string) string {
	return "  " + strings.ReplaceAll(s, "\n", "\n  ")
}

// findAgents returns the agents folder beside path or beside its nearest
// ancestor holding one.
func findAgents(path string) (string, error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return "", err
	}
	for d := abs; ; d = filepath.Dir(d) {
		if fi, err := os.Stat(filepath.Join(d, "agents")); err == nil && fi.IsDir() {
			return filepath.Join(d, "agents"), nil
		}
		if filepath.Dir(d) == d {
			return "", fmt.Errorf("conformance: no agents folder beside %s or its parents: pass --agents", path)
		}
	}
}

// startConformanceServer serves the agents of dir in process, with the
// conformance protocol on for the case directories under paths, in-memory
// storage and a free loopback port. stop shuts it down.
func startConformanceServer(ctx context.Context, env Env, p Program, o *options, dir string, paths []string) (string, func() error, error) {
	roots := make([]string, len(paths))
	for i, pth := range paths {
		abs, err := filepath.Abs(pth)
		if err != nil {
			return "", nil, err
		}
		roots[i] = abs
	}
	restore, err := mcpEverythingShim(env)
	if err != nil {
		return "", nil, err
	}
	args := []string{"--host", "127.0.0.1", "--port", "0", "--sessions", "memory://", "--artifacts", "memory://",
		"--evals", filepath.Join(os.TempDir(), "loom-conformance-evals"),
		"--conformance", "--conformance-root", strings.Join(roots, ",")}
	if o.model != "" {
		args = append(args, "--model", o.model)
	}
	args = append(args, dir)
	sctx, cancel := context.WithCancel(ctx)
	var log bytes.Buffer
	ready := make(chan string, 1)
	done := make(chan error, 1)
	senv := env
	senv.Stderr = &lockedWriter{w: &log}
	senv.Listening = func(u string) { ready <- u }
	go func() { done <- serve(sctx, senv, args, Program{Apps: p.Apps, Registry: p.Registry}, false) }()
	stop := func() error {
		cancel()
		err := <-done
		restore()
		return err
	}
	select {
	case u := <-ready:
		return u, stop, nil
	case err := <-done:
		cancel()
		restore()
		return "", nil, fmt.Errorf("conformance: starting Loom: %v\n%s", err, log.String())
	}
}

// mcpEverythingShim lets the suite's MCP agent, which starts
// "npx -y @modelcontextprotocol/server-everything", find the server that
// scripts/mcp-server.sh installed without downloading it: the release ADK's
// recording was made against (LOOM_MCP_EVERYTHING_ADK, from
// "scripts/mcp-server.sh adk") when set, else LOOM_MCP_EVERYTHING. An npx
// earlier in PATH runs that executable for that package and the real npx
// for anything else. restore undoes it.
func mcpEverythingShim(env Env) (restore func(), err error) {
	bin := env.Getenv("LOOM_MCP_EVERYTHING_ADK")
	if bin == "" {
		bin = env.Getenv("LOOM_MCP_EVERYTHING")
	}
	if bin == "" {
		return func() {}, nil
	}
	dir, err := os.MkdirTemp("", "loom-npx-")
	if err != nil {
		return nil, err
	}
	script := "#!/bin/sh\nif [ \"$1\" = -y ] && [ \"$2\" = @modelcontextprotocol/server-everything ]; then shift 2; exec " + shellQuote(bin) + " \"$@\"; fi\n" +
		"PATH=" + shellQuote(os.Getenv("PATH")) + " exec npx \"$@\"\n"
	if err := os.WriteFile(filepath.Join(dir, "npx"), []byte(script), 0o755); err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	old := os.Getenv("PATH")
	os.Setenv("PATH", dir+string(os.PathListSeparator)+old)
	return func() {
		os.Setenv("PATH", old)
		os.RemoveAll(dir)
	}, nil
}

func shellQuote(s string) string {
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// caseFromSession writes a case (spec.yaml and generated-session.yaml)
// from a stored session named APP/USER/SESSION.
func caseFromSession(ctx context.Context, o *options, name string, paths []string) error {
	parts := strings.Split(name, "/")
	if len(parts) != 3 || parts[0] == "" || parts[1] == "" || parts[2] == "" {
		return errors.New("conformance: --from-session takes APP/USER/SESSION")
	}
	if len(paths) != 1 {
		return errors.New("conformance: --from-session writes one case: give one PATH")
	}
	svc, err := openServices(ctx, o)
	if err != nil {
		return err
	}
	defer svc.close()
	s, err := svc.sessions.Get(ctx, session.Key{AppName: parts[0], UserID: parts[1], SessionID: parts[2]}, nil)
	if err != nil {
		return err
	}
	b, err := json.Marshal(s)
	if err != nil {
		return err
	}
	var tree map[string]any
	if err := json.Unmarshal(b, &tree); err != nil {
		return err
	}
	return conformance.WriteCase(paths[0], tree)
}
