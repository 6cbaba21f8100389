package mcptool_test

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/loomkit/loom/tool/mcptool"
)

// TestStartupFailureNamesExitAndStderr checks that a stdio server that
// exits before answering "initialize" fails the first use with an error
// holding its exit status and the end of what it wrote to stderr, bounded
// however much it wrote, while Config.Stderr still receives all of it.
func TestStartupFailureNamesExitAndStderr(t *testing.T) {
	var all strings.Builder
	// 64 KiB of noise, then the line that explains the failure.
	script := `head -c 65536 /dev/zero | tr '\0' x >&2; echo >&2; echo "error: GITHUB_TOKEN is not set" >&2; exit 3`
	ts, err := mcptool.New(mcptool.Config{Name: "gh", Command: "sh", Args: []string{"-c", script}, Stderr: &syncWriter{w: &all}})
	if err != nil {
		t.Fatal(err)
	}
	defer ts.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	_, err = ts.Tools(ctx)
	if err == nil {
		t.Fatal("Tools of a server that exits at once: no error")
	}
	msg := err.Error()
	t.Logf("%s", msg)
	for _, want := range []string{"exit status 3", "error: GITHUB_TOKEN is not set"} {
		if !strings.Contains(msg, want) {
			t.Errorf("error %q does not hold %q", msg, want)
		}
	}
	if len(msg) > 8<<10 {
		t.Errorf("error is %d bytes long; the stderr tail must be bounded", len(msg))
	}
	if n := len(all.String()); n < 65536 {
		t.Errorf("Config.Stderr got %d bytes, want all of the server's stderr", n)
	}
}

// TestStartupFailureWithoutStderr checks the exit status is reported for a
// server that writes nothing to stderr, and that a command that cannot be
// started says so.
func TestStartupFailureWithoutStderr(t *testing.T) {
	ts, err := mcptool.New(mcptool.Config{Command: "sh", Args: []string{"-c", "exit 7"}})
	if err != nil {
		t.Fatal(err)
	}
	defer ts.Close()
	if _, err := ts.Tools(t.Context()); err == nil || !strings.Contains(err.Error(), "exit status 7") {
		t.Errorf("server exiting with 7: %v, want the exit status", err)
	}
	missing, err := mcptool.New(mcptool.Config{Command: "/nonexistent/mcp-server"})
	if err != nil {
		t.Fatal(err)
	}
	defer missing.Close()
	if _, err := missing.Tools(t.Context()); err == nil || !strings.Contains(err.Error(), "/nonexistent/mcp-server") {
		t.Errorf("missing command: %v, want its name", err)
	}
}

// syncWriter serializes writes to w.
type syncWriter struct {
	mu sync.Mutex
	w  *strings.Builder
}

func (s *syncWriter) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.w.Write(p)
}
