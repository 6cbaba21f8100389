package conformance

import (
	"fmt"
	"strings"
)

// Mismatch is a failed comparison: what differs, field by field.
type Mismatch struct {
	// What names the compared thing: "event count", "event 3", "session".
	What string
	// Differences are the differing fields.
	Differences []Difference
}

// Error formats the mismatch, one difference a line.
func (m *Mismatch) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s differs:", m.What)
	for _, d := range m.Differences {
		b.WriteString("\n  ")
		b.WriteString(d.String())
	}
	return b.String()
}

// CompareEvents compares the events of a live session (as the server's
// JSON or a recorded file holds them) with the recorded ones, by ADK's
// rules (see the package documentation). It returns nil when they agree,
// else the first event that differs, or the counts when they differ (with
// the first event that differs among the common ones, if any).
func CompareEvents(got, want []any) *Mismatch {
	n := min(len(got), len(want))
	var first *Mismatch
	for i := range n {
		d := Diff("", comparableEvent(Normalize(want[i])), comparableEvent(Normalize(got[i])))
		if len(d) > 0 {
			first = &Mismatch{What: fmt.Sprintf("event %d (author %v)", i, authorOf(want[i], got[i])), Differences: d}
			break
		}
	}
	if len(got) != len(want) {
		m := &Mismatch{What: "event count", Differences: []Difference{{Path: "events", Want: float64(len(want)), Got: float64(len(got))}}}
		if first != nil {
			m.Differences = append(m.Differences, Difference{Path: first.What, Want: first.Differences[0].Want, Got: first.Differences[0].Got})
			m.Differences[1].Path += " " + first.Differences[0].Path
		} else if len(got) > n {
			m.Differences = append(m.Differences, Difference{Path: fmt.Sprintf("events[%d]", n), Got: summary(got[n])})
		} else {
			m.Differences = append(m.Differences, Difference{Path: fmt.Sprintf("events[%d]", n), Want: summary(want[n])})
		}
		return m
	}
	return first
}

// CompareSession compares a live session with a recorded one, events
// aside (see CompareEvents): app name, user id and state, ignoring the
// _adk_* state keys.
func CompareSession(got, want map[string]any) *Mismatch {
	d := Diff("", comparableSession(Normalize(want)), comparableSession(Normalize(got)))
	if len(d) == 0 {
		return nil
	}
	return &Mismatch{What: "session", Differences: d}
}

// CompareAll compares a live session with a recorded one, events first.
func CompareAll(got, want map[string]any) *Mismatch {
	ge, _ := got["events"].([]any)
	we, _ := want["events"].([]any)
	if m := CompareEvents(ge, we); m != nil {
		return m
	}
	return CompareSession(got, want)
}

// eventIgnored are the event fields that differ from run to run.
var eventIgnored = []string{"id", "timestamp", "invocation_id", "long_running_tool_ids", "node_info"}

func comparableEvent(v any) any {
	ev, ok := v.(map[string]any)
	if !ok {
		return v
	}
	for _, k := range eventIgnored {
		delete(ev, k)
	}
	if c, ok := ev["content"].(map[string]any); ok {
		parts, _ := c["parts"].([]any)
		for _, p := range parts {
			pm, ok := p.(map[string]any)
			if !ok {
				continue
			}
			delete(pm, "thought_signature")
			for _, k := range []string{"function_call", "function_response"} {
				if f, ok := pm[k].(map[string]any); ok {
					dropCallIDs(f)
					delete(f, "id")
				}
			}
		}
	}
	if a, ok := ev["actions"].(map[string]any); ok {
		delete(a, "requested_auth_configs")
		delete(a, "requested_tool_confirmations")
		if sd, ok := a["state_delta"].(map[string]any); ok {
			dropInternal(sd)
			if len(sd) == 0 {
				delete(a, "state_delta")
			}
		}
		if len(a) == 0 {
			delete(ev, "actions")
		}
	}
	return ev
}

// dropCallIDs removes from a function call's arguments the function call
// ids they repeat, which differ from run to run as the ids do: the id of
// the call a confirmation or credential request is about
// (originalFunctionCall.id), and an input request's interrupt_id, which
// is its own call id.
func dropCallIDs(f map[string]any) {
	args, ok := f["args"].(map[string]any)
	if !ok {
		return
	}
	for _, k := range []string{"originalFunctionCall", "original_function_call"} {
		if orig, ok := args[k].(map[string]any); ok {
			delete(orig, "id")
		}
	}
	if id, ok := f["id"].(string); ok && id != "" && args["interrupt_id"] == id {
		delete(args, "interrupt_id")
	}
}

func comparableSession(v any) any {
	s, ok := v.(map[string]any)
	if !ok {
		return v
	}
	for _, k := range []string{"id", "last_update_time", "events"} {
		delete(s, k)
	}
	if st, ok := s["state"].(map[string]any); ok {
		dropInternal(st)
		if len(st) == 0 {
			delete(s, "state")
		}
	}
	return s
}

// dropInternal removes the protocol's own state keys (_adk_*).
func dropInternal(m map[string]any) {
	for k := range m {
		if strings.HasPrefix(k, "_adk_") {
			delete(m, k)
		}
	}
}

func authorOf(evs ...any) any {
	for _, e := range evs {
		if m, ok := e.(map[string]any); ok && m["author"] != nil {
			return m["author"]
		}
	}
	return "?"
}

// summary is a short description of an event for a count mismatch.
func summary(v any) any {
	m, ok := Normalize(v).(map[string]any)
	if !ok {
		return v
	}
	out := map[string]any{"author": m["author"]}
	if c, ok := m["content"]; ok {
		out["content"] = c
	}
	if a, ok := m["actions"]; ok {
		out["actions"] = a
	}
	return out
}
