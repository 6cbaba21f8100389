package plugin

import (
	"context"
	"fmt"

	"github.com/loomkit/loom/agent"
	"github.com/loomkit/loom/event"
)

// AddSessionToMemory returns a plugin that adds the session to the
// runner's memory service after every invocation whose agents finished
// without error, so that later sessions of the user can recall it (with
// the load_memory or preload_memory tools). Adding a session again
// replaces what it added before. A failure, or a runner without a memory
// service, is the invocation's error; the session's events are already
// committed.
func AddSessionToMemory() *Plugin {
	return &Plugin{
		Name: "add_session_to_memory",
		AfterAgents: func(ctx context.Context, inv *agent.Invocation) (*event.Event, error) {
			svc := inv.Memory()
			if svc == nil {
				return nil, fmt.Errorf("add session to memory: %w", agent.ErrNoService)
			}
			if err := svc.AddSession(ctx, inv.Session()); err != nil {
				return nil, fmt.Errorf("add session to memory: %w", err)
			}
			return nil, nil
		},
	}
}
