package plugin

import (
	"context"
	"fmt"
	"slices"

	"github.com/loomkit/loom/agent"
	"github.com/loomkit/loom/event"
	"github.com/loomkit/loom/session"
)

// AddSessionToMemory returns a plugin that remembers each invocation in the
// runner's memory service when its agents have finished without error, so
// that later sessions of the user can recall it (with the load_memory or
// preload_memory tools).
//
// It adds the invocation's events at the end of the session (walking back
// from the last event while events belong to the invocation) with
// [memory.Service.AddEvents]: the cost of an invocation follows its own
// events, not the length of the session, and an event added twice is one
// memory. An invocation that pauses (on a long-running call, a
// confirmation or a credential) and is resumed later, maybe after other
// invocations, is added at each end: up to the pause, then the resumed
// run. A session whose invocations all ran with the plugin therefore has
// the memories [memory.Service.AddSession] would make of it, but for what
// the plugin does not see: events of invocations that failed, and events
// committed after it ran (by plugins after it in the runner's list).
// AddSession remembers a whole session explicitly.
//
// A failure, or a runner without a memory service, is the invocation's
// error; the session's events are already committed.
func AddSessionToMemory() *Plugin {
	return &Plugin{
		Name: "add_session_to_memory",
		AfterAgents: func(ctx context.Context, inv *agent.Invocation) (*event.Event, error) {
			svc := inv.Memory()
			if svc == nil {
				return nil, fmt.Errorf("add session to memory: %w", agent.ErrNoService)
			}
			sess := inv.Session()
			if err := svc.AddEvents(ctx, sess, lastRun(sess, inv.ID())); err != nil {
				return nil, fmt.Errorf("add session to memory: %w", err)
			}
			return nil, nil
		},
	}
}

// lastRun returns the events of invocation invID at the end of sess, oldest
// first: walking back from the last event while events belong to it. It
// reads those events and one more.
func lastRun(sess *session.Session, invID string) []*event.Event {
	var out []*event.Event
	for i := sess.Len() - 1; i >= 0; i-- {
		ev := sess.At(i)
		if ev == nil || ev.InvocationID != invID {
			break
		}
		out = append(out, ev)
	}
	slices.Reverse(out)
	return out
}
