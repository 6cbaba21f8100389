package bench_test

import (
	"context"
	"fmt"
	"runtime"
	"strings"
	"testing"
	"time"

	"google.golang.org/genai"

	"github.com/loomkit/loom/agent"
	"github.com/loomkit/loom/agent/llmagent"
	"github.com/loomkit/loom/agent/workflowagent"
	"github.com/loomkit/loom/event"
	"github.com/loomkit/loom/model"
	"github.com/loomkit/loom/model/scripted"
	"github.com/loomkit/loom/plugin"
	"github.com/loomkit/loom/plugin/telemetry"
	"github.com/loomkit/loom/runner"
	"github.com/loomkit/loom/session"
	"github.com/loomkit/loom/session/memsession"
	"github.com/loomkit/loom/tool"
	"github.com/loomkit/loom/tool/functiontool"
)

// newS1Agent returns the S1 agent: an LLM agent with the function tool
// add(a, b int) int on a scripted model that answers the first call of an
// invocation with add{a:1,b:2} and the second with the text "3".
func newS1Agent(tb testing.TB) agent.Agent {
	tb.Helper()
	root, err := s1Agent()
	if err != nil {
		tb.Fatal(err)
	}
	return root
}

// s1Agent builds the S1 agent (see newS1Agent).
func s1Agent() (agent.Agent, error) {
	type addArgs struct {
		A int `json:"a"`
		B int `json:"b"`
	}
	add, err := functiontool.New(functiontool.Config{Name: "add", Description: "Adds two integers."},
		func(ctx context.Context, tc tool.Context, args addArgs) (int, error) { return args.A + args.B, nil })
	if err != nil {
		return nil, err
	}
	llm := scripted.New("s1-model", func(ctx context.Context, req *model.Request) (scripted.Turn, error) {
		if len(scripted.LastFunctionResponse(req)) > 0 {
			return scripted.Text("3"), nil
		}
		return scripted.Call("add", map[string]any{"a": 1, "b": 2}), nil
	})
	return llmagent.New(llmagent.Config{Name: "calculator", Model: llm, Instruction: "Add numbers with the add tool.", Tools: []tool.Tool{add}})
}

func newRunner(tb testing.TB, root agent.Agent, svc *session.Service) *runner.Runner {
	tb.Helper()
	r, err := runner.New(runner.Config{AppName: "bench", Agent: root, Sessions: svc})
	if err != nil {
		tb.Fatal(err)
	}
	return r
}

var s1Message = genai.NewContentFromText("What is 1 + 2?", genai.RoleUser)

// invoke runs one invocation to completion and returns the number of
// events with content it yielded (workflow checkpoints have none).
func invoke(tb testing.TB, r *runner.Runner, sessionID string) int {
	n := 0
	for ev, err := range r.Run(context.Background(), "user", sessionID, s1Message, nil) {
		if err != nil {
			tb.Fatal(err)
		}
		if ev.Content != nil {
			n++
		}
	}
	return n
}

// createSessions creates n sessions and returns their ids, "s000" and on,
// each after an optional prefix.
func createSessions(tb testing.TB, svc *session.Service, n int, prefix ...string) []string {
	tb.Helper()
	ids := make([]string, n)
	for i := range ids {
		ids[i] = fmt.Sprintf("%ss%03d", strings.Join(prefix, ""), i)
		if _, err := svc.Create(context.Background(), session.Key{AppName: "bench", UserID: "user", SessionID: ids[i]}, nil); err != nil {
			tb.Fatal(err)
		}
	}
	return ids
}

// BenchmarkS1 is scenario S1: in-memory sessions, the S1 agent, one
// invocation per iteration round-robin over 100 sessions. Run it as
// -benchtime=2000x so that each session ends with 80 events.
func BenchmarkS1(b *testing.B) { benchS1(b) }

// benchS1 runs S1 on a runner with the given plugins and checks every
// session's events afterwards.
func benchS1(b *testing.B, plugins ...*plugin.Plugin) {
	benchS1Config(b, runner.Config{Plugins: plugins})
}

// benchS1Config runs S1 on a runner with cfg's plugins and call key.
func benchS1Config(b *testing.B, cfg runner.Config) {
	svc := memsession.NewService()
	r, err := runner.New(runner.Config{AppName: "bench", Agent: newS1Agent(b), Sessions: svc, Plugins: cfg.Plugins, CallKey: cfg.CallKey})
	if err != nil {
		b.Fatal(err)
	}
	ids := createSessions(b, svc, 100)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; b.Loop(); i++ {
		if n := invoke(b, r, ids[i%len(ids)]); n != 3 {
			b.Fatalf("invocation yielded %d events, want 3", n)
		}
	}
	b.StopTimer()
	checkS1Sessions(b, svc, ids, b.N)
	if cfg.CallKey != nil {
		sess, err := svc.Get(context.Background(), session.Key{AppName: "bench", UserID: "user", SessionID: ids[0]}, nil)
		if err != nil {
			b.Fatal(err)
		}
		call := sess.At(1)
		if err := cfg.CallKey.Check(call, "bench", "user"); err != nil {
			b.Fatalf("stored S1 call: %v", err)
		}
	}
}

// BenchmarkS1Integrity is S1 without (Plain) and with (CallKey) stored
// calls authenticated by a call key, as "loom api" runs. Run it as
// -benchtime=2000x and compare the two.
func BenchmarkS1Integrity(b *testing.B) {
	b.Run("Plain", func(b *testing.B) { benchS1(b) })
	b.Run("CallKey", func(b *testing.B) {
		key, err := event.NewCallKey([]byte("0123456789abcdef0123456789abcdef"))
		if err != nil {
			b.Fatal(err)
		}
		benchS1Config(b, runner.Config{CallKey: key})
	})
	// What integrity adds to each S1 invocation, alone: signing its call
	// event. On a loaded machine this is steadier than the difference of
	// the two above.
	b.Run("SignOnly", func(b *testing.B) {
		key, err := event.NewCallKey([]byte("0123456789abcdef0123456789abcdef"))
		if err != nil {
			b.Fatal(err)
		}
		call := event.New("inv", "calculator")
		call.Content = &genai.Content{Role: genai.RoleModel, Parts: []*genai.Part{{FunctionCall: &genai.FunctionCall{
			ID: "adk-00000000-0000-4000-8000-000000000000", Name: "add", Args: map[string]any{"a": 1, "b": 2}}}}}
		b.ReportAllocs()
		for b.Loop() {
			call.CustomMetadata = nil
			if err := key.Sign(call, "bench", "user"); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// BenchmarkS1Telemetry is S1 with the telemetry plugin recording into its
// in-memory span store, as "loom web" records: Plain is S1 without it,
// NoPayloads records spans and metrics, Payloads also records the model
// and tool payloads. Run it as -benchtime=2000x and compare the three.
func BenchmarkS1Telemetry(b *testing.B) {
	b.Run("Plain", func(b *testing.B) { benchS1(b) })
	for _, tc := range []struct {
		name string
		cfg  telemetry.Config
	}{{"NoPayloads", telemetry.Config{MaxPayloadBytes: -1}}, {"Payloads", telemetry.Config{}}} {
		b.Run(tc.name, func(b *testing.B) {
			tel, err := telemetry.New(tc.cfg)
			if err != nil {
				b.Fatal(err)
			}
			defer tel.Shutdown(context.Background())
			benchS1(b, tel.Plugin())
			if got := tel.Exporter().Exported(); got < uint64(b.N) {
				b.Fatalf("%d spans recorded for %d invocations", got, b.N)
			}
		})
	}
}

// checkS1Sessions fails b unless n invocations, round-robin over the
// sessions ids, each stored exactly the four S1 events: at -benchtime=2000x
// over 100 sessions every session holds 80 events.
func checkS1Sessions(b *testing.B, svc *session.Service, ids []string, n int) {
	b.Helper()
	for j, id := range ids {
		want := n / len(ids)
		if j < n%len(ids) {
			want++
		}
		sess, err := svc.Get(context.Background(), session.Key{AppName: "bench", UserID: "user", SessionID: id}, nil)
		if err != nil {
			b.Fatal(err)
		}
		checkS1Events(b, sess, want)
	}
}

// checkS1Events fails b unless sess holds exactly invocations groups of the
// four S1 events: the user message, the call add{a:1,b:2}, its response and
// the final text "3".
func checkS1Events(b *testing.B, sess *session.Session, invocations int) {
	b.Helper()
	if sess.Len() != 4*invocations {
		b.Fatalf("session %s holds %d events after %d invocations, want %d", sess.ID(), sess.Len(), invocations, 4*invocations)
	}
	for i := 0; i < sess.Len(); i += 4 {
		user, call, resp, final := sess.At(i), sess.At(i+1), sess.At(i+2), sess.At(i+3)
		ok := user.Author == "user" && user.Content != nil &&
			len(call.FunctionCalls()) == 1 && call.FunctionCalls()[0].Name == "add" &&
			len(resp.FunctionResponses()) == 1 && resp.FunctionResponses()[0].Name == "add" &&
			final.IsFinalResponse() && final.Content != nil && len(final.Content.Parts) == 1 && final.Content.Parts[0].Text == "3"
		if !ok {
			b.Fatalf("session %s: events %d-%d are not user, call, response, final", sess.ID(), i, i+3)
		}
	}
}

// BenchmarkStoredSession measures what S5's fresh mode keeps per request:
// the heap an S1 session holds in the in-memory store once its invocation
// is over, created as the HTTP API creates one without an id (the store
// makes the id). The runner, with its cache of live sessions, is dropped
// before the heap is measured, so stored-B/session is the store's alone
// (at -benchtime 20000x: at a few iterations the runner's own memory, gone
// from the second measurement, outweighs the sessions').
func BenchmarkStoredSession(b *testing.B) {
	svc := memsession.NewService()
	r := newRunner(b, newS1Agent(b), svc)
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	for b.Loop() {
		sess, err := svc.Create(context.Background(), session.Key{AppName: "bench", UserID: "user"}, nil)
		if err != nil {
			b.Fatal(err)
		}
		if n := invoke(b, r, sess.Key().SessionID); n != 3 {
			b.Fatalf("invocation yielded %d events, want 3", n)
		}
	}
	b.StopTimer()
	// The runner is not used past this point: it and its cache are garbage.
	runtime.GC()
	runtime.GC()
	runtime.ReadMemStats(&after)
	b.ReportMetric(float64(int64(after.HeapAlloc)-int64(before.HeapAlloc))/float64(b.N), "stored-B/session")
	// Every session holds its invocation's four events.
	n := 0
	opts := &session.ListOptions{PageSize: 1000}
	for {
		page, err := svc.List(context.Background(), "bench", "user", opts)
		if err != nil {
			b.Fatal(err)
		}
		for _, listed := range page.Sessions {
			sess, err := svc.Get(context.Background(), listed.Key(), nil)
			if err != nil {
				b.Fatal(err)
			}
			checkS1Events(b, sess, 1)
			n++
		}
		if page.NextPageToken == "" {
			break
		}
		opts.PageToken = page.NextPageToken
	}
	if n != b.N {
		b.Fatalf("%d sessions stored, want %d", n, b.N)
	}
}

// BenchmarkS1FreshSession is S1 with a new session per invocation.
func BenchmarkS1FreshSession(b *testing.B) {
	svc := memsession.NewService()
	r := newRunner(b, newS1Agent(b), svc)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; b.Loop(); i++ {
		id := fmt.Sprint("fresh", i)
		if _, err := svc.Create(context.Background(), session.Key{AppName: "bench", UserID: "user", SessionID: id}, nil); err != nil {
			b.Fatal(err)
		}
		if n := invoke(b, r, id); n != 3 {
			b.Fatalf("invocation yielded %d events, want 3", n)
		}
	}
	b.StopTimer()
	for i := range b.N {
		sess, err := svc.Get(context.Background(), session.Key{AppName: "bench", UserID: "user", SessionID: fmt.Sprint("fresh", i)}, nil)
		if err != nil {
			b.Fatal(err)
		}
		checkS1Events(b, sess, 1)
	}
}

// BenchmarkS2 is scenario S2: 2,000 sequential S1 invocations into one
// session. Each benchmark iteration runs all 2,000 on a new session and
// reports the cost per invocation of invocations 1-100 and 1901-2000, and of
// all of them.
func BenchmarkS2(b *testing.B) {
	const total, window = 2000, 100
	var first, last, all time.Duration
	var firstAllocs, lastAllocs uint64
	var ms runtime.MemStats
	b.ReportAllocs()
	for b.Loop() {
		b.StopTimer()
		svc := memsession.NewService()
		r := newRunner(b, newS1Agent(b), svc)
		id := createSessions(b, svc, 1)[0]
		b.StartTimer()
		var t0 time.Time
		var m0 uint64
		start := time.Now()
		for i := range total {
			if i == 0 || i == total-window {
				runtime.ReadMemStats(&ms)
				m0, t0 = ms.Mallocs, time.Now()
			}
			invoke(b, r, id)
			if i == window-1 || i == total-1 {
				d := time.Since(t0)
				runtime.ReadMemStats(&ms)
				if i == window-1 {
					first += d
					firstAllocs += ms.Mallocs - m0
				} else {
					last += d
					lastAllocs += ms.Mallocs - m0
				}
			}
		}
		all += time.Since(start)
	}
	n := float64(b.N)
	b.ReportMetric(float64(first.Nanoseconds())/n/window, "first100-ns/inv")
	b.ReportMetric(float64(last.Nanoseconds())/n/window, "last100-ns/inv")
	b.ReportMetric(float64(firstAllocs)/n/window, "first100-allocs/inv")
	b.ReportMetric(float64(lastAllocs)/n/window, "last100-allocs/inv")
	b.ReportMetric(float64(all.Nanoseconds())/n/total, "all-ns/inv")
	b.ReportMetric(float64(last)/float64(first), "last/first")
}

// BenchmarkS3 is scenario S3: a parallel agent with 8 LLM children, each
// answering with one final text and no tool call.
func BenchmarkS3(b *testing.B) {
	children := make([]agent.Agent, 8)
	for i := range children {
		llm := scripted.New("s3-model", func(context.Context, *model.Request) (scripted.Turn, error) {
			return scripted.Text(fmt.Sprint("answer ", i)), nil
		})
		c, err := llmagent.New(llmagent.Config{Name: fmt.Sprint("child", i), Model: llm})
		if err != nil {
			b.Fatal(err)
		}
		children[i] = c
	}
	par, err := workflowagent.NewParallel(workflowagent.Config{Name: "fanout", SubAgents: children})
	if err != nil {
		b.Fatal(err)
	}
	svc := memsession.NewService()
	r := newRunner(b, par, svc)
	ids := createSessions(b, svc, 100)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; b.Loop(); i++ {
		if n := invoke(b, r, ids[i%len(ids)]); n != 8 {
			b.Fatalf("invocation yielded %d events, want 8", n)
		}
	}
}
