package event

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"hash"
	"maps"

	"google.golang.org/genai"
)

// MetadataCallMACs is the "customMetadata" key under which the runtime
// keeps, when it authenticates calls (see [CallKey]), the code of each
// function call of an event it committed: a map from call id to the code.
// The key is the runtime's and kept in storage only: the wire form leaves
// it out.
const MetadataCallMACs = "callMACs"

// ErrCallIntegrity is the error of a stored function call whose
// authentication code is missing or does not match its name and
// arguments: the call was not written by the runtime as it stands, and is
// not run.
var ErrCallIntegrity = errors.New("stored function call fails its integrity check")

// CallKey authenticates the function calls the runtime stores, so that a
// session log edited outside the runtime cannot make a tool run with
// arguments the model never gave. Each call's code is an HMAC-SHA256, with
// the key, over the application, the user, the call's id, its name and
// the JSON form of its arguments (see [JSONForm]), so a code is valid for
// that call only, in that user's sessions of that application.
//
// A CallKey is immutable and safe for concurrent use.
type CallKey struct {
	key []byte
}

// MinCallKeyLen is the least number of bytes NewCallKey accepts.
const MinCallKeyLen = 32

// NewCallKey returns a CallKey over a copy of key, which must have at
// least MinCallKeyLen bytes of secret, random data.
func NewCallKey(key []byte) (*CallKey, error) {
	if len(key) < MinCallKeyLen {
		return nil, fmt.Errorf("event: a call key needs at least %d bytes, got %d", MinCallKeyLen, len(key))
	}
	return &CallKey{key: append([]byte(nil), key...)}, nil
}

// Sign records in e's custom metadata (MetadataCallMACs) the code of each
// of e's function calls for the application app and the user user. It
// sets the entry in a new map, so that a map e shares with another event
// is not changed, and does nothing to an event without calls. It fails
// only if a call's arguments have no JSON form.
func (k *CallKey) Sign(e *Event, app, user string) error {
	calls := e.FunctionCalls()
	if len(calls) == 0 {
		return nil
	}
	macs := make(map[string]any, len(calls))
	for _, fc := range calls {
		mac, err := k.mac(app, user, fc)
		if err != nil {
			return err
		}
		macs[fc.ID] = base64.RawURLEncoding.EncodeToString(mac)
	}
	m := make(map[string]any, len(e.CustomMetadata)+1)
	maps.Copy(m, e.CustomMetadata)
	m[MetadataCallMACs] = macs
	e.CustomMetadata = m
	return nil
}

// Check verifies that fc, a function call of e, is as the runtime signed
// it for the application app and the user user: e must carry a code for
// fc's id and it must match fc's name and arguments. It returns an error
// wrapping ErrCallIntegrity otherwise.
func (k *CallKey) Check(e *Event, app, user string, fc *genai.FunctionCall) error {
	macs, _ := e.CustomMetadata[MetadataCallMACs].(map[string]any)
	s, _ := macs[fc.ID].(string)
	if s == "" {
		return fmt.Errorf("event: call %s (%s) of event %s has no authentication code: %w", fc.ID, fc.Name, e.ID, ErrCallIntegrity)
	}
	got, err := base64.RawURLEncoding.DecodeString(s)
	if err != nil {
		return fmt.Errorf("event: call %s (%s) of event %s has a malformed authentication code: %w", fc.ID, fc.Name, e.ID, ErrCallIntegrity)
	}
	want, err := k.mac(app, user, fc)
	if err != nil || !hmac.Equal(got, want) {
		return fmt.Errorf("event: call %s (%s) of event %s does not match its authentication code: %w", fc.ID, fc.Name, e.ID, ErrCallIntegrity)
	}
	return nil
}

// mac computes the code of fc. Each field is written with its length, so
// that no two different calls write the same bytes.
func (k *CallKey) mac(app, user string, fc *genai.FunctionCall) ([]byte, error) {
	args, err := canonicalArgs(fc.Args)
	if err != nil {
		return nil, fmt.Errorf("event: arguments of call %s (%s): %w", fc.ID, fc.Name, err)
	}
	h := hmac.New(sha256.New, k.key)
	for _, f := range [][]byte{[]byte("loom.call.v1"), []byte(app), []byte(user), []byte(fc.ID), []byte(fc.Name), args} {
		writeField(h, f)
	}
	return h.Sum(nil), nil
}

func writeField(h hash.Hash, f []byte) {
	var n [8]byte
	binary.BigEndian.PutUint64(n[:], uint64(len(f)))
	h.Write(n[:])
	h.Write(f)
}

// canonicalArgs encodes args in their JSON form, the form the session log
// gives back, so that a call reads the same before it is stored and after
// (an int argument comes back a float64; encoding/json sorts map keys).
func canonicalArgs(args map[string]any) ([]byte, error) {
	if len(args) == 0 {
		return []byte("{}"), nil
	}
	b, err := json.Marshal(args)
	if err != nil {
		return nil, err
	}
	var v any
	if err := json.Unmarshal(b, &v); err != nil {
		return nil, err
	}
	return json.Marshal(v)
}
