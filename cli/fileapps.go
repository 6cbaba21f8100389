package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"iter"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/loomkit/loom/agent"
	"github.com/loomkit/loom/agent/agentconfig"
	"github.com/loomkit/loom/event"
	"github.com/loomkit/loom/server"
)

// retireAfter is how long the agents of a replaced version of a file app
// stay open (their MCP sessions, for calls still under way) after a newer
// version takes over. A variable for the tests.
var retireAfter = time.Minute

// fileApp is an application defined by a directory holding
// root_agent.yaml. At the start of every invocation (runner.Config.Refresh)
// it checks whether its config files changed and, if so, loads them again:
// a version that loads replaces the one serving; one that does not is
// reported and the previous version keeps serving.
type fileApp struct {
	name string
	dir  string // absolute
	log  *lockedWriter
	opts agentconfig.Options

	mu      sync.Mutex
	fp      dirFingerprint   // the files as of the last look
	cur     *agentconfig.App // nil until a version has loaded
	sum     string           // fingerprint of the files the last attempt read
	err     error            // of the last attempt, nil if it loaded
	loaded  bool             // an attempt has been made
	missing agent.Agent      // answers while no version has loaded
}

// newFileApp returns the app named name of the directory dir (absolute).
func newFileApp(name, dir string) *fileApp {
	return &fileApp{name: name, dir: dir, fp: dirFingerprint{dir: dir}}
}

// findFileApps returns the applications of a directory argument: the
// directory itself when it holds root_agent.yaml, else each sub-directory
// that holds one.
func findFileApps(dir string) ([]*fileApp, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, err
	}
	if isApp(abs) {
		if err := checkAppDir(abs); err != nil {
			return nil, err
		}
		return []*fileApp{newFileApp(filepath.Base(abs), abs)}, nil
	}
	entries, err := os.ReadDir(abs)
	if err != nil {
		return nil, fmt.Errorf("apps directory: %w", err)
	}
	var apps []*fileApp
	for _, e := range entries {
		p := filepath.Join(abs, e.Name())
		if e.IsDir() && !strings.HasPrefix(e.Name(), ".") && isApp(p) {
			if err := checkAppDir(p); err != nil {
				return nil, err
			}
			apps = append(apps, newFileApp(e.Name(), p))
		}
	}
	if len(apps) == 0 {
		return nil, fmt.Errorf("no application in %s: an application is a directory holding %s", dir, agentconfig.RootFile)
	}
	return apps, nil
}

// checkAppDir refuses an app directory whose name cannot name an app: the
// app would be listed while every route naming it fails. The rule is that
// of agent names (agentconfig.CheckName).
func checkAppDir(dir string) error {
	if err := agentconfig.CheckName(filepath.Base(dir)); err != nil {
		return fmt.Errorf("app directory %s: %w", dir, err)
	}
	return nil
}

func isApp(dir string) bool {
	fi, err := os.Stat(filepath.Join(dir, agentconfig.RootFile))
	return err == nil && fi.Mode().IsRegular()
}

// start loads the first version; a failure is reported, and the app
// answers every message with the error until a version loads.
func (f *fileApp) start(opts agentconfig.Options, log *lockedWriter) agent.Agent {
	f.opts, f.log = opts, log
	f.missing = mustAgent(agent.New(agent.Config{
		Name:        "root_agent",
		Description: "This application's config files do not load.",
		Run:         f.runMissing,
	}))
	if a := f.refresh(context.Background()); a != nil {
		return a
	}
	return f.missing
}

func mustAgent(a *agent.Custom, err error) agent.Agent {
	if err != nil {
		panic(err)
	}
	return a
}

// runMissing is the agent of an app none of whose versions has loaded.
func (f *fileApp) runMissing(context.Context, *agent.Invocation) iter.Seq2[*event.Event, error] {
	return func(yield func(*event.Event, error) bool) {
		f.mu.Lock()
		err := f.err
		f.mu.Unlock()
		yield(nil, fmt.Errorf("app %s does not load: %w", f.name, err))
	}
}

// refresh is the runner's Config.Refresh: it returns the agent of the
// newest version that loads, or nil while no version has loaded.
// Every call looks at the files (a walk of stats, reading only files
// whose metadata changed, see dirFingerprint), so an edit is used by the
// first turn that starts after it.
func (f *fileApp) refresh(context.Context) agent.Agent {
	f.mu.Lock()
	defer f.mu.Unlock()
	sum, err := f.fp.sum()
	if err != nil {
		// A directory the fingerprint cannot cover (too many files) is a
		// state too: only a change of it reloads.
		sum = "unreadable: " + err.Error()
	}
	if f.loaded && sum == f.sum {
		return f.root()
	}
	f.sum, f.loaded = sum, true
	app, err := agentconfig.Load(f.dir, &f.opts)
	if err != nil {
		f.err = err
		if f.cur != nil {
			f.log.printf("loom: app %s: %v (the previous version keeps serving)\n", f.name, err)
		} else {
			f.log.printf("loom: app %s: %v\n", f.name, err)
		}
		return f.root()
	}
	if old := f.cur; old != nil {
		f.log.printf("loom: app %s: reloaded %s\n", f.name, filepath.Join(f.dir, agentconfig.RootFile))
		time.AfterFunc(retireAfter, func() { _ = old.Close() })
	}
	f.cur, f.err = app, nil
	return app.Root
}

// loadError returns the error of the last load when no version has
// loaded, else nil.
func (f *fileApp) loadError() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.cur != nil {
		return nil
	}
	if f.err == nil {
		return errors.New("not loaded")
	}
	return f.err
}

func (f *fileApp) root() agent.Agent {
	if f.cur == nil {
		return nil
	}
	return f.cur.Root
}

// status reports the app's source and its latest load error.
func (f *fileApp) status() server.AppStatus {
	f.mu.Lock()
	defer f.mu.Unlock()
	st := server.AppStatus{Source: filepath.Join(f.dir, agentconfig.RootFile), Language: "yaml"}
	if f.err != nil {
		st.LoadError = f.err.Error()
	}
	return st
}

// close closes the serving version.
func (f *fileApp) close() {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.cur != nil {
		_ = f.cur.Close()
		f.cur = nil
	}
}

// lockedWriter serializes writes from the apps' reloads.
type lockedWriter struct {
	mu sync.Mutex
	w  io.Writer
}

// Write implements io.Writer.
func (l *lockedWriter) Write(b []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(b)
}

func (l *lockedWriter) printf(format string, args ...any) {
	l.mu.Lock()
	defer l.mu.Unlock()
	fmt.Fprintf(l.w, format, args...)
}

// fileAppsOf returns the file apps among apps.
func fileAppsOf(apps []App) []*fileApp {
	var out []*fileApp
	for _, a := range apps {
		if a.file != nil {
			out = append(out, a.file)
		}
	}
	return out
}

// withFileApps adds the applications of the directory arguments to apps.
func withFileApps(apps []App, dirs []string) ([]App, error) {
	all := slices.Clone(apps)
	seen := map[string]bool{}
	for _, a := range apps {
		seen[a.Name] = true
	}
	for _, d := range dirs {
		found, err := findFileApps(d)
		if err != nil {
			return nil, err
		}
		for _, f := range found {
			if seen[f.name] {
				return nil, fmt.Errorf("two applications are named %s (%s)", f.name, f.dir)
			}
			seen[f.name] = true
			all = append(all, App{Name: f.name, file: f})
		}
	}
	return all, nil
}

// statusOf returns the server's Status function for the file apps among
// apps, or nil when there are none.
func statusOf(apps []App) func(string) server.AppStatus {
	files := map[string]*fileApp{}
	for _, f := range fileAppsOf(apps) {
		files[f.name] = f
	}
	if len(files) == 0 {
		return nil
	}
	return func(name string) server.AppStatus {
		if f := files[name]; f != nil {
			return f.status()
		}
		return server.AppStatus{}
	}
}

// closeFileApps closes the serving versions of the file apps among apps.
func closeFileApps(apps []App) {
	for _, f := range fileAppsOf(apps) {
		f.close()
	}
}
