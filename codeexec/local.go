package codeexec

import (
	"bufio"
	"bytes"
	"context"
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"mime"
	"net/http"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
	"unicode/utf8"
)

// Defaults of the Local executor's limits.
const (
	DefaultTimeout          = 30 * time.Second
	DefaultCPUSeconds       = 30
	DefaultMemoryBytes      = 512 << 20
	DefaultFileBytes        = 16 << 20
	DefaultOutputBytes      = 64 << 10
	DefaultMaxFiles         = 32
	DefaultMaxProcesses     = 64
	DefaultDiskBytes        = 128 << 20
	DefaultOutputFilesBytes = 32 << 20
	defaultOpenFiles        = 256
	defaultInodes           = 8192
	// collectTime is how long after Timeout the supervisor has to kill the
	// code and send its files before it is killed itself.
	collectTime = 10 * time.Second
	// unmappedID is the user and group the code runs as, seen from the
	// host, when the agent runs as root.
	unmappedID = 65534
)

//go:embed prelude.py
var prelude string

// Local runs Python (python3) in a subprocess on this machine. The zero
// value is usable and applies the defaults.
//
// Each execution runs under a supervisor process that is process 1 of new
// Linux user, PID, mount and IPC namespaces, and of a new network
// namespace unless AllowNetwork is set. Confined, an execution is limited
// as follows:
//
//   - Processes: when the code's main process returns, or Timeout passes,
//     every process it started is killed, including those in a new session
//     or forked twice (they are in the PID namespace, which dies with its
//     process 1). At most MaxProcesses processes and threads run at once
//     (RLIMIT_NPROC counted in the execution's own user namespace, which
//     maps to the agent's user, or to nobody (65534) when the agent runs as
//     root, so root's exemption does not apply).
//   - Signals: the code cannot signal or trace any process outside the
//     execution: it sees no other process's id (the PID namespace, with its
//     own /proc where the kernel allows mounting one), and on Landlock ABI
//     6 and later the kernel refuses signals outside its domain as well.
//   - Disk: the working directory is a tmpfs of DiskBytes (and at most
//     8192 files and directories), so the code cannot write more in all;
//     each file is at most FileBytes. The tmpfs is memory: DiskBytes counts
//     toward the machine's memory, not its disk.
//   - Writes outside the working directory: refused by Landlock, as are
//     mounts. Reading is not limited: the code can read any file the user
//     it runs as can.
//   - Sockets: only IPv4, IPv6 and netlink sockets can be created
//     (seccomp), so no unix socket of the host, named or abstract, can be
//     reached, nor vsock; pairs of connected stream sockets still work.
//     Without AllowNetwork, IPv4 and IPv6 reach only the namespace's own
//     loopback interface. io_uring and memfd_create are refused.
//   - CPU time, address space (memory) and open files of each process:
//     setrlimit (soft and hard), which the code cannot raise. Memory is
//     bounded per process, so in all by about MaxProcesses × MemoryBytes.
//   - Output files: at most MaxFiles, each at most FileBytes, at most
//     OutputFilesBytes together; the rest are named in Stderr, not
//     returned. Files are read after every process of the execution has
//     ended, and symbolic links are not followed.
//
// Confinement needs Linux with user namespaces (as root or, for other
// users, unprivileged user namespaces enabled), Landlock (5.13+) and
// seccomp, on x86-64 or arm64. Where any part is unavailable, Execute
// fails with an error wrapping ErrUnconfined rather than run the code with
// less, unless AllowUnconfined is set: then the code runs with what is
// available, which without namespaces means none of the process, signal,
// disk and socket guarantees above.
//
// Local is NOT a sandbox for hostile code. The code can read what its user
// can (for an agent not running as root, the agent's own keys, tokens and
// other sessions' data), can use most system calls, and shares the kernel
// with everything else on the machine. Use it for code from models you
// trust on behalf of users you trust, or run the agent itself inside a
// container or VM built to contain hostile code.
type Local struct {
	// Python is the interpreter; empty means python3 from /usr/local/bin,
	// /usr/bin or /bin, the PATH the code runs with.
	Python string
	// Timeout bounds the wall-clock time of one execution.
	Timeout time.Duration
	// CPUSeconds bounds the CPU time of each process.
	CPUSeconds int
	// MemoryBytes bounds the address space of each process.
	MemoryBytes int64
	// FileBytes bounds the size of each file written, and of each output
	// file returned.
	FileBytes int64
	// OutputBytes bounds the stdout and stderr kept, each.
	OutputBytes int
	// MaxFiles bounds the number of output files returned.
	MaxFiles int
	// MaxProcesses bounds the processes and threads of one execution
	// running at once.
	MaxProcesses int
	// DiskBytes bounds the bytes all files in the working directory hold
	// together, input files included.
	DiskBytes int64
	// OutputFilesBytes bounds the total size of the output files returned.
	OutputFilesBytes int64
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

// request is what the supervisor reads on stdin.
type request struct {
	Code       string      `json:"code"`
	Files      []inputFile `json:"files"`
	Workdir    string      `json:"workdir"`
	Namespaces bool        `json:"namespaces"`
	Require    bool        `json:"require"`
	Net        bool        `json:"net"`
	Timeout    float64     `json:"timeout"`
	CPU        int         `json:"cpu"`
	Mem        int64       `json:"mem"`
	FSize      int64       `json:"fsize"`
	NoFile     int         `json:"nofile"`
	NProc      int         `json:"nproc"`
	Disk       int64       `json:"disk"`
	Inodes     int         `json:"inodes"`
}

type inputFile struct {
	Name string `json:"name"`
	Data []byte `json:"data"`
}

// record is one line the supervisor writes on fd 3.
type record struct {
	Setup   *string `json:"setup"`
	Error   *string `json:"error"`
	File    *string `json:"file"`
	Size    int64   `json:"size"`
	Skip    *string `json:"skip"`
	Why     string  `json:"why"`
	End     bool    `json:"end"`
	Exit    int     `json:"exit"`
	Signal  int     `json:"signal"`
	Timeout bool    `json:"timeout"`
}

// errSetup reports that the supervisor could not confine the code; nothing
// ran.
type errSetup struct{ msg string }

func (e errSetup) Error() string { return e.msg }

// Execute implements Executor.
func (l *Local) Execute(ctx context.Context, in Input) (Result, error) {
	pyPath, err := l.interpreter()
	if err != nil {
		return Result{}, err
	}
	req, before, err := l.request(in)
	if err != nil {
		return Result{}, err
	}
	res, err := l.run(ctx, pyPath, req, before, true)
	var setup errSetup
	if errors.As(err, &setup) && l.AllowUnconfined {
		res, err = l.run(ctx, pyPath, req, before, false)
	}
	if errors.As(err, &setup) {
		return Result{}, fmt.Errorf("%w: %s; set AllowUnconfined to run anyway", ErrUnconfined, setup.msg)
	}
	return res, err
}

// sandboxPath is the PATH the code runs with.
const sandboxPath = "/usr/local/bin:/usr/bin:/bin"

// interpreter returns the path of the Python to run: Python, or python3
// found on the PATH the code runs with.
func (l *Local) interpreter() (string, error) {
	if l.Python != "" {
		p, err := exec.LookPath(l.Python)
		if err != nil {
			return "", fmt.Errorf("codeexec: interpreter: %w", err)
		}
		return p, nil
	}
	for _, dir := range filepath.SplitList(sandboxPath) {
		p := filepath.Join(dir, "python3")
		if info, err := os.Stat(p); err == nil && info.Mode().IsRegular() && info.Mode()&0o111 != 0 {
			return p, nil
		}
	}
	return "", fmt.Errorf("codeexec: interpreter: no python3 in %s; set Python", sandboxPath)
}

// request validates the input files and returns the supervisor's request
// (without a working directory) and the inputs by name.
func (l *Local) request(in Input) (request, map[string][]byte, error) {
	req := request{
		Code:    in.Code,
		Files:   []inputFile{},
		Require: !l.AllowUnconfined,
		Net:     l.AllowNetwork,
		Timeout: orDefault(l.Timeout, DefaultTimeout).Seconds(),
		CPU:     orDefault(l.CPUSeconds, DefaultCPUSeconds),
		Mem:     orDefault(l.MemoryBytes, DefaultMemoryBytes),
		FSize:   orDefault(l.FileBytes, DefaultFileBytes),
		NoFile:  defaultOpenFiles,
		NProc:   orDefault(l.MaxProcesses, DefaultMaxProcesses),
		Disk:    orDefault(l.DiskBytes, DefaultDiskBytes),
		Inodes:  defaultInodes,
	}
	before := map[string][]byte{}
	for _, f := range in.Files {
		name, ok := cleanName(f.Name)
		if !ok {
			return request{}, nil, fmt.Errorf("codeexec: bad input file name %q", f.Name)
		}
		if _, dup := before[name]; dup {
			return request{}, nil, fmt.Errorf("codeexec: input file %q given twice", name)
		}
		before[name] = f.Data
		req.Files = append(req.Files, inputFile{Name: name, Data: f.Data})
	}
	return req, before, nil
}

// cleanName returns name as a clean relative path with forward slashes,
// or false if it is empty, absolute after cleaning leaves the directory,
// or holds NUL or invalid UTF-8.
func cleanName(name string) (string, bool) {
	if !utf8.ValidString(name) || strings.IndexByte(name, 0) >= 0 {
		return "", false
	}
	clean := path.Clean("/" + name)[1:]
	if clean == "" || strings.HasPrefix(clean, "../") {
		return "", false
	}
	return clean, true
}

// run runs one execution, in namespaces or not.
func (l *Local) run(ctx context.Context, pyPath string, req request, before map[string][]byte, namespaces bool) (Result, error) {
	dir, err := os.MkdirTemp("", "loom-code-*")
	if err != nil {
		return Result{}, fmt.Errorf("codeexec: working directory: %w", err)
	}
	defer os.RemoveAll(dir)
	if dir, err = filepath.EvalSymlinks(dir); err != nil {
		return Result{}, fmt.Errorf("codeexec: working directory: %w", err)
	}
	req.Workdir, req.Namespaces = dir, namespaces
	stdin, err := json.Marshal(req)
	if err != nil {
		return Result{}, fmt.Errorf("codeexec: request: %w", err)
	}

	timeout := orDefault(l.Timeout, DefaultTimeout)
	runCtx, cancel := context.WithTimeout(ctx, timeout+collectTime)
	defer cancel()
	cmd, stdout, stderr := l.supervisor(runCtx, pyPath, dir, stdin, namespaces)
	reportR, reportW, err := os.Pipe()
	if err != nil {
		return Result{}, fmt.Errorf("codeexec: pipe: %w", err)
	}
	defer reportR.Close()
	cmd.ExtraFiles = []*os.File{reportW}
	if err := cmd.Start(); err != nil {
		reportW.Close()
		if namespaces {
			msg := "cannot start in new namespaces: " + err.Error()
			if os.Getuid() == 0 && errors.Is(err, fs.ErrPermission) {
				msg += fmt.Sprintf(" (the agent runs as root, so the code runs as user %d, which must be able to run %s)", unmappedID, pyPath)
			}
			return Result{}, errSetup{msg}
		}
		return Result{}, fmt.Errorf("codeexec: run: %w", err)
	}
	reportW.Close()
	type report struct {
		out reportResult
		err error
	}
	done := make(chan report, 1)
	go func() {
		r, err := l.readReport(reportR, before)
		if err != nil {
			_ = cmd.Cancel() // a broken report: stop the supervisor too
		}
		done <- report{r, err}
	}()
	waitErr := cmd.Wait()
	rep := <-done

	if ctx.Err() != nil {
		return Result{}, fmt.Errorf("codeexec: %w", ctx.Err())
	}
	if rep.out.setup != "" {
		return Result{}, errSetup{rep.out.setup}
	}
	if rep.out.input != "" {
		return Result{}, fmt.Errorf("codeexec: %s", rep.out.input)
	}
	return result(rep.out, rep.err, stdout.String(), stderr.String(), timeout, runCtx.Err() != nil, waitErr)
}

// supervisor returns the command that runs the supervisor of one
// execution in the working directory dir, with the request stdin, and the
// buffers that capture what the code prints.
func (l *Local) supervisor(ctx context.Context, pyPath, dir string, stdin []byte, namespaces bool) (cmd *exec.Cmd, stdout, stderr *capped) {
	cmd = exec.CommandContext(ctx, pyPath, "-I", "-B", "-c", prelude)
	// The supervisor enters the working directory itself: in namespaces,
	// the user it runs as cannot, before its tmpfs is mounted there.
	cmd.Dir = "/"
	cmd.Stdin = bytes.NewReader(stdin)
	outMax := orDefault(l.OutputBytes, DefaultOutputBytes)
	stdout, stderr = &capped{max: outMax}, &capped{max: outMax}
	cmd.Stdout, cmd.Stderr = stdout, stderr
	cmd.Env = []string{
		"HOME=" + dir, "TMPDIR=" + dir, "PATH=" + sandboxPath, "LANG=C.UTF-8", "PYTHONDONTWRITEBYTECODE=1",
	}
	if namespaces {
		cmd.SysProcAttr = namespaceAttr(l.AllowNetwork)
		// Killing process 1 of the PID namespace kills every process in it.
		cmd.Cancel = func() error { return cmd.Process.Kill() }
	} else {
		cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
		cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	}
	cmd.WaitDelay = time.Second
	return cmd, stdout, stderr
}

// result is the outcome of an execution whose supervisor reported out
// (or failed to report, with reportErr) and ended with waitErr, having
// printed stdout and stderr; timedOut says the run's deadline passed.
func result(out reportResult, reportErr error, stdout, stderr string, timeout time.Duration, timedOut bool, waitErr error) (Result, error) {
	res := Result{Stdout: stdout, Stderr: stderr, Files: out.files}
	switch {
	case out.timeout || !out.ended && timedOut:
		res.Failed = true
		res.Stderr = strings.TrimRight(res.Stderr+fmt.Sprintf("\nExecution stopped: it ran longer than %v.", timeout), "\n")
	case reportErr != nil:
		return Result{}, reportErr
	case !out.ended:
		return Result{}, fmt.Errorf("codeexec: the supervisor ended without a report: %v: %s", waitErr, strings.TrimSpace(stderr))
	case out.exit != 0 || out.signal != 0:
		res.Failed = true
		if res.Stderr == "" {
			if out.signal != 0 {
				res.Stderr = "Execution failed: signal: " + syscall.Signal(out.signal).String()
			} else {
				res.Stderr = "Execution failed: exit status " + strconv.Itoa(out.exit)
			}
		}
	}
	if len(out.left) > 0 {
		res.Stderr = strings.TrimLeft(res.Stderr+"\nOutput files not returned: "+leftOut(out.left), "\n")
	}
	return res, nil
}

// namespaceAttr starts the supervisor as process 1 of new namespaces, as
// user 0 of its user namespace, mapped to the agent's user or, for root,
// to nobody.
func namespaceAttr(network bool) *syscall.SysProcAttr {
	flags := uintptr(syscall.CLONE_NEWUSER | syscall.CLONE_NEWPID | syscall.CLONE_NEWNS | syscall.CLONE_NEWIPC)
	if !network {
		flags |= syscall.CLONE_NEWNET
	}
	uid, gid, root := os.Getuid(), os.Getgid(), os.Getuid() == 0
	if root {
		uid, gid = unmappedID, unmappedID
	}
	return &syscall.SysProcAttr{
		Cloneflags:  flags,
		UidMappings: []syscall.SysProcIDMap{{ContainerID: 0, HostID: uid, Size: 1}},
		GidMappings: []syscall.SysProcIDMap{{ContainerID: 0, HostID: gid, Size: 1}},
		// Root may and must drop its supplementary groups; other users
		// cannot set groups in the namespace.
		GidMappingsEnableSetgroups: root,
		Credential:                 &syscall.Credential{Uid: 0, Gid: 0, NoSetGroups: !root},
	}
}

// reportResult is what the supervisor reported.
type reportResult struct {
	setup, input string
	files        []File
	left         []string
	ended        bool
	timeout      bool
	exit, signal int
}

// maxRecordLine bounds one record line of the report.
const maxRecordLine = 64 << 10

// readReport reads the supervisor's report, keeping the output files that
// are new or changed within the limits and naming the others in left.
func (l *Local) readReport(r io.Reader, before map[string][]byte) (reportResult, error) {
	var out reportResult
	fileMax := orDefault(l.FileBytes, DefaultFileBytes)
	totalMax := orDefault(l.OutputFilesBytes, DefaultOutputFilesBytes)
	maxFiles := orDefault(l.MaxFiles, DefaultMaxFiles)
	var total int64
	br := bufio.NewReaderSize(r, maxRecordLine)
	for {
		line, err := br.ReadSlice('\n')
		if err == io.EOF && len(line) == 0 {
			return out, nil
		}
		if err != nil {
			return out, fmt.Errorf("codeexec: report: %w", err)
		}
		var rec record
		if err := json.Unmarshal(line, &rec); err != nil {
			return out, fmt.Errorf("codeexec: report: %w", err)
		}
		switch {
		case rec.Setup != nil:
			out.setup = *rec.Setup
		case rec.Error != nil:
			out.input = *rec.Error
		case rec.Skip != nil:
			out.left = append(out.left, fmt.Sprintf("%s (%s)", *rec.Skip, rec.Why))
		case rec.End:
			out.ended, out.timeout, out.exit, out.signal = true, rec.Timeout, rec.Exit, rec.Signal
		case rec.File != nil:
			name, ok := cleanName(*rec.File)
			if !ok || rec.Size < 0 {
				return out, fmt.Errorf("codeexec: report: bad file %q", *rec.File)
			}
			keep := rec.Size <= fileMax && total+rec.Size <= totalMax && len(out.files) < maxFiles
			if !keep {
				same := &sameAs{want: before[name]}
				if _, err := io.CopyN(same, br, rec.Size); err != nil {
					return out, fmt.Errorf("codeexec: report: %w", err)
				}
				if _, input := before[name]; !input || !same.equal(rec.Size) {
					out.left = append(out.left, name+" ("+whyLeft(rec.Size, fileMax, totalMax, maxFiles, len(out.files))+")")
				}
				continue
			}
			data := make([]byte, rec.Size)
			if _, err := io.ReadFull(br, data); err != nil {
				return out, fmt.Errorf("codeexec: report: %w", err)
			}
			if old, ok := before[name]; ok && bytes.Equal(old, data) {
				continue
			}
			total += rec.Size
			out.files = append(out.files, File{Name: name, MIMEType: mimeType(name, data), Data: data})
		default:
			return out, fmt.Errorf("codeexec: report: unknown record %q", line)
		}
	}
}

// sameAs compares what is written to it with want.
type sameAs struct {
	want []byte
	n    int64
	diff bool
}

func (s *sameAs) Write(p []byte) (int, error) {
	if !s.diff && s.n+int64(len(p)) <= int64(len(s.want)) {
		s.diff = !bytes.Equal(s.want[s.n:s.n+int64(len(p))], p)
	} else {
		s.diff = true
	}
	s.n += int64(len(p))
	return len(p), nil
}

func (s *sameAs) equal(size int64) bool { return !s.diff && size == int64(len(s.want)) }

func whyLeft(size, fileMax, totalMax int64, maxFiles, n int) string {
	switch {
	case size > fileMax:
		return fmt.Sprintf("larger than %d bytes", fileMax)
	case n >= maxFiles:
		return fmt.Sprintf("more than %d files", maxFiles)
	default:
		return fmt.Sprintf("over %d bytes of files in all", totalMax)
	}
}

// leftOut lists the files not returned, at most 20 of them.
func leftOut(left []string) string {
	const show = 20
	if len(left) <= show {
		return strings.Join(left, ", ")
	}
	return strings.Join(left[:show], ", ") + fmt.Sprintf(" and %d more", len(left)-show)
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
