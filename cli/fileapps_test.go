package cli_test

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/loomkit/loom/cli"
)

func writeFile(t *testing.T, path, text string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
}

// appSummary is an entry of /list-apps?detailed=true.
type appSummary struct {
	Name          string `json:"name"`
	RootAgentName string `json:"rootAgentName"`
	Source        string `json:"source"`
	LoadError     string `json:"loadError"`
	Language      string `json:"language"`
}

func listApps(t *testing.T, base string) map[string]appSummary {
	t.Helper()
	res, err := http.Get(base + "/list-apps?detailed=true")
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	var body struct{ Apps []appSummary }
	if err := json.NewDecoder(res.Body).Decode(&body); err != nil {
		t.Fatal(err)
	}
	out := map[string]appSummary{}
	for _, a := range body.Apps {
		out[a.Name] = a
	}
	return out
}

// turn posts one message to /run and returns "author> text" of the answer's
// text parts, or the error detail with the status.
func turn(t *testing.T, base, app, text string) (int, string) {
	t.Helper()
	body, _ := json.Marshal(map[string]any{
		"appName": app, "userId": "u", "sessionId": "s",
		"newMessage": map[string]any{"role": "user", "parts": []any{map[string]any{"text": text}}},
	})
	res, err := http.Post(base+"/run", "application/json", bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	if res.StatusCode != http.StatusOK {
		var e struct{ Detail string }
		json.NewDecoder(res.Body).Decode(&e)
		return res.StatusCode, e.Detail
	}
	var events []struct {
		Author  string
		Content struct{ Parts []struct{ Text string } }
	}
	if err := json.NewDecoder(res.Body).Decode(&events); err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, ev := range events {
		for _, p := range ev.Content.Parts {
			if p.Text != "" {
				out = append(out, ev.Author+"> "+p.Text)
			}
		}
	}
	return res.StatusCode, strings.Join(out, "\n")
}

func createSession(t *testing.T, base, app string) {
	t.Helper()
	res, err := http.Post(base+"/apps/"+app+"/users/u/sessions/s", "application/json", strings.NewReader("{}"))
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != http.StatusOK {
		t.Fatalf("create session: %d", res.StatusCode)
	}
}

// TestDirectoryHotReload serves a directory of YAML apps next to a
// compiled-in app with "loom api DIR", offline: an edit to an app's file is
// used by the next turn without a restart; a broken edit keeps the previous
// version serving and is reported by the app list and the log; fixing it
// takes effect again; an app that never loaded answers with its error.
func TestDirectoryHotReload(t *testing.T) {
	dir := t.TempDir()
	helper := filepath.Join(dir, "helper", "root_agent.yaml")
	writeFile(t, helper, "name: helper\nmodel: gemini-2.5-flash\ninstruction: Help.\n")
	writeFile(t, filepath.Join(dir, "broken", "root_agent.yaml"), "name: broken\ninstruction: x\ntols: []\n")
	writeFile(t, filepath.Join(dir, "notes", "README.md"), "not an app\n")

	var log syncBuffer
	base := startServerLog(t, []string{"api", dir}, &log, assistantApp)

	apps := listApps(t, base)
	if len(apps) != 3 {
		t.Fatalf("apps = %v, want assistant, broken, helper", apps)
	}
	if a := apps["assistant"]; a.Source != "" || a.LoadError != "" || a.Language != "go" {
		t.Errorf("compiled-in app reports %+v", a)
	}
	// As in ADK, an app defined by its config file is a "yaml" app.
	if a := apps["helper"]; a.Source != helper || a.LoadError != "" || a.RootAgentName != "helper" || a.Language != "yaml" {
		t.Errorf("helper = %+v", a)
	}
	if a := apps["broken"]; !strings.Contains(a.LoadError, "root_agent.yaml:3:1: tols: is not a known key") || a.Language != "yaml" {
		t.Errorf("broken = %+v", a)
	}

	createSession(t, base, "helper")
	if code, got := turn(t, base, "helper", "hello"); code != 200 || got != "helper> [offline echo] hello" {
		t.Fatalf("first turn = %d %q", code, got)
	}

	// An edit: the next turn runs the new agent.
	writeFile(t, helper, "agent_class: SequentialAgent\nname: pipeline\nsub_agents:\n  - name: first\n    instruction: One.\n  - name: second\n    instruction: Two.\n")
	if code, got := turn(t, base, "helper", "again"); code != 200 || got != "first> [offline echo] again\nsecond> [offline echo] again" {
		t.Fatalf("turn after the edit = %d %q", code, got)
	}
	if a := listApps(t, base)["helper"]; a.RootAgentName != "pipeline" {
		t.Errorf("app list after the edit: %+v", a)
	}

	// A broken edit: the previous version keeps serving; the error is in
	// the app list and the log.
	writeFile(t, helper, "agent_class: SequentialAgent\nname: pipeline\nsub_agents:\n  - name: first\n    instruction: One.\n    temperature: 2\n")
	if code, got := turn(t, base, "helper", "still"); code != 200 || got != "first> [offline echo] still\nsecond> [offline echo] still" {
		t.Fatalf("turn after a broken edit = %d %q", code, got)
	}
	a := listApps(t, base)["helper"]
	if !strings.Contains(a.LoadError, "root_agent.yaml:6:5: sub_agents[0].temperature: is not a known key") || a.RootAgentName != "pipeline" {
		t.Errorf("app list after a broken edit: %+v", a)
	}
	if !strings.Contains(log.String(), "sub_agents[0].temperature: is not a known key") || !strings.Contains(log.String(), "the previous version keeps serving") {
		t.Errorf("log does not report the broken edit:\n%s", log.String())
	}

	// The fix takes effect, and the error is gone.
	writeFile(t, helper, "name: helper\ninstruction: Help again.\n")
	if code, got := turn(t, base, "helper", "fixed"); code != 200 || got != "helper> [offline echo] fixed" {
		t.Fatalf("turn after the fix = %d %q", code, got)
	}
	if a := listApps(t, base)["helper"]; a.LoadError != "" {
		t.Errorf("app list after the fix: %+v", a)
	}

	// The app that never loaded answers with its error.
	createSession(t, base, "broken")
	if code, got := turn(t, base, "broken", "hi"); code == 200 || !strings.Contains(got, "tols: is not a known key") {
		t.Errorf("broken app turn = %d %q", code, got)
	}
}

// startServerLog is startServerArgs with the server's stderr in log.
func startServerLog(t *testing.T, args []string, log *syncBuffer, apps ...cli.App) string {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	urls := make(chan string, 1)
	done := make(chan int, 1)
	go func() {
		done <- cli.Run(ctx, append(append([]string(nil), args...), "--port", "0", "--sessions", "memory://", "--artifacts", "memory://"),
			cli.Env{Stdout: log, Stderr: log, Getenv: noEnv, Listening: func(u string) { urls <- u }}, apps...)
	}()
	t.Cleanup(func() {
		cancel()
		if code := <-done; code != 0 {
			t.Errorf("loom %v exited with %d:\n%s", args, code, log.String())
		}
	})
	select {
	case u := <-urls:
		return u
	case code := <-done:
		t.Fatalf("loom %v exited with %d:\n%s", args, code, log.String())
	}
	return ""
}

// TestRunFileApp chats with a YAML app given by its directory.
func TestRunFileApp(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "echoer", "root_agent.yaml"), "agent_class: LoopAgent\nname: loop\nsub_agents:\n  - name: critic\n    instruction: Critique.\n    tools:\n      - name: exit_loop\n")
	var out, errb syncBuffer
	code := cli.Run(context.Background(), []string{"run", "--sessions", "memory://", "--artifacts", "memory://", filepath.Join(dir, "echoer")},
		cli.Env{Stdin: strings.NewReader("hi\n"), Stdout: &out, Stderr: &errb, Getenv: noEnv})
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	if !strings.Contains(out.String(), `[critic] ← exit_loop: {"result":null}`) {
		t.Errorf("stdout = %q", out.String())
	}
	if !strings.Contains(errb.String(), "offline echo model") {
		t.Errorf("stderr does not say which model: %q", errb.String())
	}
}

// TestDirectoryErrors refuses directories without apps and name clashes.
func TestDirectoryErrors(t *testing.T) {
	empty := t.TempDir()
	code, _, errb := runArgs(t, "api", "--port", "0", empty)
	if code != 1 || !strings.Contains(errb, "no application in") {
		t.Errorf("empty dir: %d %q", code, errb)
	}
	clash := t.TempDir()
	writeFile(t, filepath.Join(clash, "assistant", "root_agent.yaml"), "name: a\ninstruction: x\n")
	code, _, errb = runArgs(t, "api", "--port", "0", clash)
	if code != 1 || !strings.Contains(errb, "two applications are named assistant") {
		t.Errorf("clash: %d %q", code, errb)
	}
}

func runArgs(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	var out, errb syncBuffer
	code := cli.Run(context.Background(), args, cli.Env{Stdin: strings.NewReader(""), Stdout: &out, Stderr: &errb, Getenv: noEnv}, assistantApp)
	return code, out.String(), errb.String()
}

// TestUnreadableFileDoesNotReload: a YAML name that cannot be read (an
// editor's lock file, a broken symlink) in an app's directory does not
// make every turn load the app again; an edit still does.
func TestUnreadableFileDoesNotReload(t *testing.T) {
	dir := t.TempDir()
	root := filepath.Join(dir, "helper", "root_agent.yaml")
	writeFile(t, root, "name: helper\ninstruction: Help.\n")
	if err := os.Symlink(filepath.Join(dir, "nowhere"), filepath.Join(dir, "helper", ".#root_agent.yaml")); err != nil {
		t.Fatal(err)
	}
	var log syncBuffer
	base := startServerLog(t, []string{"api", dir}, &log)
	createSession(t, base, "helper")
	for _, text := range []string{"one", "two", "three"} {
		if code, got := turn(t, base, "helper", text); code != 200 || got != "helper> [offline echo] "+text {
			t.Fatalf("turn %q = %d %q", text, code, got)
		}
	}
	if strings.Contains(log.String(), "reloaded") {
		t.Fatalf("the app reloaded without an edit:\n%s", log.String())
	}
	writeFile(t, root, "name: helper2\ninstruction: Help.\n")
	if code, got := turn(t, base, "helper", "four"); code != 200 || got != "helper2> [offline echo] four" {
		t.Fatalf("turn after an edit = %d %q", code, got)
	}
}

// TestDirectoryAppNames refuses, before serving, an app directory whose
// name breaks the naming rule of apps and agents (agentconfig.CheckName):
// one longer than any route accepts, or one that is not an identifier, in
// a directory of apps or given itself; the error names the directory.
func TestDirectoryAppNames(t *testing.T) {
	long := strings.Repeat("a", 129)
	parent := t.TempDir()
	writeFile(t, filepath.Join(parent, "fine", "root_agent.yaml"), "name: a\ninstruction: x\n")
	writeFile(t, filepath.Join(parent, long, "root_agent.yaml"), "name: b\ninstruction: x\n")
	code, errb := refusedArgs(t, "api", "--port", "0", parent)
	if code != 1 || !strings.Contains(errb, long) || !strings.Contains(errb, "bytes") {
		t.Errorf("a sub-directory named with 129 bytes: exit %d %q, want 1 and an error naming it", code, errb)
	}
	for _, name := range []string{"my app", "v1.2"} {
		dir := filepath.Join(t.TempDir(), name)
		writeFile(t, filepath.Join(dir, "root_agent.yaml"), "name: a\ninstruction: x\n")
		code, errb := refusedArgs(t, "api", "--port", "0", dir)
		if code != 1 || !strings.Contains(errb, name) {
			t.Errorf("app directory %q: exit %d %q, want 1 and an error naming it", name, code, errb)
		}
	}
}

// refusedArgs runs a command that should fail at once; a server that
// starts instead is stopped after 10 seconds.
func refusedArgs(t *testing.T, args ...string) (int, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var out, errb syncBuffer
	code := cli.Run(ctx, append([]string{args[0], "--sessions", "memory://", "--artifacts", "memory://"}, args[1:]...),
		cli.Env{Stdin: strings.NewReader(""), Stdout: &out, Stderr: &errb, Getenv: noEnv}, assistantApp)
	return code, errb.String()
}
