package telemetry

import (
	"encoding/json"
	"sync"
	"weak"

	"google.golang.org/genai"
)

// contentCache keeps the JSON that a call_llm span records of each history
// content. The LLM agent builds a session's history incrementally and
// passes the same content values to every later model call, so each
// content is encoded once instead of on every call. Entries are keyed by
// weak pointers, so a cached encoding never outlives its content nor is
// taken for another content at a reused address; the cache holds at most
// max bytes of encodings, the oldest evicted first. Contents are
// never modified once in a history (a changed content is a new value),
// which is what keeps a cached encoding right. It is safe for concurrent
// use.
type contentCache struct {
	max   int // set before use
	mu    sync.Mutex
	m     map[weak.Pointer[genai.Content]][]byte
	queue []weak.Pointer[genai.Content] // insertion order, for eviction
	bytes int
}

// maxCachedJSON bounds the encodings a Telemetry keeps: a quarter of
// Config.MaxSpanBytes, and no more than this.
const maxCachedJSON = 8 << 20

// encode returns the JSON of c without its inline data parts.
func (cc *contentCache) encode(c *genai.Content) ([]byte, error) {
	key := weak.Make(c)
	cc.mu.Lock()
	b, ok := cc.m[key]
	cc.mu.Unlock()
	if ok {
		return b, nil
	}
	b, err := json.Marshal(withoutInlineData(c))
	if err != nil || len(b) > cc.max/64 {
		return b, err // large contents are encoded each time, never cached
	}
	cc.mu.Lock()
	defer cc.mu.Unlock()
	if cc.m == nil {
		cc.m = make(map[weak.Pointer[genai.Content]][]byte)
	}
	if _, ok := cc.m[key]; ok {
		return b, nil // encoded concurrently
	}
	for cc.bytes+len(b) > cc.max && len(cc.queue) > 0 {
		old := cc.queue[0]
		cc.queue = cc.queue[1:]
		cc.bytes -= len(cc.m[old])
		delete(cc.m, old)
	}
	cc.queue = append(cc.queue, key)
	cc.m[key] = b
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
