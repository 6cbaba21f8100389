package bench_test

import (
	"net/http"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/loomkit/loom/session/memsession"
)

// sseFloorRounds is the number of alternating windows per server of
// BenchmarkS5SSEFloor.
const sseFloorRounds = 4

// BenchmarkS5SSEFloor sets S5's server CPU per /run_sse request (reuse
// mode) against its floors, all measured in one run: the Loom server and
// the bare net/http SSE handler (s5FloorHandler) run side by side, each in
// its own process, and the 16 clients load them in turn, in 4 alternating
// windows of a quarter of LOOM_BENCH_S5_DURATION each (10 s by default);
// S1 runs in this process between the windows (2,000 invocations over 100
// sessions each time). It reports loom-cpu-us/req, floor-cpu-us/req,
// s1-us/inv and cpu/(S1+1.5floor): Loom's CPU per request over S1's cost
// in process plus 1.5 times the floor's (target: 1 or less).
//
//	go test ./bench -run '^$' -bench S5SSEFloor -benchtime 1x
func BenchmarkS5SSEFloor(b *testing.B) {
	window := s5Duration(b, "LOOM_BENCH_S5_DURATION", 10*time.Second) / sseFloorRounds
	for b.Loop() {
		loom, floor := startS5Server(b, false), startS5Server(b, true)
		var loomCPU, floorCPU, s1 time.Duration
		var loomN, floorN, s1N int64
		for range sseFloorRounds {
			n, cpu := sseWindow(b, loom, window)
			loomN, loomCPU = loomN+n, loomCPU+cpu
			n, cpu = sseWindow(b, floor, window)
			floorN, floorCPU = floorN+n, floorCPU+cpu
			svc := memsession.NewService()
			r := newRunner(b, newS1Agent(b), svc)
			ids := createSessions(b, svc, 100)
			t0 := time.Now()
			for i := range 2000 {
				if n := invoke(b, r, ids[i%len(ids)]); n != 3 {
					b.Fatalf("invocation yielded %d events, want 3", n)
				}
			}
			s1 += time.Since(t0)
			s1N += 2000
			checkS1Sessions(b, svc, ids, 2000)
		}
		us := func(d time.Duration, n int64) float64 { return float64(d.Nanoseconds()) / 1e3 / float64(n) }
		l, f, s := us(loomCPU, loomN), us(floorCPU, floorN), us(s1, s1N)
		b.ReportMetric(l, "loom-cpu-us/req")
		b.ReportMetric(f, "floor-cpu-us/req")
		b.ReportMetric(s, "s1-us/inv")
		b.ReportMetric(l/(s+1.5*f), "cpu/(S1+1.5floor)")
	}
}

// sseWindow loads srv with 16 clients in reuse mode for d and returns the
// requests done and the server's CPU time meanwhile.
func sseWindow(b *testing.B, srv *s5Server, d time.Duration) (int64, time.Duration) {
	b.Helper()
	transport := &http.Transport{MaxIdleConnsPerHost: s5Clients, MaxConnsPerHost: s5Clients, DisableCompression: true}
	defer transport.CloseIdleConnections()
	clients := make([]*s5Client, s5Clients)
	for i := range clients {
		c := &s5Client{http: &http.Client{Transport: transport, Timeout: 30 * time.Second}, base: srv.base, user: "user" + strconv.Itoa(i)}
		var err error
		if c.session, err = c.createSession(); err != nil {
			b.Fatal(err)
		}
		clients[i] = c
	}
	cpu0, err := srv.cpuTime()
	if err != nil {
		b.Fatal(err)
	}
	var n atomic.Int64
	stop := time.Now().Add(d)
	forEachClient(b, clients, func(_ int, c *s5Client) error {
		for time.Now().Before(stop) {
			if err := c.run(c.session); err != nil {
				return err
			}
			n.Add(1)
		}
		return nil
	})
	cpu1, err := srv.cpuTime()
	if err != nil {
		b.Fatal(err)
	}
	return n.Load(), cpu1 - cpu0
}
