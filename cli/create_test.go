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

// TestCreateGo scaffolds a Go module against this checkout of Loom
// (--loom: a replace directive) and builds and tests it, offline: its test
// runs the eval set with evaltest.Check.
func TestCreateGo(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a module")
	}
	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(t.TempDir(), "capitals")
	code, out, errb := runArgs(t, "create", "--go", "--loom", root, dir)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errb)
	}
	for _, f := range []string{"go.mod", "main.go", "agent.go", "agent_test.go", "capitals.evalset.json"} {
		if _, err := os.Stat(filepath.Join(dir, f)); err != nil {
			t.Errorf("%s: %v (stdout %q)", f, err, out)
		}
	}
	if strings.Contains(out, "go get") || strings.Contains(out, "go mod edit") {
		t.Errorf("next steps for a module with a replace directive: %q", out)
	}
	mod, err := os.ReadFile(filepath.Join(dir, "go.mod"))
	if err != nil {
		t.Fatal(err)
	}
	rel, _ := filepath.Rel(dir, root)
	if !strings.Contains(string(mod), "require github.com/loomkit/loom v0.0.0\n") || !strings.Contains(string(mod), "replace github.com/loomkit/loom => "+filepath.ToSlash(rel)+"\n") {
		t.Fatalf("go.mod:\n%s", mod)
	}
	test, err := os.ReadFile(filepath.Join(dir, "agent_test.go"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(test), `evaltest.Check(t, root, "capitals.evalset.json")`) || strings.Contains(string(test), "json.Unmarshal") {
		t.Errorf("the scaffold's test does not use evaltest.Check:\n%s", test)
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
	for _, args := range [][]string{{"mod", "tidy"}, {"vet", "./..."}, {"test", "-v", "-run", "TestEvalSet", "./..."}, {"test", "./..."}, {"build", "-o", os.DevNull, "."}} {
		cmd := exec.Command(goBin, args...)
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "GOPROXY=off", "GOSUMDB=off", "GOFLAGS=-mod=mod", "GOWORK=off", "GOTOOLCHAIN=local")
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("go %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		if args[0] == "test" && args[1] == "-v" && !strings.Contains(string(out), "--- PASS: TestEvalSet") {
			t.Errorf("the eval set test did not run:\n%s", out)
		}
	}
}

// TestCreateGoInCheckout: a Go module created inside a checkout of Loom
// builds against it (a relative replace directive); one created elsewhere
// by a development build says how to point at a checkout, since no
// released version is known.
func TestCreateGoInCheckout(t *testing.T) {
	checkout := t.TempDir()
	if err := os.WriteFile(filepath.Join(checkout, "go.mod"), []byte("module github.com/loomkit/loom\n\ngo 1.26\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(checkout, "apps", "capitals")
	code, out, errb := runArgs(t, "create", "--go", dir)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errb)
	}
	mod, err := os.ReadFile(filepath.Join(dir, "go.mod"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(mod), "replace github.com/loomkit/loom => ../..\n") || strings.Contains(out, "go get") || strings.Contains(out, "go mod edit") {
		t.Errorf("go.mod:\n%s\nstdout: %s", mod, out)
	}

	outside := filepath.Join(t.TempDir(), "capitals")
	code, out, errb = runArgs(t, "create", "--go", outside)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errb)
	}
	mod, _ = os.ReadFile(filepath.Join(outside, "go.mod"))
	if strings.Contains(string(mod), "replace") || !strings.Contains(out, "go mod edit -require github.com/loomkit/loom@v0.0.0 -replace github.com/loomkit/loom=/path/to/loom") {
		t.Errorf("go.mod:\n%s\nstdout: %s", mod, out)
	}

	if code, _, errb := runArgs(t, "create", "--go", "--loom", t.TempDir(), filepath.Join(t.TempDir(), "x")); code != 1 || !strings.Contains(errb, "no go.mod of module github.com/loomkit/loom") {
		t.Errorf("--loom elsewhere: exit %d, %q", code, errb)
	}
}
