package bench_test

import (
	"bufio"
	"bytes"
	"fmt"
	"net/http"
	"os"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// s8Requests is the number of requests S8 times at each concurrency.
const s8Requests = 3000

// BenchmarkS8 is scenario S8, the latency a user feels: the S5 server (its
// own process, in-memory sessions) runs S1 turns for 1, 16 and 64
// concurrent sessions, each held by a client of its own that posts
// /run_sse again as soon as a stream ends, until 3,000 requests
// (LOOM_BENCH_S8_REQUESTS) are timed, after 10% as many untimed. Each
// request is timed from its send to the first byte of the event stream
// (first-*) and to the end of the final event (final-*). It reports p50
// and p99 of both, in ms, and final-p99/p50 (target: 3 or less at 16
// sessions). The load client's own garbage collector is off while it
// times requests, so that its pauses are not counted as the server's
// latency (a few thousand requests' garbage is a few tens of MB):
//
//	go test ./bench -run '^$' -bench S8 -benchtime 1x
func BenchmarkS8(b *testing.B) {
	for _, n := range []int{1, 16, 64} {
		b.Run(fmt.Sprint("sessions=", n), func(b *testing.B) { benchS8(b, n, false) })
	}
}

// BenchmarkS8Floor is S8 against S5's floor server (bare net/http
// handlers that answer /run_sse with S1's events, no runtime): the tail
// this machine gives any server under the same load, to read S8's
// p99/p50 against.
//
//	go test ./bench -run '^$' -bench 'S8' -benchtime 1x
func BenchmarkS8Floor(b *testing.B) {
	for _, n := range []int{1, 16, 64} {
		b.Run(fmt.Sprint("sessions=", n), func(b *testing.B) { benchS8(b, n, true) })
	}
}

func benchS8(b *testing.B, sessions int, floor bool) {
	requests := envInt(b, "LOOM_BENCH_S8_REQUESTS", s8Requests)
	warm := requests / 10
	srv := startS5Server(b, floor)
	transport := &http.Transport{MaxIdleConnsPerHost: sessions, MaxConnsPerHost: sessions, DisableCompression: true}
	defer transport.CloseIdleConnections()
	clients := make([]*s5Client, sessions)
	for i := range clients {
		c := &s5Client{http: &http.Client{Transport: transport, Timeout: 30 * time.Second}, base: srv.base, user: "user" + strconv.Itoa(i)}
		var err error
		if c.session, err = c.createSession(); err != nil {
			b.Fatal(err)
		}
		clients[i] = c
	}
	for b.Loop() {
		gc := debug.SetGCPercent(-1)
		first := make([][]time.Duration, sessions)
		final := make([][]time.Duration, sessions)
		var next atomic.Int64
		forEachClient(b, clients, func(i int, c *s5Client) error {
			for {
				n := next.Add(1)
				if n > int64(warm+requests) {
					return nil
				}
				f, l, err := c.timedRun()
				if err != nil {
					return err
				}
				if n > int64(warm) {
					first[i], final[i] = append(first[i], f), append(final[i], l)
				}
			}
		})
		debug.SetGCPercent(gc)
		fs, ls := slices.Concat(first...), slices.Concat(final...)
		slices.Sort(fs)
		slices.Sort(ls)
		ms := func(d time.Duration) float64 { return float64(d) / 1e6 }
		b.ReportMetric(ms(s5Percentile(fs, 0.50)), "first-p50-ms")
		b.ReportMetric(ms(s5Percentile(fs, 0.99)), "first-p99-ms")
		b.ReportMetric(ms(s5Percentile(ls, 0.50)), "final-p50-ms")
		b.ReportMetric(ms(s5Percentile(ls, 0.99)), "final-p99-ms")
		b.ReportMetric(float64(s5Percentile(ls, 0.99))/float64(s5Percentile(ls, 0.50)), "final-p99/p50")
	}
}

// timedRun posts one /run_sse request in c's session and returns the time
// to the first byte of the event stream and to the end of its final event
// (the text "3"), after checking the stream as run does.
func (c *s5Client) timedRun() (first, final time.Duration, err error) {
	body := `{"appName":"s1","userId":"` + c.user + `","sessionId":"` + c.session +
		`","newMessage":{"role":"user","parts":[{"text":"What is 1+2?"}]},"streaming":false}`
	t0 := time.Now()
	resp, err := c.http.Post(c.base+"/run_sse", "application/json", strings.NewReader(body))
	if err != nil {
		return 0, 0, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return 0, 0, fmt.Errorf("run: status %d", resp.StatusCode)
	}
	r := bufio.NewReader(resp.Body)
	if _, err := r.Peek(1); err != nil {
		return 0, 0, fmt.Errorf("run: no stream: %w", err)
	}
	first = time.Since(t0)
	c.buf.Reset()
	for {
		line, err := r.ReadBytes('\n')
		c.buf.Write(line)
		if bytes.HasPrefix(line, []byte("data: ")) && bytes.Contains(line, []byte(`"text":"3"`)) && final == 0 {
			final = time.Since(t0)
		}
		if err != nil {
			break
		}
	}
	out := c.buf.Bytes()
	if final == 0 || bytes.Count(out, []byte("data: ")) != 3 || !(bytes.HasSuffix(out, []byte(": done\n\n")) || os.Getenv(s5PeerEnv) != "") {
		return 0, 0, fmt.Errorf("run: unexpected stream %q", out)
	}
	return first, final, nil
}
