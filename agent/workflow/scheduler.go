package workflow

import (
	"context"
	"fmt"
	"sync"

	"github.com/loomkit/loom/event"
)

// scheduler runs the nodes of one workflow run: each node as soon as its
// input is ready, not in waves, so that a slow branch holds back only what
// comes after it.
type scheduler struct {
	r      *run
	ctx    context.Context
	runs   map[string]int            // node runs so far, by node name
	edges  []int                     // times each edge was taken
	joins  map[string]map[string]any // a join's arrivals since it last ran
	queue  []activation              // ready, not started
	active map[string]int            // started or queued runs, by node name
	last   any                       // output of the last node that scheduled nothing
	paused bool                      // a node waits for the client: start nothing new
	cancel context.CancelFunc        // stops the nodes running on branches of their own
}

// finished is a node run that ended on a branch of its own.
type finished struct {
	a     activation
	res   result
	index int // of the item, for a parallel worker
}

// relayed is an event of a node running on a branch of its own, handed to
// the workflow's goroutine, which yields it and then lets the node go on.
type relayed struct {
	ev     *event.Event
	resume chan struct{}
	done   *finished
}

// schedule runs the graph from the start node and returns the workflow's
// output; ok is false when the workflow ended otherwise (a failure reported,
// a pause, the caller stopped).
func (r *run) schedule(ctx context.Context, c *call, input any, fromUser bool, yield func(*event.Event, error) bool) (last any, ok bool) {
	s := &scheduler{r: r, ctx: ctx, runs: map[string]int{}, edges: make([]int, len(r.w.cfg.Edges)),
		joins: map[string]map[string]any{}, active: map[string]int{}}
	emit := func(ev *event.Event) bool { return yield(ev, nil) }
	s.enqueue(r.w.nodes[r.w.cfg.Start], input, fromUser)

	// The machinery of concurrent nodes, made when the first one starts.
	var (
		cctx context.Context
		wg   sync.WaitGroup
		msgs chan relayed
	)
	defer func() {
		if s.cancel != nil {
			s.cancel()
			wg.Wait()
		}
	}()
	running := 0
	// settle handles a node run's end; false ends the workflow.
	settle := func(a activation, res result) bool {
		switch {
		case res.stopped:
			return false
		case res.err != nil:
			r.fail(c, a.path, res.err, yield)
			return false
		case res.paused:
			s.paused = true
			s.active[a.node.name]--
			return true
		}
		s.done(a, res)
		return true
	}
	for len(s.queue) > 0 || running > 0 {
		if r.inv.Ended() {
			return nil, false
		}
		if err := ctx.Err(); err != nil {
			yield(nil, fmt.Errorf("workflow %s: %w", r.w.Name(), err))
			return nil, false
		}
		if s.paused {
			s.queue = nil
		}
		if n := len(s.queue); n > 0 {
			if err := r.step(n); err != nil {
				r.fail(c, s.queue[0].path, err, yield)
				return nil, false
			}
		}
		if running == 0 && len(s.queue) == 1 {
			// Alone: the node runs on the workflow's branch, inline.
			a := s.queue[0]
			s.queue = s.queue[:0]
			if !settle(a, r.execute(ctx, r.inv, a, true, emit)) {
				return nil, false
			}
			continue
		}
		ready := s.queue
		s.queue = nil
		for _, a := range ready {
			if rec, ok := r.done[a.path]; ok {
				// Finished before the invocation resumed: its recorded
				// output, at once and in order.
				if !settle(a, result{output: rec.output, route: rec.route}) {
					return nil, false
				}
				continue
			}
			if msgs == nil {
				cctx, s.cancel = context.WithCancel(ctx)
				msgs = make(chan relayed)
			}
			binv := r.inv.WithBranch(r.branchOf(a.node)).WithEndScope()
			running++
			wg.Add(1)
			go func() {
				defer wg.Done()
				resume := make(chan struct{}, 1)
				bemit := func(ev *event.Event) bool {
					select {
					case msgs <- relayed{ev: ev, resume: resume}:
					case <-cctx.Done():
						return false
					}
					select {
					case <-resume:
						return true
					case <-cctx.Done():
						return false
					}
				}
				res := r.execute(cctx, binv, a, true, bemit)
				select {
				case msgs <- relayed{done: &finished{a: a, res: res}}:
				case <-cctx.Done():
				}
			}()
		}
		if running == 0 {
			continue
		}
		select {
		case m := <-msgs:
			if m.done != nil {
				running--
				if !settle(m.done.a, m.done.res) {
					return nil, false
				}
				continue
			}
			if !emit(m.ev) {
				return nil, false
			}
			m.resume <- struct{}{}
		case <-ctx.Done():
			yield(nil, fmt.Errorf("workflow %s: %w", r.w.Name(), ctx.Err()))
			return nil, false
		}
	}
	if s.paused {
		r.inv.End()
		return nil, false
	}
	return s.last, true
}

// enqueue schedules a run of n with the given input.
func (s *scheduler) enqueue(n *Node, in any, user bool) {
	s.runs[n.name]++
	s.active[n.name]++
	s.queue = append(s.queue, activation{node: n, input: in, path: fmt.Sprintf("%s/%s@%d", s.r.base, n.name, s.runs[n.name]), fromUser: user})
}

// done takes the outgoing edges of a node run that finished, then starts
// the joins that can wait for nothing more.
func (s *scheduler) done(a activation, res result) {
	w := s.r.w
	s.active[a.node.name]--
	taken := false
	for _, ei := range w.out[a.node.name] {
		e := w.cfg.Edges[ei]
		if !w.matches(a.node.name, e, res.route) || (e.Max > 0 && s.edges[ei] >= e.Max) {
			continue
		}
		s.edges[ei]++
		taken = true
		to := w.nodes[e.To]
		if to.kind != KindJoin {
			s.enqueue(to, res.output, false)
			continue
		}
		pend := s.joins[e.To]
		if pend == nil {
			pend = map[string]any{}
			s.joins[e.To] = pend
		}
		pend[a.node.name] = res.output
	}
	if !taken {
		s.last = res.output
	}
	s.fireJoins()
}

// fireJoins starts each join that has arrivals and can get no more: every
// predecessor has delivered, or the ones that have not cannot be reached
// from any node still running or scheduled (a route skipped them).
func (s *scheduler) fireJoins() {
	for _, n := range s.r.w.cfg.Nodes {
		pend := s.joins[n.name]
		if n.kind != KindJoin || len(pend) == 0 {
			continue
		}
		if len(pend) < len(s.r.w.preds[n.name]) && s.mayArrive(n.name, pend) {
			continue
		}
		delete(s.joins, n.name)
		s.enqueue(n, pend, false)
	}
}

// mayArrive reports whether a predecessor of the join that has not
// delivered can still run: it is active, or reachable from an active node
// along edges that do not pass through the join.
func (s *scheduler) mayArrive(join string, pend map[string]any) bool {
	w := s.r.w
	missing := map[string]bool{}
	for _, p := range w.preds[join] {
		if _, ok := pend[p]; !ok {
			missing[p] = true
		}
	}
	seen := map[string]bool{join: true}
	var stack []string
	for name, k := range s.active {
		if k > 0 && !seen[name] {
			seen[name] = true
			stack = append(stack, name)
		}
	}
	for len(stack) > 0 {
		name := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		if missing[name] {
			return true
		}
		for _, ei := range w.out[name] {
			if to := w.cfg.Edges[ei].To; !seen[to] {
				seen[to] = true
				stack = append(stack, to)
			}
		}
	}
	return false
}
