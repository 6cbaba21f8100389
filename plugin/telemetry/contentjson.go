package telemetry

import (
	"encoding/json"
	"sync"
	"unsafe"
	"weak"

	"google.golang.org/genai"
)

// contentCache keeps the JSON that a call_llm span records of each history
// content. The LLM agent builds a session's history incrementally and
// passes the same content values to every later model call, so each
// content is encoded once instead of on every call. Contents are never
// modified once in a history (a changed content is a new value), which is
// what keeps a cached encoding right. The cache holds at most max bytes of
// encodings, the oldest evicted first. It is safe for concurrent use.
//
// Entries are keyed by the content's address, which costs a lookup little,
// and each holds a weak pointer to its content: an entry counts only if
// that pointer still yields the content looked up. Once a content is
// garbage collected its weak pointer yields nil, before its memory can be
// reused, so an encoding is never taken for another content at the same
// address, and no entry keeps its content alive. (Making a weak pointer
// for every lookup instead took most of the time of recording a request.)
type contentCache struct {
	max   int // set before use
	mu    sync.Mutex
	m     map[uintptr]cachedJSON
	queue []uintptr // the keys of m in insertion order, for eviction
	bytes int
}

// cachedJSON is the encoding of the content its weak pointer yields.
type cachedJSON struct {
	content weak.Pointer[genai.Content]
	json    []byte
}

// maxCachedJSON bounds the encodings a Telemetry keeps: a quarter of
// Config.MaxSpanBytes, and no more than this.
const maxCachedJSON = 8 << 20

// encode returns the JSON of c without its inline data parts.
func (cc *contentCache) encode(c *genai.Content) ([]byte, error) {
	key := uintptr(unsafe.Pointer(c))
	cc.mu.Lock()
	e, ok := cc.m[key]
	cc.mu.Unlock()
	if ok && e.content.Value() == c {
		return e.json, nil
	}
	b, err := json.Marshal(withoutInlineData(c))
	if err != nil || len(b) > cc.max/64 {
		return b, err // large contents are encoded each time, never cached
	}
	cc.mu.Lock()
	defer cc.mu.Unlock()
	if cc.m == nil {
		cc.m = make(map[uintptr]cachedJSON)
	}
	if e, ok := cc.m[key]; ok {
		if e.content.Value() == c {
			return e.json, nil // encoded concurrently
		}
		// The entry of a collected content that lived at this address:
		// replaced in place, keeping its place in the queue.
		cc.bytes -= len(e.json)
	} else {
		for cc.bytes+len(b) > cc.max && len(cc.queue) > 0 {
			old := cc.queue[0]
			cc.queue = cc.queue[1:]
			cc.bytes -= len(cc.m[old].json)
			delete(cc.m, old)
		}
		cc.queue = append(cc.queue, key)
	}
	cc.m[key] = cachedJSON{content: weak.Make(c), json: b}
	cc.bytes += len(b)
	return b, nil
}

// withoutInlineData returns c, or a copy of it without inline data parts
// (their bytes are not recorded).
func withoutInlineData(c *genai.Content) *genai.Content {
	clean := true
	for _, p := range c.Parts {
		if p == nil || p.InlineData != nil {
			clean = false
			break
		}
	}
	if clean {
		return c
	}
	out := &genai.Content{Role: c.Role, Parts: make([]*genai.Part, 0, len(c.Parts))}
	for _, p := range c.Parts {
		if p != nil && p.InlineData == nil {
			out.Parts = append(out.Parts, p)
		}
	}
	return out
}
