package cli_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/loomkit/loom/agent/agentconfig"
	"github.com/loomkit/loom/cli"
	"github.com/loomkit/loom/model"
	"github.com/loomkit/loom/model/scripted"
)

// TestCreateYAML scaffolds a YAML app, which loads and answers offline at
// once.
func TestCreateYAML(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "my-helper")
	code, out, errb := runArgs(t, "create", dir)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errb)
	}
	if !strings.Contains(out, "root_agent.yaml") || !strings.Contains(out, "loom web "+dir) {
		t.Errorf("stdout = %q", out)
	}
	var asked []string
	app, err := agentconfig.Load(dir, &agentconfig.Options{Model: func(name string) (model.LLM, error) {
		asked = append(asked, name)
		return scripted.NewSequence(name), nil
	}})
	if err != nil {
		t.Fatal(err)
	}
	defer app.Close()
	if app.Root.Name() != "my_helper_agent" || len(asked) != 1 || asked[0] != "gemini-2.5-flash" {
		t.Errorf("root %s, models asked %v", app.Root.Name(), asked)
	}
	var stdout, stderr syncBuffer
	code = cli.Run(context.Background(), []string{"run", "--sessions", "memory://", "--artifacts", "memory://", dir},
		cli.Env{Stdin: strings.NewReader("hello there\n"), Stdout: &stdout, Stderr: &stderr, Getenv: noEnv})
	if code != 0 {
		t.Fatalf("run exit %d: %s", code, stderr.String())
	}
	if !strings.Contains(stdout.String(), "[offline echo] hello there") {
		t.Errorf("answer = %q", stdout.String())
	}
	if !strings.Contains(stderr.String(), "apps: my-helper (from ") {
		t.Errorf("stderr = %q", stderr.String())
	}

	// A second create into the same directory is refused.
	if code, _, errb := runArgs(t, "create", dir); code != 1 || !strings.Contains(errb, "not empty") {
		t.Errorf("create over an app: %d %q", code, errb)
	}
}

// TestCreateUsage refuses bad names and flags.
func TestCreateUsage(t *testing.T) {
	tmp := t.TempDir()
	for _, args := range [][]string{{"create"}, {"create", "--yaml", "--go", filepath.Join(tmp, "a")}, {"create", "a", "b"}} {
		if code, _, _ := runArgs(t, args...); code != 2 {
			t.Errorf("%q: exit %d, want 2", args, code)
		}
	}
	for _, name := range []string{"9lives", "a.b", "a" + strings.Repeat("b", 63)} {
		if code, _, errb := runArgs(t, "create", filepath.Join(tmp, name)); code != 1 || !strings.Contains(errb, "not a valid application name") {
			t.Errorf("bad name %q: %d %q", name, code, errb)
		}
	}
	// The longest name accepted: 63 characters.
	if code, _, errb := runArgs(t, "create", filepath.Join(tmp, "a"+strings.Repeat("b", 62))); code != 0 {
		t.Errorf("63-character name: %d %q", code, errb)
	}
}

// TestCreateGo scaffolds a Go module and builds and tests it against this
// checkout of Loom (a replace directive the test adds), offline.
func TestCreateGo(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a module")
	}
	dir := filepath.Join(t.TempDir(), "capitals")
	code, out, errb := runArgs(t, "create", "--go", dir)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errb)
	}
	for _, f := range []string{"go.mod", "main.go", "agent.go", "agent_test.go", "capitals.evalset.json"} {
		if _, err := os.Stat(filepath.Join(dir, f)); err != nil {
			t.Errorf("%s: %v (stdout %q)", f, err, out)
		}
	}
	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	mod, err := os.ReadFile(filepath.Join(dir, "go.mod"))
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(mod), "replace") {
		t.Fatalf("the scaffold's go.mod has a replace directive:\n%s", mod)
	}
	mod = append(mod, []byte("\nrequire github.com/loomkit/loom v0.0.0\n\nreplace github.com/loomkit/loom => "+root+"\n")...)
	if err := os.WriteFile(filepath.Join(dir, "go.mod"), mod, 0o644); err != nil {
		t.Fatal(err)
	}
	// The checkout's go.sum has the hashes of every module the scaffold
	// needs, so nothing is fetched or looked up.
	sum, err := os.ReadFile(filepath.Join(root, "go.sum"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "go.sum"), sum, 0o644); err != nil {
		t.Fatal(err)
	}
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Fatal("no go command in PATH: the scaffold cannot be built")
	}
	for _, args := range [][]string{{"mod", "tidy"}, {"vet", "./..."}, {"test", "./..."}, {"build", "-o", os.DevNull, "."}} {
		cmd := exec.Command(goBin, args...)
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "GOPROXY=off", "GOSUMDB=off", "GOFLAGS=-mod=mod", "GOWORK=off", "GOTOOLCHAIN=local")
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("go %s: %v\n%s", strings.Join(args, " "), err, out)
		}
	}
}
