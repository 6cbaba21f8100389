package server

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"iter"
	"net/http"
	"unicode/utf8"

	"google.golang.org/genai"

	"github.com/loomkit/loom/event"
)

// readBody reads the request body; an over-size body fails with
// *http.MaxBytesError.
func readBody(r *http.Request) ([]byte, error) {
	if r.Body == nil {
		return nil, nil
	}
	b, err := io.ReadAll(r.Body)
	lb, _ := r.Body.(*limitedBody)
	if lb != nil && err == nil {
		// Lift the deadline for the response. After a failed read it
		// stays, so the server drops the connection instead of waiting
		// for the rest of the body.
		lb.done()
	}
	if err != nil {
		var maxErr *http.MaxBytesError
		if errors.As(err, &maxErr) {
			return nil, err
		}
		return nil, badRequest("Cannot read request body: %v", err)
	}
	if lb != nil {
		if err := checkDepth(b, lb.maxDepth); err != nil {
			return nil, err
		}
	}
	return b, nil
}

// fields holds the members of a JSON request object under camelCase keys;
// members whose value is null are dropped, so null reads as absent.
type fields map[string]json.RawMessage

// readObject reads the request body as a JSON object (see decodeObject).
func readObject(r *http.Request) (fields, error) {
	body, err := readBody(r)
	if err != nil {
		return nil, err
	}
	return decodeObject(body)
}

// decodeObject decodes a JSON object request body. An empty body is an
// empty object. A member given twice, under either spelling of its key,
// takes its last value.
func decodeObject(body []byte) (fields, error) {
	body = bytes.TrimSpace(body)
	if len(body) == 0 || string(body) == "null" {
		return fields{}, nil
	}
	if !json.Valid(body) {
		var v any
		err := json.Unmarshal(body, &v)
		return nil, badRequest("Invalid JSON: %v", err)
	}
	if body[0] != '{' {
		return nil, unprocessable("Request body must be a JSON object")
	}
	f := make(fields, 8)
	for key, value := range members(body) {
		k, known := memberNames[string(key)]
		if !known {
			var ok bool
			if k, ok = plainString(key); !ok {
				// A variable of its own: one whose address escapes would
				// be allocated for every member, not only for this one.
				var unquoted string
				if err := json.Unmarshal(key, &unquoted); err != nil {
					return nil, badRequest("Invalid JSON: %v", err)
				}
				k = unquoted
			}
			k = event.CamelCase(k)
		}
		if string(value) == "null" {
			delete(f, k)
			continue
		}
		f[k] = value
	}
	return f, nil
}

// memberNames maps the keys requests use, quoted as sent in either
// spelling, to their camelCase names, so that a known key is read without
// an allocation.
var memberNames = map[string]string{}

func init() {
	for _, name := range [][2]string{
		{"appName", "app_name"}, {"userId", "user_id"}, {"sessionId", "session_id"}, {"invocationId", "invocation_id"}, {"loomRetryOf", "loom_retry_of"},
		{"newMessage", "new_message"}, {"stateDelta", "state_delta"}, {"eventId", "event_id"}, {"streaming", ""}, {"state", ""},
	} {
		for _, spelling := range name {
			if spelling != "" {
				memberNames[`"`+spelling+`"`] = name[0]
			}
		}
	}
}

// members yields the members of a valid JSON object: each key, quoted as
// sent, and its value, both slices of obj.
func members(obj []byte) iter.Seq2[[]byte, []byte] {
	return func(yield func(key, value []byte) bool) {
		i := 1 // past '{'
		for {
			i = skipSpace(obj, i)
			switch obj[i] {
			case '}':
				return
			case ',':
				i++
				continue
			}
			end := valueEnd(obj, i)
			key := obj[i:end]
			i = skipSpace(obj, skipSpace(obj, end)+1) // past ':'
			end = valueEnd(obj, i)
			if !yield(key, obj[i:end]) {
				return
			}
			i = end
		}
	}
}

func skipSpace(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\t' || b[i] == '\n' || b[i] == '\r') {
		i++
	}
	return i
}

// valueEnd returns the index just past the valid JSON value at b[i].
func valueEnd(b []byte, i int) int {
	depth := 0
	for ; i < len(b); i++ {
		switch b[i] {
		case '"':
			for i++; b[i] != '"'; i++ {
				if b[i] == '\\' {
					i++
				}
			}
			if depth == 0 {
				return i + 1
			}
		case '{', '[':
			depth++
		case '}', ']':
			if depth == 0 {
				return i // the end of the enclosing object
			}
			if depth--; depth == 0 {
				return i + 1
			}
		case ',', ' ', '\t', '\n', '\r':
			if depth == 0 {
				return i
			}
		}
	}
	return i
}

// string returns a string member ("" when absent).
func (f fields) string(key string) (string, error) {
	raw, ok := f[key]
	if !ok {
		return "", nil
	}
	if s, ok := plainString(raw); ok {
		return s, nil
	}
	var s string
	if err := json.Unmarshal(raw, &s); err != nil {
		return "", unprocessable("%s must be a string", key)
	}
	return s, nil
}

// id reads an optional string member holding an id, checked as checkID
// checks ids: the routes that take a new session's id from the body refuse
// the same ids.
func (f fields) id(key string) (string, error) {
	v, err := f.string(key)
	if err != nil {
		return "", err
	}
	if err := checkID(key, v); err != nil {
		return "", err
	}
	return v, nil
}

// plainString returns the string a JSON string value without escapes
// stands for, as encoding/json decodes it, and reports whether raw is one.
func plainString(raw []byte) (string, bool) {
	if len(raw) < 2 || raw[0] != '"' || raw[len(raw)-1] != '"' {
		return "", false
	}
	in := raw[1 : len(raw)-1]
	for _, c := range in {
		if c < 0x20 || c == '"' || c == '\\' {
			return "", false
		}
	}
	if !utf8.Valid(in) {
		return "", false
	}
	return string(in), true
}

// bool returns a boolean member (false when absent).
func (f fields) bool(key string) (bool, error) {
	raw, ok := f[key]
	if !ok {
		return false, nil
	}
	switch string(raw) {
	case "true":
		return true, nil
	case "false":
		return false, nil
	}
	var b bool
	if err := json.Unmarshal(raw, &b); err != nil {
		return false, unprocessable("%s must be a boolean", key)
	}
	return b, nil
}

// object returns an object member as user data: its keys are kept as sent.
func (f fields) object(key string) (map[string]any, error) {
	raw, ok := f[key]
	if !ok {
		return nil, nil
	}
	var m map[string]any
	if err := json.Unmarshal(raw, &m); err != nil {
		return nil, unprocessable("%s must be an object", key)
	}
	return m, nil
}

// content returns a genai Content member, normalized from snake_case keys
// and URL-safe base64.
func (f fields) content(key string) (*genai.Content, error) {
	raw, ok := f[key]
	if !ok {
		return nil, nil
	}
	c, err := event.UnmarshalContent(raw)
	if err != nil {
		return nil, unprocessable("%s is not a valid Content: %v", key, err)
	}
	return c, nil
}

// events returns an array member of events in any accepted wire form.
func (f fields) events(key string) ([]*event.Event, error) {
	raw, ok := f[key]
	if !ok {
		return nil, nil
	}
	var evs []*event.Event
	if err := json.Unmarshal(raw, &evs); err != nil {
		return nil, unprocessable("%s must be an array of events: %v", key, err)
	}
	return evs, nil
}
