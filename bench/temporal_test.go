package bench_test

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"sync/atomic"
	"testing"
	"time"

	"go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/log"

	"github.com/loomkit/loom/durable/temporal"
	"github.com/loomkit/loom/runner"
	"github.com/loomkit/loom/session/memsession"
)

// temporalRuns numbers the runs of BenchmarkS1Temporal in this process, so
// that each has task queue and workflows of its own.
var temporalRuns atomic.Int64

// BenchmarkS1Temporal is scenario S1 with each invocation run as a Temporal
// workflow (durable/temporal) on the development server of
// LOOM_TEMPORAL_ADDR (scripts/temporal.sh), by a worker in this process,
// one invocation at a time round-robin over 100 sessions:
//
//	LOOM_TEMPORAL_ADDR=$(scripts/temporal.sh) go test ./bench -run '^$' -bench 'S1Temporal$' -benchtime 200x
//
// Besides the time per turn it reports, from the workflows' histories, the
// workflow tasks, activities and local activities the server recorded per
// turn. Run as -benchtime 100x or less, every timed turn is the first of its
// session, which starts the session's workflow.
func BenchmarkS1Temporal(b *testing.B) { benchS1Temporal(b, false) }

// BenchmarkS1TemporalRunning is BenchmarkS1Temporal with the sessions'
// workflows already running: each session has had one untimed turn first,
// so every timed turn is an update of a running workflow.
func BenchmarkS1TemporalRunning(b *testing.B) { benchS1Temporal(b, true) }

// benchS1Temporal runs S1 on Temporal; running: one untimed turn per
// session first.
func benchS1Temporal(b *testing.B, running bool) {
	addr := os.Getenv("LOOM_TEMPORAL_ADDR")
	if addr == "" {
		b.Skip("LOOM_TEMPORAL_ADDR is not set; run scripts/temporal.sh")
	}
	c, err := client.Dial(client.Options{HostPort: addr, Logger: log.NewStructuredLogger(slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn})))})
	if err != nil {
		b.Fatal(err)
	}
	defer c.Close()
	svc := memsession.NewService()
	// Temporal runs resumable applications only (temporal.NewWorker).
	r, err := runner.New(runner.Config{AppName: "bench", Agent: newS1Agent(b), Sessions: svc, Resumable: true})
	if err != nil {
		b.Fatal(err)
	}
	queue := fmt.Sprintf("bench-s1-%d-%d-%d", os.Getpid(), time.Now().UnixNano(), temporalRuns.Add(1))
	w, err := temporal.NewWorker(c, queue, r)
	if err != nil {
		b.Fatal(err)
	}
	if err := w.Start(); err != nil {
		b.Fatal(err)
	}
	defer w.Stop()
	cl, err := temporal.NewClient(temporal.ClientConfig{Client: c, TaskQueue: queue})
	if err != nil {
		b.Fatal(err)
	}
	ids := createSessions(b, svc, 100, queue+"-")
	turn := func(id string) {
		n := 0
		for ev, err := range cl.Run(context.Background(), r, "user", id, s1Message, nil) {
			if err != nil {
				b.Fatal(err)
			}
			if ev.Content != nil {
				n++
			}
		}
		if n != 3 {
			b.Fatalf("invocation yielded %d events, want 3", n)
		}
	}
	warm := 0
	if running {
		for _, id := range ids {
			turn(id)
		}
		warm = len(ids)
	}
	b.ResetTimer()
	turns := 0
	for i := 0; b.Loop(); i++ {
		turn(ids[i%len(ids)])
		turns++
	}
	b.StopTimer()
	checkS1Sessions(b, svc, ids, b.N+warm)
	// The histories hold the untimed turns too.
	tasks, acts, local := 0, 0, 0
	counted := min(turns, len(ids))
	if running {
		counted = len(ids)
	}
	for _, id := range ids[:counted] {
		h := c.GetWorkflowHistory(context.Background(), cl.WorkflowID("bench", "user", id), "", false, enums.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
		for h.HasNext() {
			ev, err := h.Next()
			if err != nil {
				b.Fatal(err)
			}
			switch ev.EventType {
			case enums.EVENT_TYPE_WORKFLOW_TASK_COMPLETED:
				tasks++
			case enums.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED:
				acts++
			case enums.EVENT_TYPE_MARKER_RECORDED:
				if ev.GetMarkerRecordedEventAttributes().GetMarkerName() == "LocalActivity" {
					local++
				}
			}
		}
	}
	b.ReportMetric(float64(b.Elapsed().Milliseconds())/float64(turns), "ms/turn")
	b.ReportMetric(float64(tasks)/float64(turns+warm), "wftasks/turn")
	b.ReportMetric(float64(acts)/float64(turns+warm), "activities/turn")
	b.ReportMetric(float64(local)/float64(turns+warm), "localacts/turn")
}
