package sessiontest

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/loomkit/loom/session"
)

// FuzzAppendStateDelta is the body of a fuzz target for a store: it appends
// state deltas built from arbitrary input (a key, a JSON document decoded
// with numbers as json.Number, and a raw string) and checks the contract:
// either the append fails with ErrInvalid and a fresh read of the session
// is unchanged, or it succeeds and a fresh read holds the delta applied to
// the state before (numbers compared as float64, which every store reads
// back). The seed corpus holds the known hard cases: deep nesting, numbers
// beyond float64 and 2^53, invalid UTF-8 and NUL.
//
//	func FuzzAppendStateDelta(f *testing.F) {
//		sessiontest.FuzzAppendStateDelta(f, mybackend.New())
//	}
func FuzzAppendStateDelta(f *testing.F, st session.Store) {
	f.Cleanup(func() { st.Close() })
	svc := session.NewService(st, nil)
	seeds := []struct {
		key  string
		doc  string
		text string
	}{
		{"k", `{"a": [1, 2.5, "x", null, true]}`, "plain"},
		{"app:k", strings.Repeat("[", session.MaxValueDepth) + strings.Repeat("]", session.MaxValueDepth), ""},
		{"user:k", strings.Repeat(`{"a":`, 150) + "1" + strings.Repeat("}", 150), ""},
		{"k", strings.Repeat("[", 5000) + strings.Repeat("]", 5000), ""},
		{"k", `1e400`, ""},
		{"k", `-1e400`, ""},
		{"k", `123456789012345678901234567890`, ""},
		{"k", `9007199254740993`, ""},
		{"k", `9007199254740992`, ""},
		{"k", `-0`, ""},
		{"k", `5e-324`, ""},
		{"k", `1.7976931348623157e308`, ""},
		{"k\xff", `1`, ""},
		{"k\x00", `1`, ""},
		{"k", `"a\u0000b"`, ""},
		{"k", `{"\u0000": 1}`, ""},
		{"k", `"\ud800"`, "\xff\xfe"},
		{"temp:k", `{"x": 1}`, "a\x00b"},
		{"k", `null`, ""},
		{strings.Repeat("k", session.MaxIDLen+1), `1`, ""},
	}
	for _, s := range seeds {
		f.Add(s.key, []byte(s.doc), s.text)
	}
	var n atomic.Int64
	f.Fuzz(func(t *testing.T, key string, doc []byte, text string) {
		dec := json.NewDecoder(bytes.NewReader(doc))
		dec.UseNumber()
		var v any
		if err := dec.Decode(&v); err != nil {
			return // not JSON: nothing to append
		}
		ctx := t.Context()
		k := session.Key{AppName: "fuzz", UserID: "u", SessionID: fmt.Sprintf("s%d", n.Add(1))}
		s, err := svc.Create(ctx, k, map[string]any{"k": "initial", "other": 1})
		if err != nil {
			t.Fatal(err)
		}
		before := getState(t, svc, k)
		delta := map[string]any{key: v, "text": text}
		ev := textEvent("", "fuzz", delta)
		err = svc.AppendEvent(ctx, s, ev)
		after := getState(t, svc, k)
		if err != nil {
			if !errors.Is(err, session.ErrInvalid) {
				t.Fatalf("AppendEvent(%q) = %v, want nil or ErrInvalid", delta, err)
			}
			if before != after {
				t.Fatalf("refused AppendEvent(%q) changed the session from %s to %s", delta, before, after)
			}
			return
		}
		want := map[string]any{}
		if err := json.Unmarshal([]byte(before), &want); err != nil {
			t.Fatal(err)
		}
		for dk, dv := range delta {
			switch {
			case strings.HasPrefix(dk, session.PrefixTemp):
			case dv == nil:
				delete(want, dk)
			default:
				want[dk] = dv
			}
		}
		if w := floatJSON(t, want); w != after {
			t.Fatalf("AppendEvent(%q) stored\n%s\nwant\n%s", delta, after, w)
		}
	})
}

// getState returns a fresh read of the session's state as canonical JSON.
func getState(t *testing.T, svc *session.Service, k session.Key) string {
	t.Helper()
	s, err := svc.Get(t.Context(), k, &session.GetOptions{NoEvents: true})
	if err != nil {
		t.Fatal(err)
	}
	return floatJSON(t, s.State())
}

// floatJSON encodes v as JSON with numbers as float64 and keys sorted.
func floatJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatalf("encode %v: %v", v, err)
	}
	var x any
	if err := json.Unmarshal(b, &x); err != nil {
		t.Fatalf("decode %s: %v", b, err)
	}
	b, _ = json.Marshal(x)
	return string(b)
}
