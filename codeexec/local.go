package codeexec

import (
	"bytes"
	"context"
	_ "embed"
	"errors"
	"fmt"
	"io/fs"
	"mime"
	"net/http"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// Defaults of the Local executor's limits.
const (
	DefaultTimeout      = 30 * time.Second
	DefaultCPUSeconds   = 30
	DefaultMemoryBytes  = 512 << 20
	DefaultFileBytes    = 16 << 20
	DefaultOutputBytes  = 64 << 10
	DefaultMaxFiles     = 32
	defaultOpenFiles    = 256
	exitSandboxMissing  = 87 // the prelude's exit status when it cannot confine itself
	sandboxMissingLabel = "landlock unavailable"
)

//go:embed prelude.py
var prelude string

// Local runs Python (python3) in a subprocess on this machine. The zero
// value is usable and applies the defaults.
//
// Each execution gets a fresh temporary working directory, removed
// afterwards, and these limits:
//
//   - Timeout: the whole process group is killed when it passes.
//   - CPU time, address space (memory), size of any file written and
//     number of open files: set with setrlimit (soft and hard) before the
//     code starts, so the code cannot raise them.
//   - Writes outside the working directory: refused by the kernel with
//     Landlock (Linux 5.13+), applied to the interpreter before the code
//     starts and kept by every process it starts. Reading is not limited:
//     the code can read any file the user running the agent can.
//   - Network: the process runs in a new network namespace with only a
//     loopback interface (unshare -rn, which needs util-linux and
//     unprivileged user namespaces, or root). On Landlock ABI 4 and later
//     TCP bind and connect are refused as well.
//
// Where Landlock or the network namespace is unavailable (another OS, an
// older kernel, namespaces disabled), Execute fails rather than run the
// code with less confinement, unless AllowUnconfined is set.
//
// Local is NOT a sandbox for untrusted input. The code runs as the same
// user as the agent, can read that user's files (keys, tokens, other
// sessions' data), can use every system call the kernel allows, and shares
// the kernel with everything else on the machine. Use it for code from
// models you trust on behalf of users you trust, or run the agent itself
// inside a container or VM built to contain hostile code.
type Local struct {
	// Python is the interpreter; empty means "python3" on PATH.
	Python string
	// Timeout bounds the wall-clock time of one execution.
	Timeout time.Duration
	// CPUSeconds bounds CPU time.
	CPUSeconds int
	// MemoryBytes bounds the address space.
	MemoryBytes int64
	// FileBytes bounds the size of each file written, and of each output
	// file returned.
	FileBytes int64
	// OutputBytes bounds the stdout and stderr kept, each.
	OutputBytes int
	// MaxFiles bounds the number of output files returned.
	MaxFiles int
	// AllowNetwork runs the code without a network namespace.
	AllowNetwork bool
	// AllowUnconfined runs the code even where the confinement described
	// above is not available. Only for trusted code.
	AllowUnconfined bool
}

var _ Executor = (*Local)(nil)

func orDefault[T int | int64 | time.Duration](v, d T) T {
	if v <= 0 {
		return d
	}
	return v
}

// unshareOK reports, once per process, whether unshare -rn works here.
var unshareOK = sync.OnceValue(func() bool {
	p, err := exec.LookPath("unshare")
	if err != nil {
		return false
	}
	return exec.Command(p, "-rn", "true").Run() == nil
})

// Execute implements Executor.
func (l *Local) Execute(ctx context.Context, in Input) (Result, error) {
	python := l.Python
	if python == "" {
		python = "python3"
	}
	pyPath, err := exec.LookPath(python)
	if err != nil {
		return Result{}, fmt.Errorf("codeexec: interpreter: %w", err)
	}
	dir, err := os.MkdirTemp("", "loom-code-*")
	if err != nil {
		return Result{}, fmt.Errorf("codeexec: working directory: %w", err)
	}
	defer os.RemoveAll(dir)
	if dir, err = filepath.EvalSymlinks(dir); err != nil {
		return Result{}, fmt.Errorf("codeexec: working directory: %w", err)
	}
	before, err := writeInputs(dir, in.Files)
	if err != nil {
		return Result{}, err
	}

	timeout := orDefault(l.Timeout, DefaultTimeout)
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()

	argv := []string{pyPath, "-I", "-B", "-c", prelude}
	if !l.AllowNetwork {
		if unshareOK() {
			argv = append([]string{"unshare", "-rn", "--"}, argv...)
		} else if !l.AllowUnconfined {
			return Result{}, fmt.Errorf("%w: no network namespace (unshare -rn failed); set AllowNetwork or AllowUnconfined to run anyway", ErrUnconfined)
		}
	}
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	cmd.Dir = dir
	cmd.Stdin = strings.NewReader(in.Code)
	outMax := orDefault(l.OutputBytes, DefaultOutputBytes)
	stdout, stderr := &capped{max: outMax}, &capped{max: outMax}
	cmd.Stdout, cmd.Stderr = stdout, stderr
	cmd.Env = []string{
		"HOME=" + dir, "TMPDIR=" + dir, "PATH=/usr/local/bin:/usr/bin:/bin", "LANG=C.UTF-8", "PYTHONDONTWRITEBYTECODE=1",
		"LOOM_WORKDIR=" + dir,
		"LOOM_CPU=" + strconv.Itoa(orDefault(l.CPUSeconds, DefaultCPUSeconds)),
		"LOOM_MEM=" + strconv.FormatInt(orDefault(l.MemoryBytes, DefaultMemoryBytes), 10),
		"LOOM_FSIZE=" + strconv.FormatInt(orDefault(l.FileBytes, DefaultFileBytes), 10),
		"LOOM_NOFILE=" + strconv.Itoa(defaultOpenFiles),
		"LOOM_CONFINE=" + strconv.FormatBool(!l.AllowUnconfined),
		"LOOM_NET=" + strconv.FormatBool(l.AllowNetwork),
	}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = time.Second
	runErr := cmd.Run()

	res := Result{Stdout: stdout.String(), Stderr: stderr.String()}
	var exitErr *exec.ExitError
	switch {
	case runErr == nil:
	case ctx.Err() != nil && errors.Is(ctx.Err(), context.DeadlineExceeded):
		res.Failed = true
		res.Stderr = strings.TrimRight(res.Stderr+fmt.Sprintf("\nExecution stopped: it ran longer than %v.", timeout), "\n")
	case errors.As(runErr, &exitErr):
		if exitErr.ExitCode() == exitSandboxMissing && strings.Contains(res.Stderr, sandboxMissingLabel) {
			return Result{}, fmt.Errorf("%w: cannot confine writes to the working directory (%s); set AllowUnconfined to run anyway", ErrUnconfined, strings.TrimSpace(res.Stderr))
		}
		res.Failed = true
		if res.Stderr == "" {
			res.Stderr = "Execution failed: " + exitErr.String()
		}
	default:
		return Result{}, fmt.Errorf("codeexec: run: %w", runErr)
	}
	res.Files, err = outputs(dir, before, orDefault(l.FileBytes, DefaultFileBytes), orDefault(l.MaxFiles, DefaultMaxFiles))
	if err != nil {
		return Result{}, err
	}
	return res, nil
}

// writeInputs writes the input files and returns their contents by name,
// so unchanged inputs are not returned as outputs.
func writeInputs(dir string, files []File) (map[string][]byte, error) {
	before := map[string][]byte{}
	for _, f := range files {
		name := path.Clean("/" + f.Name)[1:]
		if name == "" || strings.HasPrefix(name, "../") {
			return nil, fmt.Errorf("codeexec: bad input file name %q", f.Name)
		}
		p := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
			return nil, fmt.Errorf("codeexec: input %s: %w", name, err)
		}
		if err := os.WriteFile(p, f.Data, 0o600); err != nil {
			return nil, fmt.Errorf("codeexec: input %s: %w", name, err)
		}
		before[name] = f.Data
	}
	return before, nil
}

// outputs returns the regular files of dir that are new or changed, in
// path order, skipping those over maxBytes.
func outputs(dir string, before map[string][]byte, maxBytes int64, maxFiles int) ([]File, error) {
	var out []File
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if len(out) >= maxFiles {
			return filepath.SkipAll // enough: the rest is not looked at
		}
		if err != nil {
			return nil // unreadable entries are skipped
		}
		if !d.Type().IsRegular() {
			return nil
		}
		info, err := d.Info()
		if err != nil || info.Size() > maxBytes {
			return nil
		}
		rel, _ := filepath.Rel(dir, p)
		name := filepath.ToSlash(rel)
		data, err := os.ReadFile(p)
		if err != nil {
			return nil
		}
		if old, ok := before[name]; ok && bytes.Equal(old, data) {
			return nil
		}
		out = append(out, File{Name: name, MIMEType: mimeType(name, data), Data: data})
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("codeexec: outputs: %w", err)
	}
	return out, nil
}

func mimeType(name string, data []byte) string {
	if t := mime.TypeByExtension(path.Ext(name)); t != "" {
		return t
	}
	return http.DetectContentType(data)
}

// capped keeps the first max bytes written to it and notes the rest.
type capped struct {
	max  int
	buf  bytes.Buffer
	lost int
}

func (c *capped) Write(p []byte) (int, error) {
	room := c.max - c.buf.Len()
	if room > 0 {
		c.buf.Write(p[:min(room, len(p))])
	}
	if len(p) > room {
		c.lost += len(p) - max(room, 0)
	}
	return len(p), nil
}

func (c *capped) String() string {
	if c.lost > 0 {
		return c.buf.String() + fmt.Sprintf("\n[%d more bytes not shown]", c.lost)
	}
	return c.buf.String()
}
