package bench_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/exec"
	"os/signal"
	"runtime/debug"
	"runtime/pprof"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"google.golang.org/genai"

	"github.com/loomkit/loom/runner"
	"github.com/loomkit/loom/server"
	"github.com/loomkit/loom/session/memsession"
	"github.com/loomkit/loom/session/sqlsession"
)

const (
	// s5Clients is the number of concurrent load clients.
	s5Clients = 16
	// s5MaxRequests bounds the requests of one measured round.
	s5MaxRequests = 2_000_000
	// s5ServerEnv, set in the environment of the test binary, makes it the
	// S5 server instead of running tests (see TestMain): the Loom server,
	// or with the value s5FloorServer the HTTP floor (s5FloorHandler).
	s5ServerEnv   = "LOOM_BENCH_S5_SERVER"
	s5FloorServer = "floor"
	// s5SQLiteServer is the Loom server with its sessions in the SQLite
	// file s5DBEnv names.
	s5SQLiteServer = "sqlite"
	s5DBEnv        = "LOOM_BENCH_S5_DB"
	// s5PeerEnv names a server command of another ADK implementation to
	// run in the Loom server's place, for comparisons on equal work: it
	// serves the S1 agent as app "s1" over ADK's HTTP API, prints "port N"
	// on stdout, stops when its stdin closes and, for S7, answers SIGUSR1
	// as s5Serve does. Its event streams need not end with Loom's end
	// comment.
	s5PeerEnv = "LOOM_BENCH_S5_COMMAND"
	// s5ClockTicks is the kernel's USER_HZ, the unit of the CPU times in
	// /proc/PID/stat (100 on every Linux architecture Go supports).
	s5ClockTicks = 100
)

// TestMain runs the S5 server when s5ServerEnv is set, and the tests and
// benchmarks otherwise.
func TestMain(m *testing.M) {
	if os.Getenv(s5ServerEnv) != "" {
		if err := s5Serve(); err != nil {
			fmt.Fprintln(os.Stderr, "s5 server:", err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// s5Serve is the S5 server process: the HTTP API serving the S1 agent with
// in-memory sessions (or, in mode s5SQLiteServer, sessions in SQLite), as
// "loom api" serves its apps, or the HTTP floor, on 127.0.0.1 at a port the
// kernel picks. It prints "port N" on stdout and serves until its stdin
// closes or it is signalled. On SIGUSR1 it collects its garbage, returns
// the free memory to the kernel (debug.FreeOSMemory) and prints "freed":
// S7 reads its private memory then, without the Go runtime's pacing in it.
func s5Serve() error {
	if path := os.Getenv("LOOM_BENCH_S5_CPUPROFILE"); path != "" {
		f, err := os.Create(path)
		if err != nil {
			return err
		}
		if err := pprof.StartCPUProfile(f); err != nil {
			return err
		}
		defer func() { pprof.StopCPUProfile(); f.Close() }()
	}
	var handler http.Handler
	onShutdown := func() {}
	if os.Getenv(s5ServerEnv) == s5FloorServer {
		handler = s5FloorHandler()
	} else {
		root, err := s1Agent()
		if err != nil {
			return err
		}
		svc := memsession.NewService()
		if os.Getenv(s5ServerEnv) == s5SQLiteServer {
			if svc, err = sqlsession.NewService(context.Background(), "sqlite://"+os.Getenv(s5DBEnv), nil); err != nil {
				return err
			}
			defer svc.Close()
		}
		app, err := runner.New(runner.Config{AppName: "s1", Agent: root, Sessions: svc})
		if err != nil {
			return err
		}
		srv, err := server.New(server.Config{Apps: []*runner.Runner{app}, Logger: slog.New(slog.DiscardHandler)})
		if err != nil {
			return err
		}
		handler, onShutdown = srv, func() { srv.Close() }
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	hs := &http.Server{Handler: handler, ReadHeaderTimeout: 10 * time.Second}
	hs.RegisterOnShutdown(onShutdown)
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	go func() {
		io.Copy(io.Discard, os.Stdin)
		stop()
	}()
	errc := make(chan error, 1)
	go func() { errc <- hs.Serve(ln) }()
	usr1 := make(chan os.Signal, 1)
	signal.Notify(usr1, syscall.SIGUSR1)
	go func() {
		for range usr1 {
			debug.FreeOSMemory()
			fmt.Println("freed")
		}
	}()
	fmt.Printf("port %d\n", ln.Addr().(*net.TCPAddr).Port)
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	if path := os.Getenv("LOOM_BENCH_S5_MEMPROFILE"); path != "" {
		f, err := os.Create(path)
		if err != nil {
			return err
		}
		err = pprof.Lookup("heap").WriteTo(f, 0)
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return err
		}
	}
	sctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	return hs.Shutdown(sctx)
}

// s5Server is the server child process.
type s5Server struct {
	cmd     *exec.Cmd
	stdin   io.Closer
	stdout  *bufio.Reader
	base    string
	started time.Time // when the process was started
}

// startS5Server starts the test binary again as the S5 server (the HTTP
// floor if floor is set) and waits for its port; the process ends when b
// does.
func startS5Server(b *testing.B, floor bool) *s5Server {
	b.Helper()
	mode := "loom"
	if floor {
		mode = s5FloorServer
	}
	return startServerMode(b, mode)
}

// startServerMode starts the test binary again as a server of the mode
// (see s5Serve) with the extra environment variables env, and waits for
// its port; the process ends when b does, if it has not been killed.
func startServerMode(b *testing.B, mode string, env ...string) *s5Server {
	b.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	if peer := os.Getenv(s5PeerEnv); peer != "" && mode == "loom" {
		cmd = exec.Command(peer)
	}
	cmd.Env = append(append(os.Environ(), s5ServerEnv+"="+mode), env...)
	cmd.Stderr = os.Stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		b.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		b.Fatal(err)
	}
	started := time.Now()
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	s := &s5Server{cmd: cmd, stdin: stdin, stdout: bufio.NewReader(stdout), started: started}
	b.Cleanup(func() {
		stdin.Close()
		done := make(chan struct{})
		go func() { cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(15 * time.Second):
			cmd.Process.Kill()
			<-done
		}
	})
	line, err := s.stdout.ReadString('\n')
	port, ok := strings.CutPrefix(strings.TrimSpace(line), "port ")
	if err != nil || !ok {
		b.Fatalf("S5 server did not report its port: %q, %v", line, err)
	}
	s.base = "http://127.0.0.1:" + port
	return s
}

// cpuTime returns the user plus system CPU time of the server process so far.
func (s *s5Server) cpuTime() (time.Duration, error) {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", s.cmd.Process.Pid))
	if err != nil {
		return 0, err
	}
	// The command name, field 2, is in parentheses and may hold spaces;
	// utime and stime are fields 14 and 15, the 12th and 13th after it.
	i := bytes.LastIndexByte(data, ')')
	fields := strings.Fields(string(data[i+1:]))
	if i < 0 || len(fields) < 13 {
		return 0, fmt.Errorf("unexpected /proc/PID/stat: %q", data)
	}
	utime, err1 := strconv.ParseInt(fields[11], 10, 64)
	stime, err2 := strconv.ParseInt(fields[12], 10, 64)
	if err1 != nil || err2 != nil {
		return 0, fmt.Errorf("unexpected /proc/PID/stat: %q", data)
	}
	return time.Duration(utime+stime) * time.Second / s5ClockTicks, nil
}

// peakRSS returns the server process's peak resident set size (VmHWM) in bytes.
func (s *s5Server) peakRSS() (int64, error) {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", s.cmd.Process.Pid))
	if err != nil {
		return 0, err
	}
	for line := range strings.SplitSeq(string(data), "\n") {
		if v, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			return kb << 10, err
		}
	}
	return 0, io.ErrUnexpectedEOF
}

// s5Duration reads a duration from the environment variable name, or
// returns def.
func s5Duration(b *testing.B, name string, def time.Duration) time.Duration {
	v := os.Getenv(name)
	if v == "" {
		return def
	}
	d, err := time.ParseDuration(v)
	if err != nil {
		b.Fatalf("%s: %v", name, err)
	}
	return d
}

// BenchmarkS5 is scenario S5: the HTTP API serving the S1 agent with
// in-memory sessions runs in a process of its own (this test binary started
// again, see TestMain) on 127.0.0.1; 16 concurrent clients in the benchmark
// process POST /run_sse for 10 s after a 2 s warm-up. In "fresh" mode a
// request is a session create followed by one run in it; in "reuse" mode
// each client keeps one session for all its requests. Each mode has a
// server of its own. Run it once per mode:
//
//	go test ./bench -run '^$' -bench S5 -benchtime 1x
//
// LOOM_BENCH_S5_DURATION and LOOM_BENCH_S5_WARMUP (Go durations) shorten
// the round for a quick check; LOOM_BENCH_S5_CPUPROFILE names a file for
// the server's CPU profile, LOOM_BENCH_S5_MEMPROFILE one for its heap
// profile as the round ends. Metrics: req/s, p50-ms and p99-ms latency of
// a request, server-peak-RSS-MB (the server's VmHWM) and server-cpu-us/req
// (the server's user plus system CPU time over the measured window, divided
// by the requests); ns/op is the whole round.
func BenchmarkS5(b *testing.B) {
	b.Run("fresh", func(b *testing.B) { benchS5(b, true, false) })
	b.Run("reuse", func(b *testing.B) { benchS5(b, false, false) })
}

// BenchmarkS5Floor is the HTTP floor under S5: the same load clients, in
// the same two modes, against a server process of net/http handlers that
// do the essential work of each request with no framework
// (s5FloorHandler). Its server-cpu-us/req is what HTTP itself costs a
// request on the machine, the yardstick for S5's.
func BenchmarkS5Floor(b *testing.B) {
	b.Run("fresh", func(b *testing.B) { benchS5(b, true, true) })
	b.Run("reuse", func(b *testing.B) { benchS5(b, false, true) })
}

// s5FloorFrames is the body of an S1 run's event stream as the Loom server
// sends it: the function call, its response and the final text, each a
// data frame, and the end comment.
var s5FloorFrames = []byte("data: " +
	`{"content":{"parts":[{"functionCall":{"id":"adk-a47e05dd-0ff9-414a-b799-e5a621f40237","args":{"a":1,"b":2},"name":"add"}}],"role":"model"},"finishReason":"STOP","turnComplete":true,"invocationId":"e-791e4026-881b-4f93-9a6c-afbecd09e869","author":"calculator","actions":{"stateDelta":{},"artifactDelta":{},"requestedAuthConfigs":{},"requestedToolConfirmations":{}},"id":"23a018d0-a6f6-48c5-98ff-174a0c023cf8","timestamp":1795467528.579623}` +
	"\n\ndata: " +
	`{"content":{"parts":[{"functionResponse":{"id":"adk-a47e05dd-0ff9-414a-b799-e5a621f40237","name":"add","response":{"result":3}}}],"role":"user"},"invocationId":"e-791e4026-881b-4f93-9a6c-afbecd09e869","author":"calculator","actions":{"stateDelta":{},"artifactDelta":{},"requestedAuthConfigs":{},"requestedToolConfirmations":{}},"id":"b651f63f-9f43-4001-a8b1-bec341372d5f","timestamp":1795467528.579718}` +
	"\n\ndata: " +
	`{"content":{"parts":[{"text":"3"}],"role":"model"},"finishReason":"STOP","turnComplete":true,"invocationId":"e-791e4026-881b-4f93-9a6c-afbecd09e869","author":"calculator","actions":{"stateDelta":{},"artifactDelta":{},"requestedAuthConfigs":{},"requestedToolConfirmations":{}},"id":"6b14ac04-4285-4ad3-a2fc-03087e51bf84","timestamp":1795467528.579761}` +
	"\n\n: done\n\n")

// s5FloorHandler serves the floor's two routes: a session create answers
// a new session id, and a run decodes its JSON request once and writes the
// canned event stream of an S1 run with the headers of an event stream.
func s5FloorHandler() http.Handler {
	var sessions atomic.Int64
	mux := http.NewServeMux()
	mux.HandleFunc("POST /apps/{app}/users/{user}/sessions", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"id":"floor-%d","appName":%q,"userId":%q,"state":{},"events":[],"lastUpdateTime":%d}`,
			sessions.Add(1), r.PathValue("app"), r.PathValue("user"), time.Now().Unix())
	})
	mux.HandleFunc("POST /run_sse", func(w http.ResponseWriter, r *http.Request) {
		var req struct {
			AppName    string         `json:"appName"`
			UserID     string         `json:"userId"`
			SessionID  string         `json:"sessionId"`
			NewMessage *genai.Content `json:"newMessage"`
			Streaming  bool           `json:"streaming"`
		}
		if err := json.NewDecoder(r.Body).Decode(&req); err != nil || req.NewMessage == nil {
			http.Error(w, "bad request", http.StatusBadRequest)
			return
		}
		h := w.Header()
		h.Set("Content-Type", "text/event-stream")
		h.Set("Cache-Control", "no-cache")
		h.Set("X-Accel-Buffering", "no")
		w.Write(s5FloorFrames)
	})
	return mux
}

// s5Client is one load client.
type s5Client struct {
	http    *http.Client
	base    string
	user    string
	session string
	buf     bytes.Buffer
}

// createSession creates a session and returns its id.
func (c *s5Client) createSession() (string, error) {
	resp, err := c.http.Post(c.base+"/apps/s1/users/"+c.user+"/sessions", "application/json", nil)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	var s struct {
		ID string `json:"id"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&s); err != nil || resp.StatusCode != http.StatusOK {
		return "", fmt.Errorf("create session: status %d: %v", resp.StatusCode, err)
	}
	return s.ID, nil
}

// run posts one /run_sse request and checks the stream: three events (call,
// response, final text) and the end marker.
func (c *s5Client) run(session string) error {
	body := `{"appName":"s1","userId":"` + c.user + `","sessionId":"` + session +
		`","newMessage":{"role":"user","parts":[{"text":"What is 1+2?"}]},"streaming":false}`
	resp, err := c.http.Post(c.base+"/run_sse", "application/json", strings.NewReader(body))
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	c.buf.Reset()
	if _, err := c.buf.ReadFrom(resp.Body); err != nil {
		return err
	}
	out := c.buf.Bytes()
	if resp.StatusCode != http.StatusOK || bytes.Count(out, []byte("data: ")) != 3 ||
		!(bytes.HasSuffix(out, []byte(": done\n\n")) || os.Getenv(s5PeerEnv) != "") || !bytes.Contains(out, []byte(`"text":"3"`)) {
		return fmt.Errorf("run: status %d, unexpected stream %q", resp.StatusCode, out)
	}
	return nil
}

// request is one S5 request of c: in fresh mode a session create and a run
// in it, in reuse mode a run in c's session.
func (c *s5Client) request(fresh bool) error {
	id := c.session
	if fresh {
		var err error
		if id, err = c.createSession(); err != nil {
			return err
		}
	}
	return c.run(id)
}

func benchS5(b *testing.B, fresh, floor bool) {
	duration := s5Duration(b, "LOOM_BENCH_S5_DURATION", 10*time.Second)
	warmup := s5Duration(b, "LOOM_BENCH_S5_WARMUP", 2*time.Second)
	srv := startS5Server(b, floor)

	transport := &http.Transport{MaxIdleConnsPerHost: s5Clients, MaxConnsPerHost: s5Clients, DisableCompression: true}
	defer transport.CloseIdleConnections()
	clients := make([]*s5Client, s5Clients)
	for i := range clients {
		c := &s5Client{http: &http.Client{Transport: transport, Timeout: 30 * time.Second}, base: srv.base, user: "user" + strconv.Itoa(i)}
		if !fresh {
			var err error
			if c.session, err = c.createSession(); err != nil {
				b.Fatal(err)
			}
		}
		clients[i] = c
	}

	// The clients run from the start of the warm-up to its end plus the
	// measured window; only requests that start inside the window count.
	var measuring atomic.Bool
	var sent atomic.Int64
	stopAt := time.Now().Add(warmup + duration)
	latencies := make([][]time.Duration, s5Clients)
	errs := make(chan error, s5Clients)
	var wg sync.WaitGroup
	for i, c := range clients {
		wg.Go(func() {
			for time.Now().Before(stopAt) {
				counted := measuring.Load()
				if counted && sent.Add(1) > s5MaxRequests {
					return
				}
				t0 := time.Now()
				if err := c.request(fresh); err != nil {
					errs <- err
					return
				}
				if counted {
					latencies[i] = append(latencies[i], time.Since(t0))
				}
			}
		})
	}
	time.Sleep(warmup)
	cpu0, err := srv.cpuTime()
	if err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	start := time.Now()
	measuring.Store(true)
	wg.Wait()
	elapsed := time.Since(start)
	b.StopTimer()
	cpu1, err := srv.cpuTime()
	if err != nil {
		b.Fatal(err)
	}
	rss, err := srv.peakRSS()
	if err != nil {
		b.Fatal(err)
	}
	close(errs)
	for err := range errs {
		b.Fatal(err)
	}

	all := slices.Concat(latencies...)
	if len(all) == 0 {
		b.Fatal("no request completed in the measured window")
	}
	slices.Sort(all)
	n := float64(len(all))
	b.ReportMetric(n/elapsed.Seconds(), "req/s")
	b.ReportMetric(float64(s5Percentile(all, 0.50))/1e6, "p50-ms")
	b.ReportMetric(float64(s5Percentile(all, 0.99))/1e6, "p99-ms")
	b.ReportMetric(float64((cpu1-cpu0).Microseconds())/n, "server-cpu-us/req")
	b.ReportMetric(float64(rss)/(1<<20), "server-peak-RSS-MB")
}

func s5Percentile(sorted []time.Duration, q float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	return sorted[min(len(sorted)-1, int(q*float64(len(sorted))))]
}
