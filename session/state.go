package session

import (
	"maps"
	"strings"

	"github.com/loomkit/loom/event"
)

// State key prefixes. A key's prefix decides where it is stored and who sees
// it.
const (
	// PrefixApp marks keys shared by every session of every user of an app.
	PrefixApp = "app:"
	// PrefixUser marks keys shared by every session of one user in an app.
	PrefixUser = "user:"
	// PrefixTemp marks keys that live only for the current invocation: they
	// are visible in the live session but never stored.
	PrefixTemp = "temp:"
)

// This file holds the state-scope rules, once for every backend.

// splitDelta splits a state delta by scope, dropping temp keys. It also
// returns the delta to store with the event: delta itself when it has no temp
// keys, else a copy without them.
func splitDelta(delta map[string]any) (d Delta, stored map[string]any) {
	stored = delta
	for k, v := range delta {
		switch {
		case strings.HasPrefix(k, PrefixTemp):
			if len(stored) == len(delta) {
				stored = withoutTemp(delta)
			}
		case strings.HasPrefix(k, PrefixApp):
			d.App = put(d.App, k[len(PrefixApp):], v)
		case strings.HasPrefix(k, PrefixUser):
			d.User = put(d.User, k[len(PrefixUser):], v)
		default:
			d.Session = put(d.Session, k, v)
		}
	}
	return d, stored
}

func withoutTemp(m map[string]any) map[string]any {
	out := make(map[string]any, len(m))
	for k, v := range m {
		if !strings.HasPrefix(k, PrefixTemp) {
			out[k] = v
		}
	}
	return out
}

func put(m map[string]any, k string, v any) map[string]any {
	if m == nil {
		m = map[string]any{}
	}
	m[k] = v
	return m
}

// mergeState builds the merged view of a record's state: session keys, then
// app and user keys with their prefixes.
func mergeState(r *Record) map[string]any {
	out := make(map[string]any, len(r.State)+len(r.AppState)+len(r.UserState))
	maps.Copy(out, r.State)
	for k, v := range r.AppState {
		out[PrefixApp+k] = v
	}
	for k, v := range r.UserState {
		out[PrefixUser+k] = v
	}
	return out
}

// ApplyDelta applies delta to state in place: a nil value removes the key,
// other values are deep-copied in. Stores use it to fold deltas, so that the
// rule is the same everywhere.
func ApplyDelta(state, delta map[string]any) {
	for k, v := range delta {
		if v == nil {
			delete(state, k)
		} else {
			state[k] = event.CloneValue(v)
		}
	}
}
