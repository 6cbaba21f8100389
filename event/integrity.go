package event

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"errors"
	"fmt"
	"hash"
	"maps"
	"math"
	"slices"
	"sync"
	"unicode/utf8"

	"google.golang.org/genai"
)

// MetadataCallMAC is the "customMetadata" key under which the runtime
// keeps, when it authenticates calls (see [CallKey]), the code of an event's
// function calls, a string. The key is the runtime's and kept in storage
// only: the wire form leaves it out.
const MetadataCallMAC = "callMAC"

// ErrCallIntegrity is the error of a stored function call whose
// authentication code is missing or does not match its name and
// arguments: the call was not written by the runtime as it stands, and is
// not run.
var ErrCallIntegrity = errors.New("stored function call fails its integrity check")

// CallKey authenticates the function calls the runtime stores, so that a
// session log edited outside the runtime cannot make a tool run with
// arguments the model never gave. An event's code is an HMAC-SHA256, with
// the key, over the application, the user and each of the event's calls in
// order: its id, its name and the JSON form of its arguments (see
// [JSONForm]). A code is so valid for those calls only, in that user's
// sessions of that application.
//
// A CallKey is immutable and safe for concurrent use.
type CallKey struct {
	writers sync.Pool // of *macWriter over HMAC-SHA256 hashes with the key
}

// MinCallKeyLen is the least number of bytes NewCallKey accepts.
const MinCallKeyLen = 32

// NewCallKey returns a CallKey over a copy of key, which must have at
// least MinCallKeyLen bytes of secret, random data.
func NewCallKey(key []byte) (*CallKey, error) {
	if len(key) < MinCallKeyLen {
		return nil, fmt.Errorf("event: a call key needs at least %d bytes, got %d", MinCallKeyLen, len(key))
	}
	key = append([]byte(nil), key...)
	return &CallKey{writers: sync.Pool{New: func() any { return &macWriter{h: hmac.New(sha256.New, key)} }}}, nil
}

// Sign records in e's custom metadata (MetadataCallMAC) the code of e's
// function calls for the application app and the user user. It sets the
// entry in a new map, so that a map e shares with another event is not
// changed, and does nothing to an event without calls. It fails only if a
// call's arguments have no JSON form.
func (k *CallKey) Sign(e *Event, app, user string) error {
	calls := e.FunctionCalls()
	if len(calls) == 0 {
		return nil
	}
	mac, err := k.mac(app, user, calls)
	if err != nil {
		return err
	}
	m := make(map[string]any, len(e.CustomMetadata)+1)
	maps.Copy(m, e.CustomMetadata)
	var code [43]byte // the unpadded base64 of a SHA-256 sum
	base64.RawURLEncoding.Encode(code[:], mac[:])
	m[MetadataCallMAC] = string(code[:])
	e.CustomMetadata = m
	return nil
}

// Check verifies that e's function calls are as the runtime signed them
// for the application app and the user user: e must carry a code and it
// must match every call's id, name and arguments. It returns an error
// wrapping ErrCallIntegrity otherwise. A caller that runs a stored call
// checks the event that holds it first.
func (k *CallKey) Check(e *Event, app, user string) error {
	calls := e.FunctionCalls()
	s, _ := e.CustomMetadata[MetadataCallMAC].(string)
	if s == "" {
		return fmt.Errorf("event: the calls of event %s have no authentication code: %w", e.ID, ErrCallIntegrity)
	}
	got, err := base64.RawURLEncoding.DecodeString(s)
	if err != nil {
		return fmt.Errorf("event: the calls of event %s have a malformed authentication code: %w", e.ID, ErrCallIntegrity)
	}
	want, err := k.mac(app, user, calls)
	if err != nil || !hmac.Equal(got, want[:]) {
		return fmt.Errorf("event: the calls of event %s do not match their authentication code: %w", e.ID, ErrCallIntegrity)
	}
	return nil
}

// mac computes the code of calls. Each field is written with its length,
// and the arguments in a tagged encoding of their JSON form, so that no two
// different lists of calls write the same bytes.
func (k *CallKey) mac(app, user string, calls []*genai.FunctionCall) ([sha256.Size]byte, error) {
	var sum [sha256.Size]byte
	w := k.writers.Get().(*macWriter)
	defer func() {
		if cap(w.b) <= maxPooledBuffer {
			k.writers.Put(w)
		}
	}()
	w.b = w.b[:0]
	w.str("loom.calls.v1")
	w.str(app)
	w.str(user)
	w.tagged('c', uint64(len(calls)))
	for _, fc := range calls {
		w.str(fc.ID)
		w.str(fc.Name)
		if w.canonical(argsValue(fc.Args)) {
			w.value(argsValue(fc.Args))
			continue
		}
		// Not in its JSON form (a struct, a typed map, a float32, text
		// that is not UTF-8...): write the form the log gives back.
		v, err := JSONForm(fc.Args)
		if err != nil {
			return sum, fmt.Errorf("event: arguments of call %s (%s): %w", fc.ID, fc.Name, err)
		}
		w.value(v)
	}
	w.h.Reset()
	w.h.Write(w.b)
	w.h.Sum(w.sum[:0])
	return w.sum, nil
}

// macWriter encodes values for a MAC, each behind a tag and, for strings
// and collections, a length, into a buffer it then hashes.
type macWriter struct {
	h   hash.Hash
	b   []byte
	sum [sha256.Size]byte
}

func (w *macWriter) tagged(tag byte, n uint64) {
	w.b = binary.BigEndian.AppendUint64(append(w.b, tag), n)
}

func (w *macWriter) str(s string) {
	w.tagged('s', uint64(len(s)))
	w.b = append(w.b, s...)
}

// canonical reports whether v is in its JSON form, except that integers
// may be of any integer type (value writes them as the float64 the log
// gives back), with every string UTF-8 (the log gives other text back
// changed).
func (w *macWriter) canonical(v any) bool {
	switch x := v.(type) {
	case nil, bool, float64, int, int64, int32, uint, uint64, uint32:
		return true
	case string:
		return utf8.ValidString(x)
	case []any:
		for _, e := range x {
			if !w.canonical(e) {
				return false
			}
		}
		return true
	case map[string]any:
		for k, e := range x {
			if !utf8.ValidString(k) || !w.canonical(e) {
				return false
			}
		}
		return true
	}
	return false
}

// value writes v, for which canonical holds, with a tag before each value.
func (w *macWriter) value(v any) {
	switch x := v.(type) {
	case nil:
		w.tagged('n', 0)
	case bool:
		if x {
			w.tagged('b', 1)
		} else {
			w.tagged('b', 0)
		}
	case string:
		w.str(x)
	case float64:
		w.tagged('d', math.Float64bits(x))
	case int:
		w.tagged('d', math.Float64bits(float64(x)))
	case int64:
		w.tagged('d', math.Float64bits(float64(x)))
	case int32:
		w.tagged('d', math.Float64bits(float64(x)))
	case uint:
		w.tagged('d', math.Float64bits(float64(x)))
	case uint64:
		w.tagged('d', math.Float64bits(float64(x)))
	case uint32:
		w.tagged('d', math.Float64bits(float64(x)))
	case []any:
		w.tagged('a', uint64(len(x)))
		for _, e := range x {
			w.value(e)
		}
	case map[string]any:
		w.tagged('m', uint64(len(x)))
		var small [8]string
		keys := small[:0]
		for k := range x {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		for _, k := range keys {
			w.str(k)
			w.value(x[k])
		}
	}
}
