package cli_test

import (
	"bufio"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/loomkit/loom/cli"
	"github.com/loomkit/loom/examples/assistant"
)

// TestConnectionLimits: the server the CLI starts closes a connection that
// is idle after a response or that never finishes its headers, and accepts
// only loopback and --allowed-hosts names as Host.
func TestConnectionLimits(t *testing.T) {
	t.Cleanup(cli.SetConnTimeouts(300*time.Millisecond, 300*time.Millisecond))
	base := startServerArgs(t, []string{"api", "--allowed-hosts", "api.test"}, cli.App{Name: "assistant", New: assistant.New, Offline: assistant.Offline})
	addr := strings.TrimPrefix(base, "http://")

	closedWithin := func(what string, conn net.Conn, d time.Duration) {
		t.Helper()
		start := time.Now()
		_ = conn.SetReadDeadline(time.Now().Add(10 * time.Second))
		_, err := io.Copy(io.Discard, conn)
		if elapsed := time.Since(start); err != nil || elapsed > d {
			t.Errorf("%s: connection still open after %v (%v)", what, elapsed, err)
		}
	}

	// An idle keep-alive connection.
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if _, err := io.WriteString(conn, "GET /health HTTP/1.1\r\nHost: localhost\r\n\r\n"); err != nil {
		t.Fatal(err)
	}
	res, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil || res.StatusCode != 200 {
		t.Fatalf("health: %v %v", res, err)
	}
	res.Body.Close()
	closedWithin("idle keep-alive", conn, 3*time.Second)

	// Headers that never end.
	slow, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer slow.Close()
	if _, err := io.WriteString(slow, "GET /health HTTP/1.1\r\nHost: localhost\r\n"); err != nil {
		t.Fatal(err)
	}
	closedWithin("unfinished headers", slow, 3*time.Second)

	for host, want := range map[string]int{"localhost": 200, "api.test": 200, "api.test:8000": 200, "evil.example": 421} {
		req, _ := http.NewRequest("GET", base+"/list-apps", nil)
		req.Host = host
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		if res.StatusCode != want {
			t.Errorf("Host %s: %d, want %d", host, res.StatusCode, want)
		}
	}
}
