package server_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/loomkit/loom/agent/llmagent"
	"github.com/loomkit/loom/model"
	"github.com/loomkit/loom/model/scripted"
	"github.com/loomkit/loom/plugin"
	"github.com/loomkit/loom/plugin/telemetry"
	"github.com/loomkit/loom/runner"
	"github.com/loomkit/loom/server"
	"github.com/loomkit/loom/session/sqlsession"
)

// TestSoakMemoryLevelsOff serves an LLM agent with telemetry, sessions in
// SQLite, and loads it with turns over ever more sessions: half the
// clients start a session per turn, half hold conversations of 5 turns
// (short enough that the conversations in flight, which no cache bounds,
// cycle many times within a third of the samples).
// Once the runner's session cache and the span store have filled up, it
// samples for 3 s: they stay within their bounds, and the live heap levels
// off: its median over the last third of the samples is within 20% (and a
// little slack for the requests in flight) of that over the middle third.
func TestSoakMemoryLevelsOff(t *testing.T) {
	if testing.Short() {
		t.Skip("a 3 s soak")
	}
	ctx := context.Background()
	svc, err := sqlsession.NewService(ctx, "sqlite://"+filepath.Join(t.TempDir(), "sessions.db")+"?_pragma=cache_size(-128)", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer svc.Close()
	const cacheBytes, spanBytes = 512 << 10, 512 << 10
	tel, err := telemetry.New(telemetry.Config{MaxSpanBytes: spanBytes})
	if err != nil {
		t.Fatal(err)
	}
	defer tel.Shutdown(ctx)
	m := scripted.New("echo", func(_ context.Context, req *model.Request) (scripted.Turn, error) {
		return scripted.Text(fmt.Sprint("heard ", len(req.Contents), " contents")), nil
	})
	ag, err := llmagent.New(llmagent.Config{Name: "echo", Model: m})
	if err != nil {
		t.Fatal(err)
	}
	r, err := runner.New(runner.Config{AppName: "soak", Agent: ag, Sessions: svc, SessionCacheBytes: cacheBytes,
		Plugins: []*plugin.Plugin{tel.Plugin()}})
	if err != nil {
		t.Fatal(err)
	}
	srv, err := server.New(server.Config{Apps: []*runner.Runner{r}, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(srv)
	defer hs.Close()

	text := strings.Repeat("soak ", 3200) // 16 KB a turn
	post := func(path, body string) ([]byte, error) {
		resp, err := hs.Client().Post(hs.URL+path, "application/json", strings.NewReader(body))
		if err != nil {
			return nil, err
		}
		defer resp.Body.Close()
		out, err := io.ReadAll(resp.Body)
		if err == nil && resp.StatusCode != http.StatusOK {
			err = fmt.Errorf("POST %s: status %d: %s", path, resp.StatusCode, out)
		}
		return out, err
	}
	var turns atomic.Int64
	stop := make(chan struct{})
	errs := make(chan error, 8)
	var wg sync.WaitGroup
	for c := range 8 {
		length := 1
		if c%2 == 1 {
			length = 5
		}
		user := fmt.Sprint("user", c)
		wg.Go(func() {
			var id string
			for n := 0; ; n++ {
				select {
				case <-stop:
					return
				default:
				}
				if n%length == 0 {
					out, err := post("/apps/soak/users/"+user+"/sessions", "")
					var s struct{ ID string }
					if err == nil {
						err = json.Unmarshal(out, &s)
					}
					if err != nil {
						errs <- err
						return
					}
					id = s.ID
				}
				out, err := post("/run", `{"appName":"soak","userId":"`+user+`","sessionId":"`+id+
					`","newMessage":{"role":"user","parts":[{"text":"`+text+`"}]}}`)
				if err == nil && !strings.Contains(string(out), "heard ") {
					err = fmt.Errorf("run: unexpected answer %.200s", out)
				}
				if err != nil {
					errs <- err
					return
				}
				turns.Add(1)
			}
		})
	}

	fail := func(err error) {
		t.Helper()
		close(stop)
		wg.Wait()
		t.Fatal(err)
	}
	// Warm up until both stores hold at least three quarters of their bound.
	for deadline := time.Now().Add(30 * time.Second); ; {
		_, b := r.CacheUsage()
		if b >= cacheBytes*3/4 && tel.Exporter().Bytes() >= spanBytes*3/4 {
			break
		}
		if time.Now().After(deadline) {
			fail(fmt.Errorf("after 30 s and %d turns the session cache holds %d bytes and the span store %d", turns.Load(), b, tel.Exporter().Bytes()))
		}
		select {
		case err := <-errs:
			fail(err)
		case <-time.After(50 * time.Millisecond):
		}
	}
	warm := turns.Load()

	// Sample the live heap, and the bounded stores, every 100 ms.
	var heap []uint64
	start := time.Now()
	for time.Since(start) < 3*time.Second {
		select {
		case err := <-errs:
			fail(err)
		case <-time.After(100 * time.Millisecond):
		}
		runtime.GC()
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		heap = append(heap, ms.HeapInuse)
		if n, b := r.CacheUsage(); b > cacheBytes {
			t.Errorf("the session cache holds %d sessions of %d bytes, over its bound of %d", n, b, cacheBytes)
		}
		if b := tel.Exporter().Bytes(); b > spanBytes {
			t.Errorf("the span store holds %d bytes, over its bound of %d", b, spanBytes)
		}
	}
	close(stop)
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	third := len(heap) / 3
	median := func(xs []uint64) float64 {
		xs = slices.Clone(xs)
		slices.Sort(xs)
		return float64(xs[len(xs)/2])
	}
	middle, last := median(heap[third:2*third]), median(heap[2*third:])
	t.Logf("%d turns to warm up, %d more sampled; heap in use after GC: first %.1f MB, middle third %.1f MB, last third %.1f MB",
		warm, turns.Load()-warm, float64(heap[0])/(1<<20), middle/(1<<20), last/(1<<20))
	if turns.Load()-warm < 10 {
		t.Fatalf("only %d turns in 3 s: the soak did not load the server", turns.Load()-warm)
	}
	if last > 1.2*middle+1<<20 {
		t.Errorf("the heap keeps growing: %.1f MB over the last third of the run, %.1f MB over the middle third", last/(1<<20), middle/(1<<20))
	}
}
