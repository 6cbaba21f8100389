package sqlsession_test

// Proof under faults: several OS processes writing one database at once, and
// a writer killed with SIGKILL at random moments.
//
// Why these tests would catch a broken AppendEvent:
//   - Without the seq check in the insert of the event (the session's last
//     event must still be the one the writer loaded), two writers that
//     loaded the same seq would both be allowed on: on SQLite the second
//     insert then collides on the (session, seq) primary key and fails with
//     an error that is not ErrStale, which the writers below treat as fatal;
//     and a backend that instead took the next seq from the database would
//     let a writer commit on a copy that has not seen the other's state,
//     breaking the fold check (the session's "last" key must name the last
//     event).
//   - With the transaction split (event, seq and state written in separate
//     commits), a SIGKILL between them leaves an event without its state
//     delta, or state without its event; the crash test folds every stored
//     event's delta and compares it with the stored state, and checks that
//     the sequence numbers are contiguous, so it finds either half.

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/loomkit/loom/event"
	"github.com/loomkit/loom/internal/sqldb/sqldbtest"
	"github.com/loomkit/loom/session"
	"github.com/loomkit/loom/session/sqlsession"
)

const (
	envHelper = "LOOM_SQLSESSION_HELPER" // "concurrent" or "crash"
	envDSN    = "LOOM_SQLSESSION_DSN"
	envProc   = "LOOM_SQLSESSION_PROC"

	faultApp  = "faults"
	faultUser = "u"

	procs       = 3  // writer processes
	goroutines  = 4  // writers per process
	perWriter   = 12 // events each writer appends to the shared session and to its own
	crashRounds = 10 // SIGKILLs per backend
)

// TestMain runs the body of the child processes the fault tests start, when
// the environment selects a helper mode; otherwise it runs the tests.
func TestMain(m *testing.M) {
	mode := os.Getenv(envHelper)
	if mode == "" {
		os.Exit(m.Run())
	}
	var err error
	switch mode {
	case "concurrent":
		err = concurrentWriter(os.Getenv(envDSN), os.Getenv(envProc))
	case "crash":
		err = crashWriter(os.Getenv(envDSN))
	default:
		err = fmt.Errorf("unknown helper mode %q", mode)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "helper:", err)
		os.Exit(3)
	}
	os.Exit(0)
}

func helperCmd(t *testing.T, mode, dsn string, extra ...string) *exec.Cmd {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(exe, "-test.run=^$", "-test.count=1")
	cmd.Env = append(os.Environ(), envHelper+"="+mode, envDSN+"="+dsn)
	cmd.Env = append(cmd.Env, extra...)
	return cmd
}

func faultKey(id string) session.Key {
	return session.Key{AppName: faultApp, UserID: faultUser, SessionID: id}
}

// appendRetrying appends through sess, refreshing it and trying again while
// another writer got there first. It returns how many times it was stale.
func appendRetrying(ctx context.Context, svc *session.Service, sess *session.Session, mk func() *event.Event) (int, error) {
	for stale := 0; ; stale++ {
		err := svc.AppendEvent(ctx, sess, mk())
		if err == nil {
			return stale, nil
		}
		if !errors.Is(err, session.ErrStale) {
			return stale, err
		}
		if err := svc.Refresh(ctx, sess); err != nil {
			return stale, err
		}
	}
}

// concurrentWriter runs the goroutines of one writer process: each appends
// perWriter events to the shared session and to a session of its own, and
// counts in app:w<N> and user:w<N>.
func concurrentWriter(dsn, proc string) error {
	ctx := context.Background()
	svc, err := sqlsession.NewService(ctx, dsn, nil)
	if err != nil {
		return err
	}
	defer svc.Close()
	p, _ := strconv.Atoi(proc)
	var wg sync.WaitGroup
	errs := make(chan error, goroutines)
	var staleTotal int
	var mu sync.Mutex
	for g := range goroutines {
		w := p*goroutines + g
		wg.Go(func() {
			shared, err := svc.Get(ctx, faultKey("shared"), nil)
			if err != nil {
				errs <- err
				return
			}
			own, err := svc.Get(ctx, faultKey(fmt.Sprint("own-", w)), nil)
			if err != nil {
				errs <- err
				return
			}
			for i := 1; i <= perWriter; i++ {
				id := fmt.Sprintf("w%d-%d", w, i)
				stale, err := appendRetrying(ctx, svc, shared, func() *event.Event {
					ev := event.NewModelText("inv", fmt.Sprint("w", w), id)
					ev.ID = id
					ev.Actions.StateDelta = map[string]any{
						fmt.Sprintf("app:w%d", w):  i,
						fmt.Sprintf("user:w%d", w): i,
						"last":                     id,
					}
					return ev
				})
				if err != nil {
					errs <- fmt.Errorf("writer %d: shared append %d: %w", w, i, err)
					return
				}
				mu.Lock()
				staleTotal += stale
				mu.Unlock()
				ev := event.NewModelText("inv", fmt.Sprint("w", w), id)
				ev.Actions.StateDelta = map[string]any{"n": i}
				if err := svc.AppendEvent(ctx, own, ev); err != nil {
					errs <- fmt.Errorf("writer %d: own append %d: %w", w, i, err)
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	if err := <-errs; err != nil {
		return err
	}
	fmt.Printf("stale %d\n", staleTotal)
	return nil
}

// crashWriter appends to session "crash" until it is killed: event n sets
// k=n and app:last=n, and n is printed once committed.
func crashWriter(dsn string) error {
	ctx := context.Background()
	svc, err := sqlsession.NewService(ctx, dsn, nil)
	if err != nil {
		return err
	}
	sess, err := svc.Get(ctx, faultKey("crash"), &session.GetOptions{NumRecentEvents: 1})
	if errors.Is(err, session.ErrNotFound) {
		sess, err = svc.Create(ctx, faultKey("crash"), nil)
	}
	if err != nil {
		return err
	}
	// The store's sequence number of the session, from the last event.
	n := 0
	if evs := sess.Events(); len(evs) > 0 {
		n, _ = strconv.Atoi(evs[len(evs)-1].ID)
	}
	out := bufio.NewWriter(os.Stdout)
	for {
		n++
		ev := event.NewModelText("inv", "crasher", strings.Repeat("x", rand.IntN(2000)))
		ev.ID = strconv.Itoa(n)
		ev.Actions.StateDelta = map[string]any{"k": n, "app:last": n}
		if err := svc.AppendEvent(ctx, sess, ev); err != nil {
			return err
		}
		fmt.Fprintf(out, "committed %d\n", n)
		out.Flush()
	}
}

func faultBackends(t *testing.T, run func(t *testing.T, dsn string)) {
	t.Run("SQLite", func(t *testing.T) { run(t, sqldbtest.SQLiteURL(t)) })
	t.Run("Postgres", func(t *testing.T) { run(t, sqldbtest.PostgresURL(t)) })
}

// TestS7ConcurrentProcesses checks CONFORMANCE S7 across OS processes:
// writers in several processes append to one session and to their own,
// refreshing and retrying when stale. Nothing is lost or duplicated, each
// writer's events are in its order, the shared state is the fold of the
// events in commit order, and per-key app:/user: counters all reach the end.
func TestS7ConcurrentProcesses(t *testing.T) {
	faultBackends(t, func(t *testing.T, dsn string) {
		ctx := context.Background()
		svc, err := sqlsession.NewService(ctx, dsn, nil)
		if err != nil {
			t.Fatal(err)
		}
		defer svc.Close()
		if _, err := svc.Create(ctx, faultKey("shared"), nil); err != nil {
			t.Fatal(err)
		}
		writers := procs * goroutines
		for w := range writers {
			if _, err := svc.Create(ctx, faultKey(fmt.Sprint("own-", w)), nil); err != nil {
				t.Fatal(err)
			}
		}
		var wg sync.WaitGroup
		outs := make([]string, procs)
		for p := range procs {
			cmd := helperCmd(t, "concurrent", dsn, envProc+"="+strconv.Itoa(p))
			wg.Go(func() {
				out, err := cmd.CombinedOutput()
				outs[p] = string(out)
				if err != nil {
					t.Errorf("writer process %d: %v\n%s", p, err, out)
				}
			})
		}
		wg.Wait()
		if t.Failed() {
			return
		}
		t.Logf("writer processes: %q", outs)

		shared, err := svc.Get(ctx, faultKey("shared"), nil)
		if err != nil {
			t.Fatal(err)
		}
		evs := shared.Events()
		if len(evs) != writers*perWriter {
			t.Fatalf("shared session has %d events, want %d", len(evs), writers*perWriter)
		}
		next := map[int]int{} // writer -> next expected i
		fold := map[string]any{}
		for _, ev := range evs {
			var w, i int
			if _, err := fmt.Sscanf(ev.ID, "w%d-%d", &w, &i); err != nil {
				t.Fatalf("unexpected event id %q", ev.ID)
			}
			if i != next[w]+1 {
				t.Fatalf("writer %d: event %d follows event %d (lost, duplicated or reordered)", w, i, next[w])
			}
			next[w] = i
			session.ApplyDelta(fold, ev.Actions.StateDelta)
		}
		if got, _ := shared.Get("last"); got != fold["last"] || got != evs[len(evs)-1].ID {
			t.Errorf("shared state last = %v, want %v (the last event)", got, evs[len(evs)-1].ID)
		}
		for w := range writers {
			for _, k := range []string{fmt.Sprintf("app:w%d", w), fmt.Sprintf("user:w%d", w)} {
				if got, _ := shared.Get(k); got != float64(perWriter) {
					t.Errorf("%s = %v, want %d", k, got, perWriter)
				}
			}
			own, err := svc.Get(ctx, faultKey(fmt.Sprint("own-", w)), nil)
			if err != nil {
				t.Fatal(err)
			}
			if own.Len() != perWriter {
				t.Errorf("own-%d has %d events, want %d", w, own.Len(), perWriter)
			}
			if got, _ := own.Get("n"); got != float64(perWriter) {
				t.Errorf("own-%d n = %v, want %d", w, got, perWriter)
			}
		}
		// A copy loaded before all of that is now stale, and changes nothing.
		old, err := svc.Get(ctx, faultKey("shared"), &session.GetOptions{NumRecentEvents: 1})
		if err != nil {
			t.Fatal(err)
		}
		if err := svc.AppendEvent(ctx, shared, event.NewUserText("inv", "one more")); err != nil {
			t.Fatal(err)
		}
		if err := svc.AppendEvent(ctx, old, event.NewUserText("inv", "stale")); !errors.Is(err, session.ErrStale) {
			t.Errorf("append through a stale copy: %v, want ErrStale", err)
		}
	})
}

// TestCrashSafety kills a writer process with SIGKILL at random moments and
// checks, after each kill, that every event it reported committed is stored
// intact, that the log is contiguous, and that the stored state is exactly
// the fold of the stored events (nothing half-applied).
func TestCrashSafety(t *testing.T) {
	faultBackends(t, func(t *testing.T, dsn string) {
		ctx := context.Background()
		reported := 0
		for round := range crashRounds {
			cmd := helperCmd(t, "crash", dsn)
			stdout, err := cmd.StdoutPipe()
			if err != nil {
				t.Fatal(err)
			}
			var stderr strings.Builder
			cmd.Stderr = &stderr
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			lines := make(chan int, 1<<16)
			go func() {
				defer close(lines)
				sc := bufio.NewScanner(stdout)
				for sc.Scan() {
					if n, err := strconv.Atoi(strings.TrimPrefix(sc.Text(), "committed ")); err == nil {
						lines <- n
					}
				}
			}()
			// Wait for the first commit, then kill at a random moment.
			select {
			case n, ok := <-lines:
				if !ok {
					cmd.Wait()
					t.Fatalf("round %d: writer exited early: %s", round, stderr.String())
				}
				reported = max(reported, n)
			case <-time.After(30 * time.Second):
				cmd.Process.Kill()
				cmd.Wait()
				t.Fatalf("round %d: writer committed nothing: %s", round, stderr.String())
			}
			time.Sleep(time.Duration(rand.IntN(60_000)) * time.Microsecond)
			if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
				t.Fatal(err)
			}
			for n := range lines {
				reported = max(reported, n)
			}
			cmd.Wait()
			checkCrashLog(t, ctx, dsn, reported)
		}
		t.Logf("%d kills, %d events reported committed", crashRounds, reported)
	})
}

func checkCrashLog(t *testing.T, ctx context.Context, dsn string, reported int) {
	t.Helper()
	svc, err := sqlsession.NewService(ctx, dsn, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer svc.Close()
	sess, err := svc.Get(ctx, faultKey("crash"), nil)
	if err != nil {
		t.Fatal(err)
	}
	evs := sess.Events()
	if len(evs) < reported {
		t.Fatalf("%d events stored, but %d were reported committed", len(evs), reported)
	}
	fold := map[string]any{}
	for i, ev := range evs {
		if ev.ID != strconv.Itoa(i+1) {
			t.Fatalf("event %d has id %q: the log is not contiguous", i+1, ev.ID)
		}
		if k := ev.Actions.StateDelta["k"]; k != float64(i+1) {
			t.Fatalf("event %d carries k=%v", i+1, k)
		}
		if ev.Content == nil || len(ev.Content.Parts) != 1 {
			t.Fatalf("event %d lost its content", i+1)
		}
		session.ApplyDelta(fold, ev.Actions.StateDelta)
	}
	n := float64(len(evs))
	if got, _ := sess.Get("k"); len(evs) > 0 && got != n {
		t.Fatalf("state k = %v after %d events: state and log disagree", got, len(evs))
	}
	if got, _ := sess.Get("app:last"); len(evs) > 0 && got != n {
		t.Fatalf("state app:last = %v after %d events: state and log disagree", got, len(evs))
	}
	if len(evs) > 0 && fold["k"] != n {
		t.Fatalf("fold of the deltas gives k=%v, want %v", fold["k"], n)
	}
}
