package runner_test

// Replicas: several OS processes (this test binary re-executed) run turns
// on ONE session of a shared database, each with its own runner, as server
// replicas behind a load balancer would. The session lease makes them take
// turns: no turn fails with ErrStale, no turn is left half-stored, and
// nothing is lost or duplicated.
//
// Why these tests would catch a broken lease: without it (or with a lease
// taken after the user message is stored, or released before the turn's
// last commit), two replicas' turns interleave; the second to commit finds
// its copy of the session stale and fails with ErrStale, leaving its user
// message without an answer, which the children report and the log check
// finds. A lease that a dead process keeps forever makes the crash test
// time out; one released by a holder still alive lets turns interleave.

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/loomkit/loom/agent/llmagent"
	"github.com/loomkit/loom/event"
	"github.com/loomkit/loom/internal/sqldb/sqldbtest"
	"github.com/loomkit/loom/model"
	"github.com/loomkit/loom/model/scripted"
	"github.com/loomkit/loom/runner"
	"github.com/loomkit/loom/session"
	"github.com/loomkit/loom/session/sqlsession"
	"github.com/loomkit/loom/tool"
	"github.com/loomkit/loom/tool/functiontool"
)

const (
	envReplica = "LOOM_RUNNER_REPLICA" // "turns", "hold" or "cancellable"
	envDSN     = "LOOM_RUNNER_REPLICA_DSN"
	envProc    = "LOOM_RUNNER_REPLICA_PROC"

	replicas      = 3
	replicaTurns  = 6
	replicaTTL    = 1500 * time.Millisecond // SQLite lease expiry in these tests
	replicaUser   = "u"
	replicaShared = "shared"
)

// TestMain runs the body of a replica process when the environment selects
// one; otherwise it runs the tests.
func TestMain(m *testing.M) {
	mode := os.Getenv(envReplica)
	if mode == "" {
		os.Exit(m.Run())
	}
	if err := replicaMain(mode, os.Getenv(envDSN), os.Getenv(envProc)); err != nil {
		fmt.Fprintln(os.Stderr, "replica:", err)
		os.Exit(3)
	}
	os.Exit(0)
}

// replicaRunner builds a replica's runner: an LLM agent whose scripted
// model looks the question up with a tool, then answers it, so that a turn
// is four events (question, call, result, answer) spread over two model
// calls of a few milliseconds each. block, when set, makes the model hang
// on the first call until its context ends, after printing "holding".
func replicaRunner(ctx context.Context, dsn string, block bool) (*runner.Runner, *sqlsession.Store, error) {
	store, err := sqlsession.Open(ctx, dsn, &sqlsession.Options{LeaseTTL: replicaTTL})
	if err != nil {
		return nil, nil, err
	}
	lookup, err := functiontool.New(functiontool.Config{Name: "lookup"},
		func(_ context.Context, _ tool.Context, in struct {
			Q string `json:"q"`
		}) (map[string]any, error) {
			return map[string]any{"found": in.Q}, nil
		})
	if err != nil {
		return nil, nil, err
	}
	m := scripted.New("m", func(ctx context.Context, req *model.Request) (scripted.Turn, error) {
		if block {
			fmt.Println("holding")
			<-ctx.Done()
			return scripted.Turn{}, ctx.Err()
		}
		time.Sleep(3 * time.Millisecond)
		if frs := scripted.LastFunctionResponse(req); len(frs) > 0 {
			return scripted.Text(fmt.Sprint("answer to ", frs[0].Response["found"])), nil
		}
		return scripted.Call("lookup", map[string]any{"q": scripted.LastUserText(req)}), nil
	})
	a, err := llmagent.New(llmagent.Config{Name: "assistant", Model: m, Tools: []tool.Tool{lookup}})
	if err != nil {
		return nil, nil, err
	}
	r, err := runner.New(runner.Config{AppName: app, Agent: a, Sessions: session.NewService(store, nil), AutoCreateSession: true})
	if err != nil {
		store.Close()
		return nil, nil, err
	}
	return r, store, nil
}

// replicaMain is a replica process: in mode "turns" it runs replicaTurns
// turns on the shared session, two goroutines at a time; in mode "hold" it
// starts one turn and hangs inside it, holding the session, until killed.
func replicaMain(mode, dsn, proc string) error {
	// A replica never outlives a test that went wrong by long.
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	r, store, err := replicaRunner(ctx, dsn, mode == "hold" || mode == "cancellable")
	if err != nil {
		return err
	}
	defer store.Close()
	if mode == "cancellable" {
		// Held until another process cancels the session.
		_, err := r.RunSync(ctx, replicaUser, replicaShared, userText("p"+proc+"-held"), nil)
		if !errors.Is(err, context.Canceled) {
			return fmt.Errorf("the held turn ended with %v, want it cancelled", err)
		}
		return nil
	}
	if mode == "hold" {
		_, err := r.RunSync(ctx, replicaUser, replicaShared, userText("p"+proc+"-held"), nil)
		return fmt.Errorf("the held turn ended: %v", err)
	}
	var wg sync.WaitGroup
	errs := make(chan error, replicaTurns)
	for g := range 2 {
		wg.Go(func() {
			for i := g; i < replicaTurns; i += 2 {
				q := fmt.Sprintf("p%s-t%d", proc, i)
				if _, err := r.RunSync(ctx, replicaUser, replicaShared, userText(q), nil); err != nil {
					errs <- fmt.Errorf("turn %s: %w (stale: %v)", q, err, errors.Is(err, session.ErrStale))
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	var all []error
	for err := range errs {
		all = append(all, err)
	}
	return errors.Join(all...)
}

func replicaCmd(t *testing.T, mode, dsn string, proc int) *exec.Cmd {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(exe, "-test.run=^$", "-test.count=1")
	cmd.Env = append(os.Environ(), envReplica+"="+mode, envDSN+"="+dsn, envProc+"="+strconv.Itoa(proc))
	return cmd
}

func replicaBackends(t *testing.T, run func(t *testing.T, dsn string)) {
	t.Run("SQLite", func(t *testing.T) { run(t, sqldbtest.SQLiteURL(t)) })
	t.Run("Postgres", func(t *testing.T) { run(t, sqldbtest.PostgresURL(t)) })
}

// TestReplicasShareSession checks CONFORMANCE S7 (concurrent appends through
// the runner to one session never interleave or get lost) across processes:
// three replica processes run turns on one session concurrently. Every turn
// succeeds (no ErrStale reaches a caller), and the log is whole turns, one
// after the other: each question followed by its call, result and answer,
// each question exactly once.
func TestReplicasShareSession(t *testing.T) {
	replicaBackends(t, func(t *testing.T, dsn string) {
		var wg sync.WaitGroup
		for p := range replicas {
			cmd := replicaCmd(t, "turns", dsn, p)
			wg.Go(func() {
				if out, err := cmd.CombinedOutput(); err != nil {
					t.Errorf("replica %d: %v\n%s", p, err, out)
				}
			})
		}
		wg.Wait()
		want := map[string]bool{}
		for p := range replicas {
			for i := range replicaTurns {
				want[fmt.Sprintf("p%d-t%d", p, i)] = true
			}
		}
		checkTurns(t, dsn, want, nil)
	})
}

// checkTurns checks the shared session's log: whole turns, in sequence,
// one per question of want, each exactly once; a question in unanswered
// may stand alone (its process died inside the turn).
func checkTurns(t *testing.T, dsn string, want, unanswered map[string]bool) {
	t.Helper()
	ctx := context.Background()
	svc, err := sqlsession.NewService(ctx, dsn, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer svc.Close()
	sess, err := svc.Get(ctx, session.Key{AppName: app, UserID: replicaUser, SessionID: replicaShared}, nil)
	if err != nil {
		t.Fatal(err)
	}
	evs := sess.Events()
	ids := map[string]bool{}
	for _, ev := range evs {
		if ids[ev.ID] {
			t.Fatalf("event %s stored twice", ev.ID)
		}
		ids[ev.ID] = true
	}
	seen := map[string]bool{}
	for i := 0; i < len(evs); {
		q := text(evs[i])
		if evs[i].Author != "user" {
			t.Fatalf("event %d (%s: %q) should start a turn", i, evs[i].Author, q)
		}
		if seen[q] {
			t.Fatalf("question %q stored twice", q)
		}
		seen[q] = true
		if unanswered[q] && (i+1 == len(evs) || evs[i+1].Author == "user") {
			i++
			continue
		}
		if i+3 >= len(evs) {
			t.Fatalf("turn %q is cut short: %d events follow it", q, len(evs)-i-1)
		}
		inv := evs[i].InvocationID
		call, result, answer := evs[i+1], evs[i+2], evs[i+3]
		for _, ev := range []int{i + 1, i + 2, i + 3} {
			if evs[ev].InvocationID != inv {
				t.Fatalf("turn %q: event %d belongs to invocation %s: turns interleaved", q, ev, evs[ev].InvocationID)
			}
		}
		if len(call.FunctionCalls()) != 1 || len(result.FunctionResponses()) != 1 || text(answer) != "answer to "+q {
			t.Fatalf("turn %q: got call %v, result %v, answer %q", q, call.FunctionCalls(), result.FunctionResponses(), text(answer))
		}
		i += 4
	}
	for q := range want {
		if !seen[q] {
			t.Errorf("question %q is missing", q)
		}
	}
	if len(seen) != len(want)+len(unanswered) {
		t.Errorf("%d questions stored, want %d", len(seen), len(want)+len(unanswered))
	}
}

func text(ev *event.Event) string {
	if ev.Content == nil {
		return ""
	}
	var b strings.Builder
	for _, p := range ev.Content.Parts {
		if p != nil {
			b.WriteString(p.Text)
		}
	}
	return b.String()
}

// TestReplicaCrashHoldingLease: a replica is killed (SIGKILL) inside a
// turn, holding the session's lease; another replica's turn then waits for
// the lease to be recovered (at once on PostgreSQL, whose lock dies with
// the connection; after the lease's expiry on SQLite) and completes.
func TestReplicaCrashHoldingLease(t *testing.T) {
	replicaBackends(t, func(t *testing.T, dsn string) {
		cmd, _ := startHolding(t, "hold", dsn, 9)

		ctx := context.Background()
		r, store, err := replicaRunner(ctx, dsn, false)
		if err != nil {
			t.Fatal(err)
		}
		defer store.Close()
		// While the holder lives, a turn here waits for it (and, giving
		// up, stores nothing).
		short, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
		_, err = r.RunSync(short, replicaUser, replicaShared, userText("impatient"), nil)
		cancel()
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("turn while another replica holds the session: %v, want it to wait until its deadline", err)
		}
		if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
		if err := cmd.Wait(); err == nil {
			t.Fatal("the holder exited normally, want killed")
		}
		start := time.Now()
		done, cancel := context.WithTimeout(ctx, 30*time.Second)
		defer cancel()
		if _, err := r.RunSync(done, replicaUser, replicaShared, userText("after"), nil); err != nil {
			t.Fatalf("turn after the holder died: %v", err)
		}
		if d := time.Since(start); d > replicaTTL+5*time.Second {
			t.Errorf("the lease of the dead holder was recovered after %v, want within its expiry (%v)", d, replicaTTL)
		}
		checkTurns(t, dsn, map[string]bool{"after": true}, map[string]bool{"p9-held": true})
	})
}

// TestLeaseReleasedOnEveryPath: a turn that panics, and one whose context
// is cancelled inside the model call, release the session's lease: another
// store over the same database (another replica) gets it at once.
func TestLeaseReleasedOnEveryPath(t *testing.T) {
	ctx := context.Background()
	dsn := sqldbtest.SQLiteURL(t)
	open := func() *session.Service {
		st, err := sqlsession.Open(ctx, dsn, &sqlsession.Options{LeaseTTL: time.Hour})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { st.Close() })
		return session.NewService(st, nil)
	}
	svc, other := open(), open()
	key := session.Key{AppName: app, UserID: replicaUser, SessionID: "s"}
	leaseNow := func(what string) {
		t.Helper()
		c, cancel := context.WithTimeout(ctx, 5*time.Second)
		defer cancel()
		release, err := other.Lease(c, key)
		if err != nil {
			t.Fatalf("after %s: the other replica cannot lease the session: %v", what, err)
		}
		release()
	}
	started := make(chan struct{}, 1)
	m := scripted.New("m", func(ctx context.Context, req *model.Request) (scripted.Turn, error) {
		switch scripted.LastUserText(req) {
		case "panic":
			panic("model panics")
		case "block":
			started <- struct{}{}
			<-ctx.Done()
			return scripted.Turn{}, ctx.Err()
		}
		return scripted.Text("ok"), nil
	})
	a, err := llmagent.New(llmagent.Config{Name: "assistant", Model: m})
	if err != nil {
		t.Fatal(err)
	}
	r, err := runner.New(runner.Config{AppName: app, Agent: a, Sessions: svc, AutoCreateSession: true})
	if err != nil {
		t.Fatal(err)
	}

	func() {
		defer func() {
			if recover() == nil {
				t.Fatal("the turn did not panic")
			}
		}()
		r.RunSync(ctx, replicaUser, "s", userText("panic"), nil)
	}()
	leaseNow("a panic")

	cctx, cancel := context.WithCancel(ctx)
	go func() { <-started; cancel() }()
	if _, err := r.RunSync(cctx, replicaUser, "s", userText("block"), nil); !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled turn: %v, want context.Canceled", err)
	}
	leaseNow("a cancelled turn")

	// Breaking out of the loop early releases it too.
	for range r.Run(ctx, replicaUser, "s", userText("hello"), nil) {
		break
	}
	leaseNow("a loop broken early")
	if _, err := r.RunSync(ctx, replicaUser, "s", userText("hello"), nil); err != nil {
		t.Fatal(err)
	}
}

// startHolding starts a replica process in mode, over dsn, and returns it
// and its standard error once it reports "holding" (it is inside a turn);
// the process is killed when the test ends, however it ends.
func startHolding(t *testing.T, mode, dsn string, seed int) (*exec.Cmd, *strings.Builder) {
	t.Helper()
	cmd := replicaCmd(t, mode, dsn, seed)
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	stderr := &strings.Builder{}
	cmd.Stderr = stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cmd.Process.Kill()
		cmd.Wait()
	})
	held := make(chan bool, 1)
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			if sc.Text() == "holding" {
				held <- true
			}
		}
		close(held)
	}()
	select {
	case ok := <-held:
		if !ok {
			t.Fatalf("the replica exited: %s", stderr.String())
		}
	case <-time.After(30 * time.Second):
		t.Fatalf("the replica never got into its turn: %s", stderr.String())
	}
	return cmd, stderr
}
