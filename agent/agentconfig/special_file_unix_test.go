//go:build unix

package agentconfig_test

import (
	"errors"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/loomkit/loom/agent/agentconfig"
)

// TestConfigPathToSpecialFile refuses a config_path that names a named
// pipe: opening one waits for a writer, which would hang the load.
func TestConfigPathToSpecialFile(t *testing.T) {
	dir := t.TempDir()
	write(t, dir, "root_agent.yaml", "agent_class: SequentialAgent\nname: r\nsub_agents:\n  - config_path: pipe.yaml\n")
	if err := syscall.Mkfifo(filepath.Join(dir, "pipe.yaml"), 0o644); err != nil {
		t.Skipf("mkfifo: %v", err)
	}
	done := make(chan error, 1)
	go func() {
		app, err := agentconfig.Load(dir, nil)
		if err == nil {
			app.Close()
		}
		done <- err
	}()
	var err error
	select {
	case err = <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("Load hangs on a config_path naming a named pipe")
	}
	var ce *agentconfig.Error
	if !errors.As(err, &ce) || ce.Field != "sub_agents[0].config_path" || !strings.Contains(err.Error(), "not a regular file") {
		t.Fatalf("err = %v, want an *agentconfig.Error at sub_agents[0].config_path saying it is not a regular file", err)
	}
}
