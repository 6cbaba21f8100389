package bench_test

import (
	"encoding/json"
	"fmt"
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
)

const (
	// s7Requests is S7's fixed number of requests per mode.
	s7Requests = 20_000
	// s7Idle is the number of idle sessions S7 keeps resident per cycle.
	s7Idle = 2_000
	// s7Cycles is the number of create-and-delete cycles of S7.
	s7Cycles = 6
)

// BenchmarkS7 is scenario S7, memory at equal work: the S5 server (its
// own process, in-memory sessions) handles exactly 20,000 requests
// (LOOM_BENCH_S7_REQUESTS) from 16 clients, in S5's "fresh" and "reuse"
// modes, and then runs six cycles, each of which creates 2,000 sessions
// (LOOM_BENCH_S7_IDLE) with one S1 turn each, left idle and resident, and
// then deletes every session the server holds. Memory is the server's
// private memory (Private_Clean plus Private_Dirty of
// /proc/PID/smaps_rollup), read after the server has collected its
// garbage and returned its free memory to the kernel, so that what is
// measured is what the server holds, not when the Go runtime gives memory
// back. It reports:
//
//   - server-peak-RSS-MB: the server's VmHWM at the end of the requests;
//   - B/stored-event: the private memory the requests added, over the
//     events they stored (four per request);
//   - B/session: the same over the sessions they created (fresh mode);
//   - idle-KiB/session: the private memory a cycle's idle sessions add,
//     per session (the median over the cycles);
//   - returned-MB: the memory the first cycle's delete returned;
//   - floor-rise-KiB: the private memory after the last cycle's delete
//     less that after the first (0 or less: the floor is flat).
//
// Run it once:
//
//	go test ./bench -run '^$' -bench S7 -benchtime 1x
func BenchmarkS7(b *testing.B) {
	b.Run("fresh", func(b *testing.B) { benchS7(b, true) })
	b.Run("reuse", func(b *testing.B) { benchS7(b, false) })
}

func benchS7(b *testing.B, fresh bool) {
	requests := envInt(b, "LOOM_BENCH_S7_REQUESTS", s7Requests)
	idle := envInt(b, "LOOM_BENCH_S7_IDLE", s7Idle)
	for b.Loop() {
		srv := startS5Server(b, false)
		transport := &http.Transport{MaxIdleConnsPerHost: s5Clients, MaxConnsPerHost: s5Clients, DisableCompression: true}
		clients := make([]*s5Client, s5Clients)
		for i := range clients {
			clients[i] = &s5Client{http: &http.Client{Transport: transport, Timeout: 30 * time.Second}, base: srv.base, user: "user" + strconv.Itoa(i)}
		}
		base := srv.private(b)

		// The fixed work: requests, each a run (after a session create in
		// fresh mode), shared out among the clients.
		sessions := make([][]string, len(clients))
		if !fresh {
			for i, c := range clients {
				id, err := c.createSession()
				if err != nil {
					b.Fatal(err)
				}
				c.session, sessions[i] = id, []string{id}
			}
		}
		var next atomic.Int64
		forEachClient(b, clients, func(i int, c *s5Client) error {
			for next.Add(1) <= int64(requests) {
				if fresh {
					id, err := c.createSession()
					if err != nil {
						return err
					}
					c.session = id
					sessions[i] = append(sessions[i], id)
				}
				if err := c.run(c.session); err != nil {
					return err
				}
			}
			return nil
		})
		peak, err := srv.peakRSS()
		if err != nil {
			b.Fatal(err)
		}
		loaded := srv.private(b)
		checkStoredEvents(b, clients, sessions, 4*requests)
		added := float64(loaded - base)
		b.ReportMetric(float64(peak)/(1<<20), "server-peak-RSS-MB")
		b.ReportMetric(added/float64(4*requests), "B/stored-event")
		if fresh {
			b.ReportMetric(added/float64(requests), "B/session")
		}

		// The cycles: idle sessions created, then every session deleted.
		var perIdle []float64
		var floors []int64
		var returned int64
		for cycle := range s7Cycles {
			before := srv.private(b)
			var made atomic.Int64
			forEachClient(b, clients, func(i int, c *s5Client) error {
				for made.Add(1) <= int64(idle) {
					id, err := c.createSession()
					if err != nil {
						return err
					}
					if err := c.run(id); err != nil {
						return err
					}
					sessions[i] = append(sessions[i], id)
				}
				return nil
			})
			withIdle := srv.private(b)
			perIdle = append(perIdle, float64(withIdle-before)/float64(idle)/1024)
			forEachClient(b, clients, func(i int, c *s5Client) error {
				for _, id := range sessions[i] {
					if err := c.deleteSession(id); err != nil {
						return err
					}
				}
				sessions[i] = sessions[i][:0]
				return nil
			})
			floor := srv.private(b)
			floors = append(floors, floor)
			if cycle == 0 {
				returned = withIdle - floor
			}
		}
		transport.CloseIdleConnections()
		slices.Sort(perIdle)
		b.ReportMetric(perIdle[len(perIdle)/2], "idle-KiB/session")
		b.ReportMetric(float64(returned)/(1<<20), "returned-MB")
		b.ReportMetric(float64(floors[len(floors)-1]-floors[0])/1024, "floor-rise-KiB")
		b.Logf("private memory: at start %.1f MB, after the requests %.1f MB; idle KiB/session per cycle (sorted) %.1f; post-delete floor per cycle (MB) %.1f",
			float64(base)/(1<<20), float64(loaded)/(1<<20), perIdle, mb(floors))
	}
}

// mb returns byte counts in MB.
func mb(v []int64) []float64 {
	out := make([]float64, len(v))
	for i, n := range v {
		out[i] = float64(n) / (1 << 20)
	}
	return out
}

// forEachClient runs f for every client at once and fails b with the
// first error.
func forEachClient(b *testing.B, clients []*s5Client, f func(i int, c *s5Client) error) {
	b.Helper()
	errs := make(chan error, len(clients))
	var wg sync.WaitGroup
	for i, c := range clients {
		wg.Go(func() {
			if err := f(i, c); err != nil {
				errs <- err
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		b.Fatal(err)
	}
}

// checkStoredEvents fails b unless the sessions of the clients hold want
// events in all.
func checkStoredEvents(b *testing.B, clients []*s5Client, sessions [][]string, want int) {
	b.Helper()
	var total atomic.Int64
	forEachClient(b, clients, func(i int, c *s5Client) error {
		for _, id := range sessions[i] {
			n, err := c.countEvents(id)
			if err != nil {
				return err
			}
			total.Add(int64(n))
		}
		return nil
	})
	if total.Load() != int64(want) {
		b.Fatalf("the sessions hold %d events, want %d", total.Load(), want)
	}
}

// countEvents returns the number of events of the client's session id.
func (c *s5Client) countEvents(id string) (int, error) {
	resp, err := c.http.Get(c.base + "/apps/s1/users/" + c.user + "/sessions/" + id)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	var s struct {
		Events []struct {
			ID string `json:"id"`
		} `json:"events"`
	}
	if err := jsonDecode(resp, &s); err != nil {
		return 0, fmt.Errorf("get session %s: %w", id, err)
	}
	return len(s.Events), nil
}

// deleteSession deletes the client's session id.
func (c *s5Client) deleteSession(id string) error {
	req, err := http.NewRequest(http.MethodDelete, c.base+"/apps/s1/users/"+c.user+"/sessions/"+id, nil)
	if err != nil {
		return err
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return err
	}
	resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		return fmt.Errorf("delete session %s: status %d", id, resp.StatusCode)
	}
	return nil
}

// private returns the server's private memory (Private_Clean plus
// Private_Dirty of /proc/PID/smaps_rollup) after it has collected its
// garbage and returned its free memory to the kernel.
func (s *s5Server) private(b *testing.B) int64 {
	b.Helper()
	if err := s.cmd.Process.Signal(syscall.SIGUSR1); err != nil {
		b.Fatal(err)
	}
	if line, err := s.stdout.ReadString('\n'); err != nil || line != "freed\n" {
		b.Fatalf("server: %q, %v; want freed", line, err)
	}
	n, err := privateMemory(s.cmd.Process.Pid)
	if err != nil {
		b.Fatal(err)
	}
	return n
}

// privateMemory returns the private memory of process pid in bytes:
// Private_Clean plus Private_Dirty of /proc/PID/smaps_rollup.
func privateMemory(pid int) (int64, error) {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/smaps_rollup", pid))
	if err != nil {
		return 0, err
	}
	var total int64
	found := 0
	for line := range strings.SplitSeq(string(data), "\n") {
		name, v, ok := strings.Cut(line, ":")
		if !ok || (name != "Private_Clean" && name != "Private_Dirty") {
			continue
		}
		kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
		if err != nil {
			return 0, fmt.Errorf("smaps_rollup: %q: %w", line, err)
		}
		total += kb << 10
		found++
	}
	if found != 2 {
		return 0, fmt.Errorf("smaps_rollup of %d: no Private_Clean and Private_Dirty", pid)
	}
	return total, nil
}

// envInt reads a positive number from the environment variable name, or
// returns def.
func envInt(b *testing.B, name string, def int) int {
	v := os.Getenv(name)
	if v == "" {
		return def
	}
	n, err := strconv.Atoi(v)
	if err != nil || n <= 0 {
		b.Fatalf("%s=%q: want a positive number", name, v)
	}
	return n
}

// jsonDecode decodes the JSON body of a 200 response into v.
func jsonDecode(resp *http.Response, v any) error {
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("status %d", resp.StatusCode)
	}
	return json.NewDecoder(resp.Body).Decode(v)
}
