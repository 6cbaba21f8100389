package codeexec_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/loomkit/loom/codeexec"
)

// The tests of this file run code that tries to get out of the Local
// executor's confinement and check from outside that it did not.

// confined runs code under l and fails the test if the executor refuses to
// confine it: these escapes are tested where the confinement exists (Linux
// with user namespaces and Landlock, as CI has).
func confined(t *testing.T, l *codeexec.Local, code string) codeexec.Result {
	t.Helper()
	needPython(t)
	res, err := l.Execute(context.Background(), codeexec.Input{Code: code})
	if errors.Is(err, codeexec.ErrUnconfined) && os.Getenv("CI") == "" {
		t.Skipf("no confinement here: %v", err)
	}
	if err != nil {
		t.Fatal(err)
	}
	return res
}

func randomTag(t *testing.T) string {
	b := make([]byte, 6)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return hex.EncodeToString(b)
}

// numericTag returns "3600." and random digits: an argument of sleep that
// names its process.
func numericTag(t *testing.T) string {
	b := make([]byte, 9)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	for i := range b {
		b[i] = '0' + b[i]%10
	}
	return "3600." + string(b)
}

// processesWith lists the processes on the machine whose command line
// contains s.
func processesWith(s string) []string {
	var found []string
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		if _, err := strconv.Atoi(e.Name()); err != nil {
			continue
		}
		b, err := os.ReadFile("/proc/" + e.Name() + "/cmdline")
		if err == nil && strings.Contains(string(b), s) {
			found = append(found, e.Name()+": "+strings.ReplaceAll(string(b), "\x00", " "))
		}
	}
	return found
}

// TestLocalNoSignalsOutside checks that the code cannot signal a process
// outside its execution: not another process of the same user, not the
// agent's own process, not through a pidfd of /proc, not with kill(-1).
// Signal 0 probes permission without harming anything should it be allowed.
func TestLocalNoSignalsOutside(t *testing.T) {
	victim := exec.Command("sleep", "60")
	if err := victim.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	go func() { _ = victim.Wait(); close(exited) }()
	defer func() { _ = victim.Process.Kill(); <-exited }()
	code := strings.NewReplacer("VICTIM", strconv.Itoa(victim.Process.Pid), "AGENT", strconv.Itoa(os.Getpid())).Replace(`
import os, signal
results = []
def attempt(name, op):
    try:
        op()
        results.append(name + ":allowed")
    except OSError:
        results.append(name + ":denied")
attempt("kill", lambda: os.kill(VICTIM, signal.SIGKILL))
attempt("probe agent", lambda: os.kill(AGENT, 0))
def pidfd():
    fd = os.open("/proc/VICTIM", os.O_RDONLY | os.O_DIRECTORY)
    signal.pidfd_send_signal(fd, signal.SIGKILL)
attempt("pidfd", pidfd)
attempt("probe all", lambda: os.kill(-1, 0))
print(" ".join(results))
`)
	res := confined(t, &codeexec.Local{}, code)
	if got, want := strings.TrimSpace(res.Stdout), "kill:denied probe agent:denied pidfd:denied probe all:denied"; got != want {
		t.Errorf("stdout = %q, want %q (stderr %q)", got, want, res.Stderr)
	}
	select {
	case <-exited:
		t.Error("the code killed a process outside its execution")
	case <-time.After(100 * time.Millisecond):
	}
}

// TestLocalTreeKilledOnReturn checks that a process the code starts in a
// new session, twice forked so that nothing waits for it, does not outlive
// the execution when the code returns.
func TestLocalTreeKilledOnReturn(t *testing.T) {
	tag := numericTag(t)
	res := confined(t, &codeexec.Local{}, strings.ReplaceAll(daemonCode, "TAG", tag)+"print('returned')\n")
	if !strings.Contains(res.Stdout, "started returned") {
		t.Fatalf("result = %s", show(res))
	}
	waitGone(t, tag)
}

// TestLocalTreeKilledOnTimeout is TestLocalTreeKilledOnReturn for code
// that runs past its timeout.
//
// (CONFORMANCE C2)
func TestLocalTreeKilledOnTimeout(t *testing.T) {
	tag := numericTag(t)
	res := confined(t, &codeexec.Local{Timeout: 3 * time.Second}, strings.ReplaceAll(daemonCode, "TAG", tag)+"import time\ntime.sleep(60)\n")
	if !res.Failed || !strings.Contains(res.Stdout, "started") || !strings.Contains(res.Stderr, "ran longer than") {
		t.Fatalf("result = %s", show(res))
	}
	waitGone(t, tag)
}

// daemonCode starts "sleep TAG" detached: a new session, forked twice.
const daemonCode = `
import os, time
r, w = os.pipe()
if os.fork() == 0:
    os.setsid()
    if os.fork() == 0:
        os.close(r)
        os.write(w, b"x")
        os.execvp("sleep", ["sleep", "TAG"])
    os._exit(0)
os.close(w)
os.read(r, 1)
time.sleep(0.2)
print("started", end=" ", flush=True)
`

// waitGone fails the test if a process with tag in its command line is
// still running shortly after the execution returned.
func waitGone(t *testing.T, tag string) {
	t.Helper()
	var left []string
	for range 20 {
		if left = processesWith(tag); len(left) == 0 {
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
	for _, p := range left {
		if pid, err := strconv.Atoi(strings.SplitN(p, ":", 2)[0]); err == nil {
			_ = syscallKill(pid)
		}
	}
	t.Fatalf("outlived the execution: %v", left)
}

func syscallKill(pid int) error {
	p, err := os.FindProcess(pid)
	if err != nil {
		return err
	}
	return p.Kill()
}

// TestLocalProcessLimit checks that the code cannot start more processes
// than MaxProcesses, even when the agent runs as root.
func TestLocalProcessLimit(t *testing.T) {
	res := confined(t, &codeexec.Local{MaxProcesses: 20}, `
import os, time
n = 0
for _ in range(200):
    try:
        pid = os.fork()
    except OSError:
        break
    if pid == 0:
        time.sleep(10)
        os._exit(0)
    n += 1
print(n)
`)
	n, err := strconv.Atoi(strings.TrimSpace(res.Stdout))
	if err != nil {
		t.Fatalf("result = %s", show(res))
	}
	if n >= 20 || n < 5 {
		t.Errorf("%d processes started, want at least 5 and fewer than 20", n)
	}
}

// TestLocalNoUnixSockets checks that the code cannot connect to a unix
// socket on the host, named by a path (even one anyone may write) or in
// the abstract namespace, with or without network, while socket pairs
// (asyncio's event loop) still work.
func TestLocalNoUnixSockets(t *testing.T) {
	dir := t.TempDir()
	if err := os.Chmod(dir, 0o777); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "s")
	pl, err := net.Listen("unix", path)
	if err != nil {
		t.Fatal(err)
	}
	defer pl.Close()
	if err := os.Chmod(path, 0o777); err != nil {
		t.Fatal(err)
	}
	abstract := "@loom-test-" + randomTag(t)
	al, err := net.Listen("unix", abstract)
	if err != nil {
		t.Fatal(err)
	}
	defer al.Close()
	accepted := make(chan string, 2)
	for _, l := range []net.Listener{pl, al} {
		go func() {
			if c, err := l.Accept(); err == nil {
				accepted <- l.Addr().String()
				c.Close()
			}
		}()
	}
	code := strings.NewReplacer("PATH", path, "ABSTRACT", "\\0"+abstract[1:]).Replace(`
import asyncio, socket
results = []
for name, addr in (("path", "PATH"), ("abstract", "ABSTRACT")):
    try:
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        s.connect(addr)
        results.append(name + ":connected")
    except OSError:
        results.append(name + ":refused")
asyncio.run(asyncio.sleep(0))
a, b = socket.socketpair()
a.sendall(b"pair")
results.append(b.recv(4).decode())
print(" ".join(results))
`)
	for _, network := range []bool{false, true} {
		res := confined(t, &codeexec.Local{AllowNetwork: network}, code)
		if got := strings.TrimSpace(res.Stdout); got != "path:refused abstract:refused pair" {
			t.Errorf("network %v: stdout = %q, stderr = %q", network, got, res.Stderr)
		}
	}
	select {
	case a := <-accepted:
		t.Errorf("the code connected to %s", a)
	default:
	}
}

// TestLocalDiskQuota checks that the code cannot write more than
// DiskBytes in all, however many files it writes, nor keep files in memory
// elsewhere (memfd, /dev/shm).
//
// (CONFORMANCE C2)
func TestLocalDiskQuota(t *testing.T) {
	res := confined(t, &codeexec.Local{DiskBytes: 8 << 20, FileBytes: 4 << 20}, `
import os
chunk = b"x" * (1 << 20)
written = 0
try:
    for i in range(64):
        with open("f%d" % i, "wb") as f:
            f.write(chunk)
        written += len(chunk)
    print("wrote", written)
except OSError as e:
    print("stopped", written, e.errno)
for name, op in (("memfd", lambda: os.memfd_create("m")), ("shm", lambda: open("/dev/shm/loom-test", "wb"))):
    try:
        op()
        print(name, "allowed")
    except OSError:
        pass
`)
	var written, errno int
	if strings.Contains(res.Stdout, "allowed") {
		t.Errorf("stdout = %q", res.Stdout)
	}
	if _, err := fmtSscan(strings.SplitN(res.Stdout, "\n", 2)[0], "stopped %d %d", &written, &errno); err != nil {
		t.Fatalf("result = %s", show(res))
	}
	if written > 8<<20 || written < 4<<20 || errno != 28 {
		t.Errorf("wrote %d bytes, errno %d; want at most 8 MiB, then ENOSPC", written, errno)
	}
}

// TestLocalOutputFilesBounded checks that the output files returned are
// bounded in total, not only each, and that the code is told which were
// left out.
func TestLocalOutputFilesBounded(t *testing.T) {
	res := confined(t, &codeexec.Local{FileBytes: 1 << 20, OutputFilesBytes: 3 << 20}, `
for i in range(8):
    with open("f%d" % i, "wb") as f:
        f.write(b"x" * (1 << 20))
`)
	total := 0
	for _, f := range res.Files {
		total += len(f.Data)
	}
	if total > 3<<20 || len(res.Files) != 3 {
		t.Errorf("%d files, %d bytes returned; want 3 files, at most 3 MiB", len(res.Files), total)
	}
	if !strings.Contains(res.Stderr, "f7") {
		t.Errorf("stderr does not name the files left out: %q", res.Stderr)
	}
}

func fmtSscan(s, format string, args ...any) (int, error) {
	return fmt.Sscanf(strings.TrimSpace(s), format, args...)
}

// show describes a result without the contents of its files.
func show(res codeexec.Result) string {
	var names []string
	for _, f := range res.Files {
		names = append(names, fmt.Sprintf("%s (%d bytes)", f.Name, len(f.Data)))
	}
	return fmt.Sprintf("failed=%v stdout=%q stderr=%q files=%v", res.Failed, res.Stdout, res.Stderr, names)
}

// TestLocalConcurrent runs executions at once: each has its own working
// directory, limits and namespaces.
func TestLocalConcurrent(t *testing.T) {
	needPython(t)
	l := &codeexec.Local{MaxProcesses: 8}
	var wg sync.WaitGroup
	errs := make(chan error, 4)
	for i := range 4 {
		wg.Go(func() {
			res, err := l.Execute(context.Background(), codeexec.Input{
				Code:  "import os\nopen('out.txt', 'w').write(open('in.txt').read() * 2)\nprint(len(os.listdir('.')))",
				Files: []codeexec.File{{Name: "in.txt", Data: []byte(strconv.Itoa(i))}},
			})
			switch {
			case errors.Is(err, codeexec.ErrUnconfined) && os.Getenv("CI") == "":
			case err != nil:
				errs <- err
			case res.Stdout != "2\n" || len(res.Files) != 1 || string(res.Files[0].Data) != strconv.Itoa(i)+strconv.Itoa(i):
				errs <- fmt.Errorf("execution %d: %s", i, show(res))
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

// TestLocalDeepOutputTree checks that a directory tree too deep to walk
// is reported in Stderr, with the files found before it, rather than
// failing the execution.
func TestLocalDeepOutputTree(t *testing.T) {
	res := confined(t, &codeexec.Local{}, `
import os
open("top.txt", "w").write("top")
for i in range(1500):
    os.mkdir("d")
    os.chdir("d")
open("f", "w").write("deep")
`)
	if res.Failed || len(res.Files) != 1 || res.Files[0].Name != "top.txt" || !strings.Contains(res.Stderr, "Output files not returned: the rest") {
		t.Fatalf("result = %s", show(res))
	}
}
