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
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/loomkit/loom/runner"
	"github.com/loomkit/loom/server"
	"github.com/loomkit/loom/session/memsession"
)

// s5Clients is the number of concurrent load clients (BENCHMARKS.md S5).
const s5Clients = 16

// BenchmarkS5 measures the HTTP server: a real listener on 127.0.0.1
// serving the S1 agent (an LLM agent with the function tool add(a, b) on a
// scripted model that calls add{a:1,b:2}, then answers "3"), loaded by 16
// concurrent clients posting /run_sse. b.N requests are spread over the
// clients; run it as
//
//	go test ./bench -run '^$' -bench BenchmarkS5 -benchtime 10s
//
// so that the measured round lasts about 10 s. In "fresh" mode a request is
// a session create followed by one run in it; in "reuse" mode each client
// keeps one session for all its requests.
//
// Metrics: req/s, p50-ms and p99-ms latency of a request, cpu-us/req
// (process CPU time per request, from getrusage) and peak-RSS-MB (VmHWM).
// The load client runs in the same process as the server, so CPU and RSS
// include the client's share.
func BenchmarkS5(b *testing.B) {
	b.Run("fresh", func(b *testing.B) { benchS5(b, true) })
	b.Run("reuse", func(b *testing.B) { benchS5(b, false) })
}

func s5App(b *testing.B) *runner.Runner {
	b.Helper()
	app, err := runner.New(runner.Config{AppName: "s1", Agent: newS1Agent(b), Sessions: memsession.NewService()})
	if err != nil {
		b.Fatal(err)
	}
	return app
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
		!bytes.HasSuffix(out, []byte(": done\n\n")) || !bytes.Contains(out, []byte(`"text":"3"`)) {
		return fmt.Errorf("run: status %d, unexpected stream %q", resp.StatusCode, out)
	}
	return nil
}

func benchS5(b *testing.B, fresh bool) {
	srv, err := server.New(server.Config{Apps: []*runner.Runner{s5App(b)}, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		b.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	hs := &http.Server{Handler: srv, ReadHeaderTimeout: 10 * time.Second}
	hs.RegisterOnShutdown(func() { srv.Close() })
	go hs.Serve(ln)
	defer func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		hs.Shutdown(ctx)
	}()

	transport := &http.Transport{MaxIdleConnsPerHost: s5Clients, MaxConnsPerHost: s5Clients, DisableCompression: true}
	defer transport.CloseIdleConnections()
	clients := make([]*s5Client, s5Clients)
	for i := range clients {
		c := &s5Client{http: &http.Client{Transport: transport}, base: "http://" + ln.Addr().String(), user: "user" + strconv.Itoa(i)}
		if !fresh {
			if c.session, err = c.createSession(); err != nil {
				b.Fatal(err)
			}
		}
		clients[i] = c
	}

	var remaining atomic.Int64
	remaining.Store(int64(b.N))
	latencies := make([][]time.Duration, s5Clients)
	errs := make(chan error, s5Clients)
	var wg sync.WaitGroup
	cpu0 := s5CPUTime()
	b.ResetTimer()
	start := time.Now()
	for i, c := range clients {
		wg.Go(func() {
			for remaining.Add(-1) >= 0 {
				t0 := time.Now()
				id := c.session
				if fresh {
					var err error
					if id, err = c.createSession(); err != nil {
						errs <- err
						return
					}
				}
				if err := c.run(id); err != nil {
					errs <- err
					return
				}
				latencies[i] = append(latencies[i], time.Since(t0))
			}
		})
	}
	wg.Wait()
	elapsed := time.Since(start)
	b.StopTimer()
	cpu := s5CPUTime() - cpu0
	close(errs)
	for err := range errs {
		b.Fatal(err)
	}

	all := slices.Concat(latencies...)
	slices.Sort(all)
	n := float64(len(all))
	b.ReportMetric(n/elapsed.Seconds(), "req/s")
	b.ReportMetric(float64(s5Percentile(all, 0.50))/1e6, "p50-ms")
	b.ReportMetric(float64(s5Percentile(all, 0.99))/1e6, "p99-ms")
	b.ReportMetric(float64(cpu.Microseconds())/n, "cpu-us/req")
	if rss, err := s5PeakRSS(); err == nil {
		b.ReportMetric(float64(rss)/(1<<20), "peak-RSS-MB")
	}
}

func s5Percentile(sorted []time.Duration, q float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	return sorted[min(len(sorted)-1, int(q*float64(len(sorted))))]
}

// s5CPUTime returns the user plus system CPU time of the process.
func s5CPUTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// s5PeakRSS returns the process's peak resident set size (VmHWM) in bytes.
func s5PeakRSS() (int64, error) {
	f, err := os.Open("/proc/self/status")
	if err != nil {
		return 0, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "VmHWM:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			return kb << 10, err
		}
	}
	return 0, io.ErrUnexpectedEOF
}
