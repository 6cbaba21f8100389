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

// Scope says where a state key lives and who sees it.
type Scope uint8

// The scopes of state keys.
const (
	// ScopeSession keys (no prefix) live with their session.
	ScopeSession Scope = iota
	// ScopeApp keys (PrefixApp) are shared by every session of the app.
	ScopeApp
	// ScopeUser keys (PrefixUser) are shared by the sessions of one user.
	ScopeUser
	// ScopeTemp keys (PrefixTemp) live for one invocation and are never
	// stored.
	ScopeTemp
)

// ScopeOf returns the scope of a state key and its name within that scope
// (the key without its prefix). It is the one place that reads prefixes.
func ScopeOf(key string) (Scope, string) {
	switch {
	case strings.HasPrefix(key, PrefixApp):
		return ScopeApp, key[len(PrefixApp):]
	case strings.HasPrefix(key, PrefixUser):
		return ScopeUser, key[len(PrefixUser):]
	case strings.HasPrefix(key, PrefixTemp):
		return ScopeTemp, key[len(PrefixTemp):]
	}
	return ScopeSession, key
}

// splitDelta splits a state delta by scope, dropping temp keys. It also
// returns the delta to store with the event: delta itself when it has no temp
// keys, else a copy without them.
func splitDelta(delta map[string]any) (d Delta, stored map[string]any) {
	stored = delta
	for k, v := range delta {
		switch scope, name := ScopeOf(k); scope {
		case ScopeTemp:
			if len(stored) == len(delta) {
				stored = withoutTemp(delta)
			}
		case ScopeApp:
			d.App = put(d.App, name, v)
		case ScopeUser:
			d.User = put(d.User, name, v)
		default:
			d.Session = put(d.Session, k, v)
		}
	}
	return d, stored
}

func withoutTemp(m map[string]any) map[string]any {
	out := make(map[string]any, len(m))
	for k, v := range m {
		if scope, _ := ScopeOf(k); scope != ScopeTemp {
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
