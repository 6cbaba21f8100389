package graph

import (
	"context"
	"fmt"

	"github.com/loomkit/loom/agent"
	"github.com/loomkit/loom/event"
)

// scheduler runs the nodes of one workflow run: each node as soon as its
// input is ready, not in waves, so that a slow branch holds back only what
// comes after it.
type scheduler struct {
	r       *run
	c       *call
	yield   func(*event.Event, error) bool
	runs    map[string]int            // node runs so far, by node name
	edges   []int                     // times each edge was taken
	joins   map[string]map[string]any // a join's arrivals since it last ran
	queue   []activation              // ready, not started
	active  map[string]int            // started or queued runs, by node name
	last    any                       // output of the last node that scheduled nothing
	paused  bool                      // a node waits for the client: start nothing new
	relay   *agent.Relay              // the nodes running on branches of their own
	onRelay map[int]branchRun         // by the relay's child index
}

// branchRun is a node run on a branch of its own; res is set when it ends.
type branchRun struct {
	a   activation
	res *result
}

// schedule runs the graph from the start node and returns the workflow's
// output; ok is false when the workflow ended otherwise (a failure reported,
// a pause, the caller stopped).
func (r *run) schedule(ctx context.Context, c *call, input any, fromUser bool, yield func(*event.Event, error) bool) (last any, ok bool) {
	s := &scheduler{r: r, c: c, yield: yield, runs: map[string]int{}, edges: make([]int, len(r.w.cfg.Edges)),
		joins: map[string]map[string]any{}, active: map[string]int{},
		relay: agent.NewRelay(ctx), onRelay: map[int]branchRun{}}
	defer s.relay.Close()
	emit := func(ev *event.Event) bool { return yield(ev, nil) }
	for _, name := range r.w.starts {
		s.enqueue(r.w.nodes[name], input, fromUser)
	}
	for len(s.queue) > 0 || s.relay.Running() > 0 {
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
		if s.relay.Running() == 0 && len(s.queue) == 1 {
			// Alone: the node runs on the workflow's branch, inline.
			a := s.queue[0]
			s.queue = s.queue[:0]
			if !s.settle(a, r.execute(ctx, r.inv, a, true, emit)) {
				return nil, false
			}
			continue
		}
		if !s.startReady() {
			return nil, false
		}
		if s.relay.Running() == 0 {
			continue
		}
		m, err := s.relay.Next() // commits the event relayed last
		if err != nil {
			yield(nil, fmt.Errorf("workflow %s: %w", r.w.Name(), err))
			return nil, false
		}
		if m.Event != nil {
			if !emit(m.Event) {
				return nil, false
			}
			continue
		}
		if !s.settle(s.ended(m)) {
			return nil, false
		}
	}
	if s.paused {
		r.inv.End()
		return nil, false
	}
	return s.last, true
}

// startReady starts the queued node runs, each on a branch of its own; a
// run that finished before the invocation resumed gives its recorded output
// at once, in order. It returns false when the workflow ends.
func (s *scheduler) startReady() bool {
	r := s.r
	ready := s.queue
	s.queue = nil
	for _, a := range ready {
		if rec, ok := r.done[a.path]; ok {
			if !s.settle(a, result{output: rec.output, route: rec.route}) {
				return false
			}
			continue
		}
		binv := r.inv.WithBranch(r.branchOf(a.node)).WithEndScope()
		res := new(result)
		i := s.relay.Go(func(ctx context.Context, emit func(*event.Event) bool) error {
			*res = r.execute(ctx, binv, a, true, emit)
			return nil
		})
		s.onRelay[i] = branchRun{a: a, res: res}
	}
	return true
}

// ended returns the node run and result of a relayed end.
func (s *scheduler) ended(m agent.Relayed) (activation, result) {
	br := s.onRelay[m.Child]
	delete(s.onRelay, m.Child)
	if m.Err != nil { // a panic the node's own recovery did not see
		return br.a, result{err: m.Err}
	}
	return br.a, *br.res
}

// settle handles a node run's end; false ends the workflow.
func (s *scheduler) settle(a activation, res result) bool {
	switch {
	case res.stopped:
		return false
	case res.err != nil:
		s.r.fail(s.c, a.path, res.err, s.yield)
		return false
	case res.paused:
		s.paused = true
		s.active[a.node.name]--
		return true
	}
	s.done(a, res)
	return true
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
