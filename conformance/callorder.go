package conformance

import (
	"github.com/loomkit/loom/agent"
	"github.com/loomkit/loom/tool"
)

// The function calls of one model response run concurrently, so their
// before-tool callbacks reach the plugins in any order. ADK starts them in
// the order the model made them, and its recordings list them, and its
// replay answers them, in that order. The plugins place each tool call by
// the response that made it: a response's calls take consecutive places,
// in call order, reserved when the first of them arrives.

// callPlace returns the id of the committed event that made the call tc
// answers, the call's position among that event's function calls and
// their number. ok is false when the event is not found.
func callPlace(tc tool.Context) (eventID string, pos, n int, ok bool) {
	cc, isCC := tc.(*agent.CallbackContext)
	id := tc.FunctionCallID()
	if !isCC || id == "" || cc.Invocation() == nil || cc.Invocation().Session() == nil {
		return "", 0, 0, false
	}
	for _, ev := range cc.Invocation().Session().EventsMentioning(id) {
		calls := ev.FunctionCalls()
		for i, fc := range calls {
			if fc.ID == id {
				return ev.ID, i, len(calls), true
			}
		}
	}
	return "", 0, 0, false
}
