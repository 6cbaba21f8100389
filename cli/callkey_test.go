package cli_test

import (
	"bytes"
	"context"
	"database/sql"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	_ "modernc.org/sqlite"

	"github.com/loomkit/loom/cli"
	"github.com/loomkit/loom/event"
)

// runAPI runs "loom api" with args until stop is called, and returns its
// base URL and stop, which returns the exit code.
func runAPI(t *testing.T, args ...string) (string, func() int) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	urls := make(chan string, 1)
	done := make(chan int, 1)
	var errb syncBuffer
	go func() {
		done <- cli.Run(ctx, append([]string{"api", "--port", "0", "--artifacts", "memory://"}, args...),
			cli.Env{Stdout: &errb, Stderr: &errb, Getenv: noEnv, Listening: func(u string) { urls <- u }}, assistantApp)
	}()
	select {
	case u := <-urls:
		return u, func() int { cancel(); return <-done }
	case code := <-done:
		cancel()
		t.Fatalf("loom api exited with %d:\n%s", code, errb.String())
	}
	return "", nil
}

// TestAPICallKey checks that "loom api" authenticates stored calls by
// default: over a SQLite database it keeps a key beside it, readable by
// its owner only, and reuses it on the next start, and the calls it
// stores carry their code in storage, not on the wire. (CONFORMANCE I1)
func TestAPICallKey(t *testing.T) {
	dir := t.TempDir()
	db := filepath.Join(dir, "sessions.db")
	base, stop := runAPI(t, "--sessions", "sqlite://"+db)
	res, err := http.Post(base+"/apps/assistant/users/u/sessions/s", "application/json", strings.NewReader("{}"))
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	res, err = http.Post(base+"/run", "application/json", strings.NewReader(`{"appName":"assistant","userId":"u","sessionId":"s","newMessage":{"role":"user","parts":[{"text":"add 2 + 3"}]}}`))
	if err != nil {
		t.Fatal(err)
	}
	wire, _ := io.ReadAll(res.Body)
	res.Body.Close()
	if !bytes.Contains(wire, []byte(`"functionCall"`)) || bytes.Contains(wire, []byte(event.MetadataCallMAC)) {
		t.Fatalf("run answered %s", wire)
	}
	if code := stop(); code != 0 {
		t.Fatalf("exit code %d", code)
	}
	keyFile := filepath.Join(dir, cli.CallKeyFile)
	fi, err := os.Stat(keyFile)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != 0o600 || fi.Size() != event.MinCallKeyLen {
		t.Fatalf("key file: mode %v, %d bytes", fi.Mode().Perm(), fi.Size())
	}
	key, _ := os.ReadFile(keyFile)
	sdb, err := sql.Open("sqlite", db)
	if err != nil {
		t.Fatal(err)
	}
	defer sdb.Close()
	var signed int
	if err := sdb.QueryRow(`SELECT count(*) FROM events WHERE CAST(event AS TEXT) LIKE '%"functionCall"%' AND CAST(event AS TEXT) LIKE '%"` + event.MetadataCallMAC + `"%'`).Scan(&signed); err != nil {
		t.Fatal(err)
	}
	if signed != 1 {
		t.Fatalf("%d stored events with a signed call, want 1", signed)
	}
	_, stop = runAPI(t, "--sessions", "sqlite://"+db)
	stop()
	if again, _ := os.ReadFile(keyFile); !bytes.Equal(again, key) {
		t.Fatal("the key changed on the next start")
	}
}

// TestAPICallKeyFileTooShort checks that a key file with too short a key
// stops the server before it starts.
func TestAPICallKeyFileTooShort(t *testing.T) {
	file := filepath.Join(t.TempDir(), "k")
	if err := os.WriteFile(file, []byte("short"), 0o600); err != nil {
		t.Fatal(err)
	}
	var errb syncBuffer
	code := cli.Run(context.Background(), []string{"api", "--port", "0", "--sessions", "memory://", "--call-key-file", file},
		cli.Env{Stdout: &errb, Stderr: &errb, Getenv: noEnv}, assistantApp)
	if code == 0 || !strings.Contains(errb.String(), "call key") {
		t.Fatalf("exit code %d: %s", code, errb.String())
	}
}

// TestAPICallKeyNewDirectory checks that "loom api" starts over a SQLite
// database whose directory does not exist yet, as the default
// ./.loom/sessions.db on a first run: the directory is made before the
// call key is kept in it.
func TestAPICallKeyNewDirectory(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "new")
	_, stop := runAPI(t, "--sessions", "sqlite://"+filepath.Join(dir, "sessions.db"))
	if code := stop(); code != 0 {
		t.Fatalf("loom api exited with %d", code)
	}
	if fi, err := os.Stat(filepath.Join(dir, cli.CallKeyFile)); err != nil || fi.Size() < event.MinCallKeyLen {
		t.Fatalf("call key beside the new database: %v", err)
	}
}
