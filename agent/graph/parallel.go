package graph

import (
	"context"
	"fmt"

	"github.com/loomkit/loom/agent"
	"github.com/loomkit/loom/event"
)

// ParallelWorker returns a node that runs n once for each item of its input
// (a list; any other value is a list of one), concurrently, at most
// maxWorkers at a time (no bound when maxWorkers is zero or less), each on a
// branch of its own, and outputs the items' outputs as a list in the
// input's order. The node takes n's name; each item's run is a dynamic
// child of it (path "wf/n@1/n@2" for the second item), so when the
// invocation resumes an item that had finished is not run again. The first
// item that fails stops the others and fails the node; an item that waits
// for input lets the items already running finish, starts no more, and
// pauses the node.
func ParallelWorker(n *Node, maxWorkers int) *Node {
	pw := newNode(n.name, KindFunc)
	pw.description = n.description
	pw.fn = func(ctx context.Context, nc *Context, in any) (any, error) {
		return nc.runEach(ctx, n, in, maxWorkers)
	}
	return pw
}

// itemsOf returns the items of a parallel worker's input: a list, or a list
// of one.
func itemsOf(in any) ([]any, error) {
	if items, ok := in.([]any); ok {
		return items, nil
	}
	p, err := plain(in)
	if err != nil {
		return nil, err
	}
	if items, ok := p.([]any); ok {
		return items, nil
	}
	return []any{p}, nil
}

// goItem starts the run of n over the i-th item on a branch of its own; the
// run's result goes to *res.
func (c *Context) goItem(relay *agent.Relay, n *Node, i int, item any, res *result) {
	base := c.inv.Branch()
	if base == "" {
		base = c.run.w.Name() + "." + c.inv.Agent().Name()
	}
	a := activation{node: n, input: item, path: fmt.Sprintf("%s/%s@%d", c.path, n.name, i+1)}
	binv := c.inv.WithBranch(fmt.Sprintf("%s.%s@%d", base, n.name, i+1)).WithEndScope()
	relay.Go(func(ctx context.Context, emit func(*event.Event) bool) error {
		*res = c.run.execute(ctx, binv, a, true, emit)
		return nil
	})
}

// runEach runs n over the items of in, as [ParallelWorker] describes.
func (c *Context) runEach(ctx context.Context, n *Node, in any, limit int) (any, error) {
	items, err := itemsOf(in)
	if err != nil {
		return nil, fmt.Errorf("input of node %s: %w", c.inv.Agent().Name(), err)
	}
	outs := make([]any, len(items))
	if len(items) == 0 {
		return outs, nil
	}
	if limit <= 0 || limit > len(items) {
		limit = len(items)
	}
	// Items run on goroutines of their own and hand their events to this
	// one, which yields them one at a time. The relay numbers the items'
	// runs as they start, which is in order: its index is the item's.
	relay := agent.NewRelay(ctx)
	defer relay.Close()
	results := make([]result, len(items)) // each written by its item's run, read once it ended
	var (
		first  error // the first failure
		paused bool
		next   int // the next item to start
	)
	for {
		for first == nil && !paused && relay.Running() < limit && next < len(items) {
			if err := c.run.step(1); err != nil {
				first = err
				break
			}
			c.goItem(relay, n, next, items[next], &results[next])
			next++
		}
		if relay.Running() == 0 {
			break
		}
		m, err := relay.Next() // commits the event yielded last
		if err != nil {
			if first == nil {
				first = err
			}
			break
		}
		if m.Event != nil {
			if err := c.yield(m.Event); err != nil {
				return nil, err
			}
			continue
		}
		i, res := m.Child, results[m.Child]
		if m.Err != nil { // a panic the node's own recovery did not see
			res = result{err: m.Err}
		}
		switch {
		case res.stopped:
			c.err = errStopped
			return nil, c.err
		case res.err != nil:
			if first == nil {
				// Stops the others: the relay's Close cancels them.
				return nil, fmt.Errorf("item %d: %w", i+1, res.err)
			}
		case res.paused:
			paused = true
		default:
			outs[i] = res.output
		}
	}
	switch {
	case first != nil:
		return nil, first
	case paused:
		return nil, ErrWaitingForInput
	}
	return outs, nil
}
