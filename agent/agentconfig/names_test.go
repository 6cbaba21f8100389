package agentconfig_test

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/loomkit/loom/agent/agentconfig"
)

// TestCheckName checks the one rule for the names of agents and of apps
// loaded from directories: a letter or "_", then letters, digits, "_" and
// "-" (Unicode letters included, as ADK's Python identifiers allow them;
// "-" as loom create allows it), at most MaxNameBytes bytes.
func TestCheckName(t *testing.T) {
	for _, ok := range []string{"a", "_x", "tutor_2", "Agent", "café", "ωmega", "my-app", strings.Repeat("a", agentconfig.MaxNameBytes)} {
		if err := agentconfig.CheckName(ok); err != nil {
			t.Errorf("CheckName(%q) = %v, want nil", ok, err)
		}
	}
	for _, bad := range []string{"", "a b/../c", "a b", "../c", "a/b", "-a", "2a", "a b-", "a\tb", "a.b", "a\x00b", "a\nb", "\xff", strings.Repeat("a", agentconfig.MaxNameBytes+1)} {
		if err := agentconfig.CheckName(bad); err == nil {
			t.Errorf("CheckName(%q) = nil, want an error", bad)
		}
	}
}

// TestAgentNamesFollowTheRule refuses an agent whose name breaks the rule,
// in a root file and inline, at the name's line.
func TestAgentNamesFollowTheRule(t *testing.T) {
	for _, tc := range []struct {
		yaml  string
		line  int
		field string
	}{
		{"agent_class: SequentialAgent\nname: a b/../c\n", 2, "name"},
		{"agent_class: SequentialAgent\nname: s\nsub_agents:\n  - name: ../evil\n    agent_class: SequentialAgent\n", 4, "sub_agents[0].name"},
		{"agent_class: SequentialAgent\nname: " + strings.Repeat("n", 129) + "\n", 2, "name"},
	} {
		dir := t.TempDir()
		write(t, dir, "root_agent.yaml", tc.yaml)
		app, err := agentconfig.Load(dir, nil)
		if err == nil {
			app.Close()
			t.Errorf("%q loaded", tc.yaml)
			continue
		}
		var ce *agentconfig.Error
		if !errors.As(err, &ce) || ce.Line != tc.line || ce.Field != tc.field || !strings.Contains(err.Error(), "name") {
			t.Errorf("%q: %v, want an *agentconfig.Error at line %d field %s", tc.yaml, err, tc.line, tc.field)
		}
	}
}

// TestRootFileLinkOutsideIsRefused refuses a root_agent.yaml that is a
// symbolic link to a file outside the app's directory, as a config_path
// leading out is refused; a link to a file inside the directory loads.
//
// (CONFORMANCE Y2)
func TestRootFileLinkOutsideIsRefused(t *testing.T) {
	outside := t.TempDir()
	write(t, outside, "secret.yaml", "agent_class: SequentialAgent\nname: leaked\n")
	dir := t.TempDir()
	if err := os.Symlink(filepath.Join(outside, "secret.yaml"), filepath.Join(dir, "root_agent.yaml")); err != nil {
		t.Skipf("symlink: %v", err)
	}
	app, err := agentconfig.Load(dir, nil)
	if err == nil {
		app.Close()
		t.Fatal("a root file linking out of the app's directory loaded")
	}
	if !strings.Contains(err.Error(), "outside the app's directory") {
		t.Errorf("err = %v, want it to say the file is outside the app's directory", err)
	}

	inside := t.TempDir()
	write(t, inside, "real.yaml", "agent_class: SequentialAgent\nname: fine\n")
	if err := os.Symlink("real.yaml", filepath.Join(inside, "root_agent.yaml")); err != nil {
		t.Fatal(err)
	}
	app, err = agentconfig.Load(inside, nil)
	if err != nil {
		t.Fatalf("a root file linking inside the app's directory: %v", err)
	}
	app.Close()
}
