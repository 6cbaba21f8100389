package codeexec_test

import (
	"context"
	"errors"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/loomkit/loom/codeexec"
)

// needPython skips where no python3 is installed, except in CI.
func needPython(t *testing.T) {
	t.Helper()
	if _, err := exec.LookPath("python3"); err != nil {
		if os.Getenv("CI") != "" {
			t.Fatal("python3 is required in CI")
		}
		t.Skip("python3 not installed")
	}
}

func run(t *testing.T, l *codeexec.Local, code string, files ...codeexec.File) codeexec.Result {
	t.Helper()
	res, err := l.Execute(context.Background(), codeexec.Input{Code: code, Files: files})
	if err != nil {
		t.Fatal(err)
	}
	return res
}

// TestLocalOutputAndFiles checks stdout, that input files are readable in
// the working directory, and that new or changed files come back.
//
// (CONFORMANCE C2)
func TestLocalOutputAndFiles(t *testing.T) {
	needPython(t)
	res := run(t, &codeexec.Local{AllowNetwork: true}, `
import os
print(open("in.txt").read().upper())
with open("out.csv", "w") as f:
    f.write("a,b\n1,2\n")
os.mkdir("sub")
open("sub/x.txt", "w").write("x")
`, codeexec.File{Name: "in.txt", Data: []byte("hello")})
	if res.Failed || res.Stdout != "HELLO\n" {
		t.Fatalf("result = %+v", res)
	}
	var names []string
	for _, f := range res.Files {
		names = append(names, f.Name+":"+f.MIMEType)
	}
	if strings.Join(names, ",") != "out.csv:text/csv; charset=utf-8,sub/x.txt:text/plain; charset=utf-8" {
		t.Errorf("files = %v", names)
	}
}

// TestLocalErrorIsResult checks that an exception is a failed result with
// the traceback, not an error.
//
// (CONFORMANCE C2)
func TestLocalErrorIsResult(t *testing.T) {
	needPython(t)
	res := run(t, &codeexec.Local{AllowNetwork: true}, "1/0")
	if !res.Failed || !strings.Contains(res.Stderr, "ZeroDivisionError") {
		t.Fatalf("result = %+v", res)
	}
}

// TestLocalTimeout checks that a runaway loop is stopped by the timeout.
//
// (CONFORMANCE C2)
func TestLocalTimeout(t *testing.T) {
	needPython(t)
	start := time.Now()
	res := run(t, &codeexec.Local{Timeout: 6 * time.Second, AllowNetwork: true}, "print('started', flush=True)\nwhile True:\n    pass\n")
	if d := time.Since(start); d > 12*time.Second {
		t.Fatalf("took %v", d)
	}
	if !res.Failed || res.Stdout != "started\n" || !strings.Contains(res.Stderr, "ran longer than") {
		t.Fatalf("result = %+v", res)
	}
}

// TestLocalChildProcessKilled checks that processes the code starts are
// killed with it at the timeout.
func TestLocalChildProcessKilled(t *testing.T) {
	needPython(t)
	tag := numericTag(t)
	res := run(t, &codeexec.Local{Timeout: 3 * time.Second, AllowNetwork: true}, `
import subprocess, time
p = subprocess.Popen(["sleep", "`+tag+`"])
print("started", flush=True)
time.sleep(30)
`)
	if !res.Failed || res.Stdout != "started\n" {
		t.Fatalf("the child was not started before the timeout: %s", show(res))
	}
	waitGone(t, tag)
}

// TestLocalWriteOutsideFails checks that the code cannot create, change
// or delete files outside its working directory, while writing inside it
// works.
//
// (CONFORMANCE C2)
func TestLocalWriteOutsideFails(t *testing.T) {
	needPython(t)
	outside := t.TempDir()
	victim := filepath.Join(outside, "keep.txt")
	if err := os.WriteFile(victim, []byte("original"), 0o644); err != nil {
		t.Fatal(err)
	}
	res, err := (&codeexec.Local{AllowNetwork: true}).Execute(context.Background(), codeexec.Input{Code: `
import os
outside = ` + "\"" + outside + "\"" + `
results = []
for name, op in [
    ("create", lambda: open(os.path.join(outside, "new.txt"), "w").write("x")),
    ("append", lambda: open(os.path.join(outside, "keep.txt"), "a").write("x")),
    ("delete", lambda: os.remove(os.path.join(outside, "keep.txt"))),
    ("mkdir", lambda: os.mkdir(os.path.join(outside, "d"))),
    ("tmp", lambda: open("/tmp/loom-escape-test.txt", "w").write("x")),
    ("escape via ..", lambda: open("../escaped.txt", "w").write("x")),
]:
    try:
        op()
        results.append(name + ":allowed")
    except OSError:
        results.append(name + ":denied")
open("inside.txt", "w").write("ok")
print(" ".join(results))
`})
	if errors.Is(err, codeexec.ErrUnconfined) {
		// Where Landlock is unavailable the executor refuses to run the
		// code at all: the write cannot happen either.
		t.Logf("refused: %v", err)
		if _, statErr := os.Stat(filepath.Join(outside, "new.txt")); statErr == nil {
			t.Error("file created outside")
		}
		return
	}
	if err != nil {
		t.Fatal(err)
	}
	want := "create:denied append:denied delete:denied mkdir:denied tmp:denied escape via ..:denied"
	if strings.TrimSpace(res.Stdout) != want {
		t.Fatalf("stdout = %q, stderr = %q", res.Stdout, res.Stderr)
	}
	if b, _ := os.ReadFile(victim); string(b) != "original" {
		t.Errorf("file outside changed: %q", b)
	}
	if _, err := os.Stat(filepath.Join(outside, "new.txt")); err == nil {
		t.Error("file created outside")
	}
	if len(res.Files) != 1 || res.Files[0].Name != "inside.txt" {
		t.Errorf("files = %+v", res.Files)
	}
}

// TestLocalNoNetwork checks that the code cannot reach a server on the
// host.
//
// (CONFORMANCE C2)
func TestLocalNoNetwork(t *testing.T) {
	needPython(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	addr := ln.Addr().(*net.TCPAddr)
	code := `
import socket
try:
    socket.create_connection(("127.0.0.1", PORT), timeout=2)
    print("connected")
except OSError as e:
    print("refused")
`
	code = strings.Replace(code, "PORT", itoa(addr.Port), 1)
	res, err := (&codeexec.Local{}).Execute(context.Background(), codeexec.Input{Code: code})
	switch {
	case errors.Is(err, codeexec.ErrUnconfined):
		// No network namespace here: the executor refuses to run the code.
		t.Logf("refused: %v", err)
	case err != nil:
		t.Fatal(err)
	case strings.TrimSpace(res.Stdout) != "refused":
		t.Fatalf("without network: %+v", res)
	}
	if res := run(t, &codeexec.Local{AllowNetwork: true}, code); strings.TrimSpace(res.Stdout) != "connected" {
		t.Fatalf("with AllowNetwork: %+v", res)
	}
}

// TestLocalLimits checks the memory and file size limits and the output
// cap.
//
// (CONFORMANCE C2)
func TestLocalLimits(t *testing.T) {
	needPython(t)
	l := &codeexec.Local{MemoryBytes: 256 << 20, FileBytes: 1 << 20, AllowNetwork: true}
	if res := run(t, l, "x = bytearray(1 << 30)"); !res.Failed || !strings.Contains(res.Stderr, "MemoryError") {
		t.Errorf("memory: %+v", res)
	}
	res := run(t, l, "f = open('big', 'wb')\nf.write(b'x' * (2 << 20))\nf.close()")
	if !res.Failed || !strings.Contains(res.Stderr, "File too large") || len(res.Files) > 1 || len(res.Files) == 1 && len(res.Files[0].Data) > 1<<20 {
		t.Errorf("file size: failed=%v files=%d stderr=%q", res.Failed, len(res.Files), res.Stderr)
	}
	if res := run(t, &codeexec.Local{OutputBytes: 100, AllowNetwork: true}, "print('y' * 1000)"); len(res.Stdout) > 200 || !strings.Contains(res.Stdout, "more bytes not shown") {
		t.Errorf("output cap: %q", res.Stdout)
	}
}

func itoa(n int) string {
	var b []byte
	for n > 0 {
		b = append([]byte{byte('0' + n%10)}, b...)
		n /= 10
	}
	return string(b)
}
