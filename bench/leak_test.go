package bench_test

import (
	"bufio"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

const (
	// leakRequests is the number of requests the leak guard sends.
	leakRequests = 10_000
	// leakMaxRSS bounds the server's resident memory after them.
	leakMaxRSS = 256 << 20
	// leakMaxGrowth bounds its growth over the second half of them.
	leakMaxGrowth = 16 << 20
	// leakTurns is the length of the guard's conversations.
	leakTurns = 20
)

// TestLeakGuard builds the loom command, serves an application of a
// root_agent.yaml with "loom api" as a first run in a new working directory
// does (offline model, the default SQLite session database) and sends it
// 10,000 /run_sse requests from 16 clients: half of them start a new
// session for every request (S5 fresh), half hold conversations of 20
// turns. The server's peak resident memory (VmHWM) must stay under 256 MiB
// and grow by less than 16 MiB from the 5,000th request to the last. By
// then the server's bounded stores (the runner's 1,024 idle sessions, the
// telemetry's spans) are full, so that memory every request leaves behind
// raises the peak again and again, while the collector's cycles, which
// move VmRSS up and down by the heap's headroom from one reading to the
// next, do not. The bounds are on memory, not on time.
func TestLeakGuard(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the loom command and sends it 10,000 requests (about 20 s)")
	}
	dir := t.TempDir()
	bin := filepath.Join(dir, "loom")
	build := exec.Command("go", "build", "-o", bin, "github.com/loomkit/loom/cmd/loom")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	apps := filepath.Join(dir, "apps")
	if err := os.MkdirAll(filepath.Join(apps, "echo"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(apps, "echo", "root_agent.yaml"), []byte("name: echo\ninstruction: Repeat the user's message.\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	work := filepath.Join(dir, "work")
	if err := os.Mkdir(work, 0o755); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, "api", "--port", "0", apps)
	cmd.Dir = work
	// No API key: the application runs on the offline model.
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + dir}
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cmd.Process.Kill()
		cmd.Wait()
	})
	base := ""
	sc := bufio.NewScanner(stderr)
	for sc.Scan() {
		if _, url, ok := strings.Cut(sc.Text(), "API at "); ok {
			base = url
			break
		}
	}
	if base == "" {
		t.Fatalf("loom api printed no address: %v", sc.Err())
	}
	go func() {
		for sc.Scan() { // drain: a full pipe would block the server
		}
	}()

	transport := &http.Transport{MaxIdleConnsPerHost: s5Clients, MaxConnsPerHost: s5Clients, DisableCompression: true}
	defer transport.CloseIdleConnections()
	var next atomic.Int64
	var mu sync.Mutex
	var half int64 // the RSS once 5,000 requests are done
	var samples []string
	errs := make(chan error, s5Clients)
	var wg sync.WaitGroup
	for i := range s5Clients {
		c := &s5Client{http: &http.Client{Transport: transport, Timeout: 30 * time.Second}, base: base, user: "user" + strconv.Itoa(i)}
		turns := leakTurns
		if i%2 == 0 {
			turns = 1 // a new session for every request
		}
		wg.Go(func() {
			for turn := 0; ; turn++ {
				n := next.Add(1)
				if n > leakRequests {
					return
				}
				if turn%turns == 0 {
					if err := leakCreate(c); err != nil {
						errs <- err
						return
					}
				}
				if err := leakRun(c, n); err != nil {
					errs <- err
					return
				}
				if n%(leakRequests/10) == 0 {
					rss, err := processMemory(cmd.Process.Pid, "VmHWM")
					if err != nil {
						errs <- err
						return
					}
					mu.Lock()
					if n == leakRequests/2 {
						half = rss
					}
					samples = append(samples, fmt.Sprintf("%d: %.1f", n, float64(rss)/(1<<20)))
					mu.Unlock()
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	end, err := processMemory(cmd.Process.Pid, "VmHWM")
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("peak RSS (MiB) after every tenth of the requests: %s", strings.Join(samples, ", "))
	t.Logf("loom api peak RSS after %d requests: %.1f MiB, after %d: %.1f MiB", leakRequests/2, float64(half)/(1<<20), leakRequests, float64(end)/(1<<20))
	if end >= leakMaxRSS {
		t.Errorf("peak RSS after %d requests is %.1f MiB, want under %d MiB", leakRequests, float64(end)/(1<<20), leakMaxRSS>>20)
	}
	if end-half >= leakMaxGrowth {
		t.Errorf("peak RSS grew by %.1f MiB over the second half of the requests, want under %d MiB", float64(end-half)/(1<<20), leakMaxGrowth>>20)
	}
}

// leakCreate starts a new conversation of c in the echo application.
func leakCreate(c *s5Client) error {
	resp, err := c.http.Post(c.base+"/apps/echo/users/"+c.user+"/sessions", "application/json", nil)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	var s struct {
		ID string `json:"id"`
	}
	if err := jsonDecode(resp, &s); err != nil || s.ID == "" {
		return fmt.Errorf("create session: %v, id %q", err, s.ID)
	}
	c.session = s.ID
	return nil
}

// leakRun posts request n of c's conversation and checks that the echo
// of its message ends the stream.
func leakRun(c *s5Client, n int64) error {
	msg := "message " + strconv.FormatInt(n, 10)
	body := `{"appName":"echo","userId":"` + c.user + `","sessionId":"` + c.session +
		`","newMessage":{"role":"user","parts":[{"text":"` + msg + `"}]}}`
	resp, err := c.http.Post(c.base+"/run_sse", "application/json", strings.NewReader(body))
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	c.buf.Reset()
	if _, err := c.buf.ReadFrom(resp.Body); err != nil {
		return err
	}
	out := c.buf.String()
	if resp.StatusCode != http.StatusOK || !strings.Contains(out, `"text":"[offline echo] `+msg+`"`) {
		return fmt.Errorf("run: status %d, stream %q", resp.StatusCode, out)
	}
	return nil
}

// processMemory returns the field of /proc/PID/status (VmRSS, VmHWM, ...)
// of process pid in bytes.
func processMemory(pid int, field string) (int64, error) {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, err
	}
	for line := range strings.SplitSeq(string(data), "\n") {
		if v, ok := strings.CutPrefix(line, field+":"); ok {
			kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			return kb << 10, err
		}
	}
	return 0, fmt.Errorf("/proc/%d/status: no %s", pid, field)
}
