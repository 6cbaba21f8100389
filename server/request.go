package server

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"net/http"

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
// empty object.
func decodeObject(body []byte) (fields, error) {
	body = bytes.TrimSpace(body)
	if len(body) == 0 || string(body) == "null" {
		return fields{}, nil
	}
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(body, &raw); err != nil {
		var typeErr *json.UnmarshalTypeError
		if errors.As(err, &typeErr) {
			return nil, unprocessable("Request body must be a JSON object")
		}
		return nil, badRequest("Invalid JSON: %v", err)
	}
	f := make(fields, len(raw))
	for k, v := range raw {
		if string(v) == "null" {
			continue
		}
		f[event.CamelCase(k)] = v
	}
	return f, nil
}

// string returns a string member ("" when absent).
func (f fields) string(key string) (string, error) {
	raw, ok := f[key]
	if !ok {
		return "", nil
	}
	var s string
	if err := json.Unmarshal(raw, &s); err != nil {
		return "", unprocessable("%s must be a string", key)
	}
	return s, nil
}

// bool returns a boolean member (false when absent).
func (f fields) bool(key string) (bool, error) {
	raw, ok := f[key]
	if !ok {
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
