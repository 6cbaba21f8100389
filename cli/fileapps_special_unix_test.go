//go:build unix

package cli

import (
	"io"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/loomkit/loom/agent/agentconfig"
	"github.com/loomkit/loom/model"
	"github.com/loomkit/loom/model/scripted"
)

// TestRefreshSkipsNamedPipe: a named pipe with a YAML name in an app's
// directory (no config references it) does not hang the look at the
// files, which holds the app's lock: the app loads, and its status, asked
// by the server's app list, answers.
func TestRefreshSkipsNamedPipe(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "helper")
	writeAppFile(t, filepath.Join(dir, agentconfig.RootFile), "name: helper\ninstruction: Help.\n")
	if err := syscall.Mkfifo(filepath.Join(dir, "notes.yaml"), 0o644); err != nil {
		t.Skipf("mkfifo: %v", err)
	}
	f := newFileApp("helper", dir)
	opts := agentconfig.Options{Model: func(name string) (model.LLM, error) { return scripted.NewSequence(name), nil }}
	done := make(chan struct{})
	go func() {
		defer close(done)
		f.start(opts, &lockedWriter{w: io.Discard})
	}()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("the app's first look at its files hangs on a named pipe")
	}
	t.Cleanup(f.close)
	if f.cur == nil {
		t.Fatalf("the app does not load: %v", f.err)
	}
	if got := rootName(t, f); got != "helper" {
		t.Errorf("root = %s, want helper", got)
	}
	if st := f.status(); st.LoadError != "" {
		t.Errorf("load error %q", st.LoadError)
	}
}
