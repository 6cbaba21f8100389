package bench_test

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"runtime/pprof"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/loomkit/loom/plugin"
	"github.com/loomkit/loom/plugin/telemetry"
	"github.com/loomkit/loom/runner"
	"github.com/loomkit/loom/server"
	"github.com/loomkit/loom/session/sqlsession"
)

// BenchmarkSoak runs S5-style load against the server as `loom api` serves
// it, sessions in SQLite (a file in a temporary directory) and spans in
// the telemetry plugin's in-memory store, for a while (LOOM_SOAK, a Go
// duration; 20s by default, e.g. LOOM_SOAK=10m), and follows the
// process's resident memory:
//
//	LOOM_SOAK=3m go test ./bench -run '^$' -bench BenchmarkSoak -benchtime 1x -timeout 0
//
// Of the 16 clients, half create a session for every request (S5 fresh)
// and half hold conversations of LOOM_SOAK_TURNS turns (50 by default: S5
// reuse, with conversations of a bounded length, as users have them; 0
// keeps one conversation per client for the whole run, as S5 reuse does);
// so the number of sessions grows without bound while each stays short.
//
// It logs VmRSS, the Go heap in use and what the session cache and the
// span store hold every twentieth of the run, and
// reports req/s, peak-RSS-MB and rss-last/warm: the RSS at the end over
// the RSS after the warm-up (the first fifth of the run). A server whose
// memory is bounded by its configuration levels off: the ratio stays near 1.
// LOOM_SOAK_HEAPPROFILE names a file to write a heap profile to at the end
// of the run, before the server stops.
func BenchmarkSoak(b *testing.B) {
	dur := 20 * time.Second
	if v := os.Getenv("LOOM_SOAK"); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil {
			b.Fatalf("LOOM_SOAK=%q: %v", v, err)
		}
		dur = d
	}
	turns := 50
	if v := os.Getenv("LOOM_SOAK_TURNS"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 0 {
			b.Fatalf("LOOM_SOAK_TURNS=%q: want a number of turns", v)
		}
		turns = n
	}
	ctx := context.Background()
	svc, err := sqlsession.NewService(ctx, "sqlite://"+filepath.Join(b.TempDir(), "sessions.db"), nil)
	if err != nil {
		b.Fatal(err)
	}
	defer svc.Close()
	tel, err := telemetry.New(telemetry.Config{})
	if err != nil {
		b.Fatal(err)
	}
	defer tel.Shutdown(ctx)
	app, err := runner.New(runner.Config{AppName: "s1", Agent: newS1Agent(b), Sessions: svc, Plugins: []*plugin.Plugin{tel.Plugin()}})
	if err != nil {
		b.Fatal(err)
	}
	srv, err := server.New(server.Config{Apps: []*runner.Runner{app}, Logger: slog.New(slog.DiscardHandler)})
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

	b.ResetTimer()
	stop := make(chan struct{})
	var requests atomic.Int64
	errs := make(chan error, s5Clients)
	var wg sync.WaitGroup
	for i := range s5Clients {
		c := &s5Client{http: &http.Client{Transport: transport}, base: "http://" + ln.Addr().String(), user: "user" + strconv.Itoa(i)}
		turns := turns
		if i%2 == 0 {
			turns = 1
		}
		wg.Go(func() {
			for n := 0; ; n++ {
				select {
				case <-stop:
					return
				default:
				}
				if n == 0 || (turns > 0 && n%turns == 0) {
					var err error
					if c.session, err = c.createSession(); err != nil {
						errs <- err
						return
					}
				}
				if err := c.run(c.session); err != nil {
					errs <- err
					return
				}
				requests.Add(1)
			}
		})
	}

	const samples = 20
	every := dur / samples
	start := time.Now()
	var rss []int64
	var peak int64
	for i := 1; i <= samples; i++ {
		select {
		case err := <-errs:
			close(stop)
			wg.Wait()
			b.Fatal(err)
		case <-time.After(time.Until(start.Add(time.Duration(i) * every))):
		}
		r, err := soakRSS()
		if err != nil {
			b.Fatal(err)
		}
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		rss = append(rss, r)
		peak = max(peak, r)
		cached, cacheBytes := app.CacheUsage()
		b.Logf("t=%6.1fs  RSS %6.1f MB  heap in use %6.1f MB  requests %6d  cached sessions %4d (%5.1f MB)  spans %5d (%5.1f MB)",
			time.Since(start).Seconds(), float64(r)/(1<<20), float64(ms.HeapInuse)/(1<<20), requests.Load(),
			cached, float64(cacheBytes)/(1<<20), tel.Exporter().Len(), float64(tel.Exporter().Bytes())/(1<<20))
	}
	close(stop)
	wg.Wait()
	elapsed := time.Since(start)
	b.StopTimer()
	if path := os.Getenv("LOOM_SOAK_HEAPPROFILE"); path != "" {
		f, err := os.Create(path)
		if err != nil {
			b.Fatal(err)
		}
		runtime.GC()
		if err := pprof.WriteHeapProfile(f); err != nil {
			b.Fatal(err)
		}
		f.Close()
	}
	close(errs)
	for err := range errs {
		b.Fatal(err)
	}
	b.ReportMetric(float64(requests.Load())/elapsed.Seconds(), "req/s")
	b.ReportMetric(float64(peak)/(1<<20), "peak-RSS-MB")
	b.ReportMetric(float64(rss[len(rss)-1])/float64(rss[samples/5-1]), "rss-last/warm")
}

// soakRSS returns the process's resident set size (VmRSS) in bytes.
func soakRSS() (int64, error) {
	f, err := os.Open("/proc/self/status")
	if err != nil {
		return 0, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "VmRSS:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			return kb << 10, err
		}
	}
	return 0, fmt.Errorf("VmRSS: %w", io.ErrUnexpectedEOF)
}
