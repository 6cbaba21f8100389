package bench_test

import (
	"bufio"
	"context"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/loomkit/loom/session"
	"github.com/loomkit/loom/session/sqlsession"
)

// s9Turns is the length of the session S9's server holds when it is killed.
const s9Turns = 50

// BenchmarkS9 is scenario S9, recovery: the S5 server with its sessions
// in a SQLite file (its own process) holds a session of 50 S1 turns when
// it is killed with SIGKILL; a new server process on the same file is
// started, and the next turn is posted as soon as it has printed its
// port. It reports restart-to-first-byte-ms, from the start of the new
// process to the first byte of that turn's event stream (target: 200 ms
// or less), restart-to-port-ms, to the port, and events-lost: the
// session's events missing after the turn (it must hold all 51 turns'):
//
//	go test ./bench -run '^$' -bench S9 -benchtime 1x -count 6
func BenchmarkS9(b *testing.B) {
	var toPort, toFirst time.Duration
	lost := 0
	for b.Loop() {
		db := filepath.Join(b.TempDir(), "s9.db")
		srv := startServerMode(b, s5SQLiteServer, s5DBEnv+"="+db)
		c := &s5Client{http: &http.Client{Timeout: 30 * time.Second}, base: srv.base, user: "user"}
		var err error
		if c.session, err = c.createSession(); err != nil {
			b.Fatal(err)
		}
		for range s9Turns {
			if err := c.run(c.session); err != nil {
				b.Fatal(err)
			}
		}
		if err := srv.cmd.Process.Signal(syscall.SIGKILL); err != nil {
			b.Fatal(err)
		}
		srv.cmd.Wait() //nolint:errcheck // killed
		c.http.CloseIdleConnections()

		srv = startServerMode(b, s5SQLiteServer, s5DBEnv+"="+db)
		port := time.Since(srv.started)
		c.base = srv.base
		first, _, err := c.timedRun()
		if err != nil {
			b.Fatal(err)
		}
		toPort += port
		toFirst += port + first
		n, err := c.countEvents(c.session)
		if err != nil {
			b.Fatal(err)
		}
		lost += 4*(s9Turns+1) - n
		c.http.CloseIdleConnections()
	}
	b.ReportMetric(float64(toFirst.Nanoseconds())/1e6/float64(b.N), "restart-to-first-byte-ms")
	b.ReportMetric(float64(toPort.Nanoseconds())/1e6/float64(b.N), "restart-to-port-ms")
	b.ReportMetric(float64(lost), "events-lost")
	if lost != 0 {
		b.Fatalf("%d events lost", lost)
	}
}

// s10Turns is the number of S1 turns whose writes S10 counts.
const s10Turns = 100

// BenchmarkS10 is scenario S10, the cost of durability: 100 S1 turns into
// one session on SQLite (a file in a temporary directory, WAL), in this
// process. It counts the bytes the process hands to write(2) and
// pwrite(2) (wchar of /proc/self/io) from before the first turn to after
// the store is closed (which checkpoints the WAL into the database), so
// that WAL frames and checkpoints both count, and reports them per 100
// turns (written-B/100turns) and per stored event (written-B/event),
// with the database's size at the end (db-B), and its bytes over those
// the bare SQLite append loop (sqliteFloor) writes for as many events, one
// transaction each (written/floor):
//
//	go test ./bench -run '^$' -bench S10 -benchtime 1x -count 6
func BenchmarkS10(b *testing.B) {
	ctx := context.Background()
	var written, size int64
	for b.Loop() {
		b.StopTimer()
		file := filepath.Join(b.TempDir(), "s10.db")
		svc, err := sqlsession.NewService(ctx, "sqlite://"+file, nil)
		if err != nil {
			b.Fatal(err)
		}
		r := newRunner(b, newS1Agent(b), svc)
		id := createSessions(b, svc, 1)[0]
		w0, err := wchar()
		if err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
		for range s10Turns {
			if n := invoke(b, r, id); n != 3 {
				b.Fatalf("invocation yielded %d events, want 3", n)
			}
		}
		if err := svc.Close(); err != nil {
			b.Fatal(err)
		}
		b.StopTimer()
		w1, err := wchar()
		if err != nil {
			b.Fatal(err)
		}
		written += w1 - w0
		fi, err := os.Stat(file)
		if err != nil {
			b.Fatal(err)
		}
		size = fi.Size()
		svc, err = sqlsession.NewService(ctx, "sqlite://"+file, nil)
		if err != nil {
			b.Fatal(err)
		}
		sess, err := svc.Get(ctx, session.Key{AppName: "bench", UserID: "user", SessionID: id}, nil)
		if err != nil {
			b.Fatal(err)
		}
		checkS1Events(b, sess, s10Turns)
		svc.Close()
		b.StartTimer()
	}
	b.ReportMetric(float64(written)/float64(b.N), "written-B/100turns")
	b.ReportMetric(float64(written)/float64(b.N)/(4*s10Turns), "written-B/event")
	b.ReportMetric(float64(size), "db-B")

	// The floor: the bare SQLite append loop (sqliteFloor) storing as
	// many events, one transaction each, and closing the database.
	b.StopTimer()
	floor := newSQLiteFloor(b, filepath.Join(b.TempDir(), "floor.db"), "s")
	w0, err := wchar()
	if err != nil {
		b.Fatal(err)
	}
	for i := range 4 * s10Turns {
		if err := floor.append("s", i+1); err != nil {
			b.Fatal(err)
		}
	}
	floor.check(b, "s", 4*s10Turns)
	floor.close(b)
	w1, err := wchar()
	if err != nil {
		b.Fatal(err)
	}
	b.ReportMetric(float64(written)/float64(b.N)/float64(w1-w0), "written/floor")
}

// wchar returns the bytes this process has handed to write system calls
// (wchar of /proc/self/io).
func wchar() (int64, error) {
	f, err := os.Open("/proc/self/io")
	if err != nil {
		return 0, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "wchar:"); ok {
			return strconv.ParseInt(strings.TrimSpace(v), 10, 64)
		}
	}
	return 0, fmt.Errorf("/proc/self/io: no wchar")
}
