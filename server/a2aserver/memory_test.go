package a2aserver_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"iter"
	"net/http"
	"net/http/httptest"
	"runtime"
	"runtime/metrics"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"google.golang.org/genai"

	"github.com/loomkit/loom/agent"
	"github.com/loomkit/loom/event"
	"github.com/loomkit/loom/runner"
	"github.com/loomkit/loom/server/a2aserver"
	"github.com/loomkit/loom/session/memsession"
)

// holder is an agent that answers with a short text, then holds its
// invocation until released, so that many tasks are in flight at once.
type holder struct {
	inside  atomic.Int64
	release chan struct{}
}

func (h *holder) run(ctx context.Context, inv *agent.Invocation) iter.Seq2[*event.Event, error] {
	return func(yield func(*event.Event, error) bool) {
		n := 0
		for _, p := range inv.UserContent().Parts {
			n += len(p.Text)
		}
		ev := inv.NewEvent()
		ev.Content = genaiText(fmt.Sprintf("Got %d bytes.", n))
		if !yield(ev, nil) {
			return
		}
		h.inside.Add(1)
		select {
		case <-h.release:
		case <-ctx.Done():
			return
		}
		ev = inv.NewEvent()
		ev.Content = genaiText("Done.")
		yield(ev, nil)
	}
}

func holderRunner(t testing.TB) (*holder, *runner.Runner) {
	t.Helper()
	h := &holder{release: make(chan struct{})}
	root, err := agent.New(agent.Config{Name: "holder", Run: h.run})
	if err != nil {
		t.Fatal(err)
	}
	r, err := runner.New(runner.Config{AppName: "assistant", Agent: root, Sessions: memsession.NewService(), AutoCreateSession: true})
	if err != nil {
		t.Fatal(err)
	}
	return h, r
}

// streamRequest is the body of a message/stream request whose text part
// holds size bytes.
func streamRequest(size int) []byte {
	b, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 1, "method": "message/stream", "params": map[string]any{
		"message": map[string]any{"kind": "message", "messageId": fmt.Sprint("m-", time.Now().UnixNano()), "role": "user",
			"parts": []any{map[string]any{"kind": "text", "text": strings.Repeat("x", size)}}}}})
	return b
}

// stream sends body to the JSON-RPC endpoint at url and reads the event
// stream to its end, counting the events in read; it returns their number.
func stream(ctx context.Context, url string, body []byte, read *atomic.Int64) (int, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		return 0, err
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	// Lines are read in fragments of the reader's buffer, so that the
	// client holds no event while it waits for the next.
	rd := bufio.NewReaderSize(resp.Body, 16<<10)
	n, start := 0, true
	for {
		line, more, err := rd.ReadLine()
		if err == io.EOF {
			return n, nil
		}
		if err != nil {
			return n, err
		}
		if start && strings.HasPrefix(string(line), "data: ") {
			n++
			read.Add(1)
			if strings.HasPrefix(string(line), `data: {"error"`) || strings.Contains(string(line), `"error":{`) {
				return n, fmt.Errorf("error event: %.200s", line)
			}
		}
		start = !more
	}
}

// heapSampler records the peak of the heap's live and dead objects.
type heapSampler struct {
	peak atomic.Uint64
	stop chan struct{}
	done chan struct{}
}

func sampleHeap() *heapSampler {
	s := &heapSampler{stop: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(s.done)
		sample := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
		t := time.NewTicker(time.Millisecond)
		defer t.Stop()
		for {
			metrics.Read(sample)
			if v := sample[0].Value.Uint64(); v > s.peak.Load() {
				s.peak.Store(v)
			}
			select {
			case <-s.stop:
				return
			case <-t.C:
			}
		}
	}()
	return s
}

func (s *heapSampler) end() uint64 {
	close(s.stop)
	<-s.done
	return s.peak.Load()
}

// liveHeap returns the bytes of live heap objects after a collection.
func liveHeap() uint64 {
	runtime.GC()
	runtime.GC()
	sample := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
	metrics.Read(sample)
	return sample[0].Value.Uint64()
}

// largeStreams is what concurrentLargeStreams measures, in bytes.
type largeStreams struct {
	base     uint64 // live heap before the requests
	inFlight uint64 // live heap while every stream is in flight
	peak     uint64 // peak heap (live and dead objects) over the whole run
	after    uint64 // live heap once every task has finished
}

// concurrentLargeStreams sends n message/stream requests of size bytes at
// once to an A2A handler of cfg and measures the heap.
func concurrentLargeStreams(t testing.TB, cfg a2aserver.Config, n, size int) largeStreams {
	h, r := holderRunner(t)
	cfg.Runner = r
	_, base := serveConfig(t, cfg)
	bodies := make([][]byte, n)
	for i := range bodies {
		bodies[i] = streamRequest(size)
	}
	var m largeStreams
	m.base = liveHeap()
	sampler := sampleHeap()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var wg sync.WaitGroup
	var read atomic.Int64
	errs := make(chan error, n)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if k, err := stream(ctx, base, bodies[i], &read); err != nil || k < 4 {
				errs <- fmt.Errorf("stream %d: %d events, %v", i, k, err)
			}
		}()
	}
	// Each task holds after its fourth event (the task, working, the
	// agent's message and its artifact), once every client has it.
	for h.inside.Load() < int64(n) || read.Load() < int64(4*n) {
		if ctx.Err() != nil {
			t.Fatalf("%d of %d tasks started, %d events read", h.inside.Load(), n, read.Load())
		}
		time.Sleep(5 * time.Millisecond)
	}
	m.inFlight = liveHeap()
	close(h.release)
	wg.Wait()
	m.peak = sampler.end()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	bodies = nil
	m.after = liveHeap()
	return m
}

// serveConfig serves an A2A handler of cfg at the returned URL.
func serveConfig(t testing.TB, cfg a2aserver.Config) (*a2aserver.Handler, string) {
	t.Helper()
	h, err := a2aserver.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptestServer(t, h)
	return h, srv
}

// TestLargeStreamsMemoryBounded: concurrent message/stream requests of a
// few MiB each hold a few copies of their message each while they are in
// flight (the request's JSON and the message it decodes to, the task the
// SDK keeps, the session's event), not one per event; once they finish,
// the tasks kept stay within Config.MaxTaskBytes, beside the sessions.
func TestLargeStreamsMemoryBounded(t *testing.T) {
	const n, size, maxTaskBytes = 8, 1 << 20, 2 << 20
	m := concurrentLargeStreams(t, a2aserver.Config{MaxTaskBytes: maxTaskBytes}, n, size)
	inFlight := (int64(m.inFlight) - int64(m.base)) / n
	t.Logf("in flight: %.1f MiB live per stream; kept: %.1f MiB; peak: %.1f MiB", float64(inFlight)/(1<<20),
		float64(int64(m.after)-int64(m.base))/(1<<20), float64(int64(m.peak)-int64(m.base))/(1<<20))
	if inFlight > 6*size {
		t.Errorf("%.1f MiB live per stream in flight, want at most %d MiB (%d copies of its message)", float64(inFlight)/(1<<20), 6*size>>20, 6)
	}
	// The sessions keep each message once; the tasks, at most the bound
	// and the task saved last.
	if kept := int64(m.after) - int64(m.base); kept > n*size+maxTaskBytes+size+(2<<20) {
		t.Errorf("%.1f MiB kept once the tasks finished, want at most %d MiB of sessions and %d MiB of tasks", float64(kept)/(1<<20), n*size>>20, (maxTaskBytes+size)>>20)
	}
}

// BenchmarkConcurrentLargeStreams: 20 message/stream requests of 3 MiB
// at once; it reports the live heap per stream while they are all in
// flight, the peak heap and the live heap the finished tasks keep.
func BenchmarkConcurrentLargeStreams(b *testing.B) {
	const n, size = 20, 3 << 20
	for b.Loop() {
		m := concurrentLargeStreams(b, a2aserver.Config{}, n, size)
		b.ReportMetric(float64(int64(m.inFlight)-int64(m.base))/n/(1<<20), "MiB-live/stream")
		b.ReportMetric(float64(int64(m.peak)-int64(m.base))/(1<<20), "MiB-peak")
		b.ReportMetric(float64(int64(m.after)-int64(m.base))/(1<<20), "MiB-kept")
	}
}

func genaiText(s string) *genai.Content { return genai.NewContentFromText(s, genai.RoleModel) }

func httptestServer(t testing.TB, h http.Handler) string {
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return srv.URL
}
