package gemini

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"sync"
	"time"

	"google.golang.org/genai"
)

// CacheOptions turns on context caching: the stable prefix of a request
// (system instruction, tools, tool config and the history before the latest
// user turn) is stored as Gemini cached content and later requests that
// start with the same prefix send only the rest, referring to the cache.
// Cache reads show in the response's usage metadata
// (CachedContentTokenCount). The zero value is usable.
type CacheOptions struct {
	// TTL is the lifetime of a cache; zero means 30 minutes. A cache is not
	// used in its last minute.
	TTL time.Duration
	// MinPrefixBytes is the smallest prefix worth caching, measured as the
	// size of its JSON; zero means 16 KiB (a few thousand tokens; Gemini
	// rejects caches below its minimum token count, and the request is then
	// sent without a cache).
	MinPrefixBytes int
	// MaxUses is the number of requests a cache serves before it is
	// replaced by one that holds the longer history; zero means 10.
	MaxUses int
	// MaxCaches bounds the caches kept at once; the oldest is deleted
	// first. Zero means 16.
	MaxCaches int
}

// cacheEntry is one cached prefix.
type cacheEntry struct {
	name    string
	key     [32]byte // model, system instruction, tools and tool config
	prefix  [32]byte // the first n contents
	n       int
	expires time.Time
	uses    int
}

// cacheManager creates, reuses and deletes cached contents. It is safe for
// concurrent use.
type cacheManager struct {
	opts   CacheOptions
	client *genai.Client
	now    func() time.Time

	mu      sync.Mutex
	entries []*cacheEntry // oldest first
}

func newCacheManager(o CacheOptions, client *genai.Client) *cacheManager {
	if o.TTL <= 0 {
		o.TTL = 30 * time.Minute
	}
	if o.MinPrefixBytes <= 0 {
		o.MinPrefixBytes = 16 << 10
	}
	if o.MaxUses <= 0 {
		o.MaxUses = 10
	}
	if o.MaxCaches <= 0 {
		o.MaxCaches = 16
	}
	return &cacheManager{opts: o, client: client, now: time.Now}
}

// cacheSafetyMargin is how long before its expiry a cache stops being used,
// so that it does not expire between the check and the request.
const cacheSafetyMargin = time.Minute

// apply returns the contents and config to send for a request: with a
// cache when one matches or can be made, else unchanged. Cache failures
// never fail the request.
func (c *cacheManager) apply(ctx context.Context, modelName string, contents []*genai.Content, cfg *genai.GenerateContentConfig) ([]*genai.Content, *genai.GenerateContentConfig) {
	if cfg != nil && cfg.CachedContent != "" {
		return contents, cfg // the caller manages its own cache
	}
	stable := len(contents)
	for stable > 0 && contents[stable-1] != nil && contents[stable-1].Role == genai.RoleUser {
		stable--
	}
	if stable == len(contents) { // nothing would be left to send
		return contents, cfg
	}
	var sys *genai.Content
	var tools []*genai.Tool
	var toolCfg *genai.ToolConfig
	if cfg != nil {
		sys, tools, toolCfg = cfg.SystemInstruction, cfg.Tools, cfg.ToolConfig
	}
	key, keySize := hashOf(modelName, sys, tools, toolCfg)
	prefixes, sizes := prefixHashes(contents[:stable])

	now := c.now()
	if best := c.reuse(ctx, key, prefixes, stable, now); best != nil {
		return contents[best.n:], withCache(cfg, best.name)
	}
	if keySize+sizes[stable] < c.opts.MinPrefixBytes {
		return contents, cfg
	}
	cc, err := c.client.Caches.Create(ctx, modelName, &genai.CreateCachedContentConfig{
		TTL: c.opts.TTL, DisplayName: "loom", Contents: contents[:stable], SystemInstruction: sys, Tools: tools, ToolConfig: toolCfg,
	})
	if err != nil || cc == nil || cc.Name == "" {
		return contents, cfg
	}
	expires := cc.ExpireTime
	if expires.IsZero() {
		expires = now.Add(c.opts.TTL)
	}
	e := &cacheEntry{name: cc.Name, key: key, prefix: prefixes[stable], n: stable, expires: expires, uses: 1}
	c.add(ctx, e, prefixes)
	return contents[stable:], withCache(cfg, e.name)
}

// reuse returns the cache, counted as used once more, of the longest
// prefix of a conversation (the first stable of its contents, whose
// prefix hashes are prefixes) made with the instruction and tools of key,
// or nil. It deletes the caches that expire at now and those of the same
// conversation made with another instruction or tools.
func (c *cacheManager) reuse(ctx context.Context, key [32]byte, prefixes [][32]byte, stable int, now time.Time) *cacheEntry {
	var stale []string
	defer func() { c.delete(ctx, stale) }()
	c.mu.Lock()
	defer c.mu.Unlock()
	var best *cacheEntry
	kept := c.entries[:0]
	for _, e := range c.entries {
		matches := e.n <= stable && prefixes[e.n] == e.prefix
		switch {
		case !now.Before(e.expires.Add(-cacheSafetyMargin)):
			stale = append(stale, e.name) // expired
			continue
		case matches && e.key != key:
			stale = append(stale, e.name) // same conversation, changed instruction or tools
			continue
		case matches && e.uses < c.opts.MaxUses && (best == nil || e.n > best.n):
			best = e
		}
		kept = append(kept, e)
	}
	c.entries = kept
	if best != nil {
		best.uses++
	}
	return best
}

// add records the new cache e, of a conversation whose prefix hashes are
// prefixes, and deletes the caches it supersedes (a shorter prefix of the
// same conversation) and the oldest over the bound.
func (c *cacheManager) add(ctx context.Context, e *cacheEntry, prefixes [][32]byte) {
	var stale []string
	c.mu.Lock()
	kept := c.entries[:0]
	for _, old := range c.entries {
		if old.key == e.key && old.n <= e.n && prefixes[old.n] == old.prefix {
			stale = append(stale, old.name)
			continue
		}
		kept = append(kept, old)
	}
	c.entries = append(kept, e)
	for len(c.entries) > c.opts.MaxCaches {
		stale = append(stale, c.entries[0].name)
		c.entries = c.entries[1:]
	}
	c.mu.Unlock()
	c.delete(ctx, stale)
}

// forget drops a cache the API no longer knows.
func (c *cacheManager) forget(name string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	kept := c.entries[:0]
	for _, e := range c.entries {
		if e.name != name {
			kept = append(kept, e)
		}
	}
	c.entries = kept
}

// deleteTimeout bounds the deletion of caches the model call no longer
// needs, which outlives the call's own cancellation.
const deleteTimeout = 10 * time.Second

// delete removes caches from the API, best effort, within deleteTimeout.
func (c *cacheManager) delete(ctx context.Context, names []string) {
	if len(names) == 0 {
		return
	}
	dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), deleteTimeout)
	defer cancel()
	for _, name := range names {
		_, _ = c.client.Caches.Delete(dctx, name, nil)
	}
}

// withCache returns a copy of cfg that refers to a cache instead of
// carrying the parts the cache holds.
func withCache(cfg *genai.GenerateContentConfig, name string) *genai.GenerateContentConfig {
	var cp genai.GenerateContentConfig
	if cfg != nil {
		cp = *cfg
	}
	cp.CachedContent = name
	cp.SystemInstruction, cp.Tools, cp.ToolConfig = nil, nil, nil
	return &cp
}

// hashOf hashes the JSON of values and returns the size hashed.
func hashOf(values ...any) ([32]byte, int) {
	h := sha256.New()
	n := 0
	for _, v := range values {
		b, _ := json.Marshal(v)
		n += len(b)
		h.Write(b)
		h.Write([]byte{0})
	}
	var out [32]byte
	h.Sum(out[:0])
	return out, n
}

// prefixHashes returns, for each i in 0..len(contents), a hash of
// contents[:i] and its size in JSON bytes.
func prefixHashes(contents []*genai.Content) ([][32]byte, []int) {
	hashes := make([][32]byte, len(contents)+1)
	sizes := make([]int, len(contents)+1)
	hashes[0] = sha256.Sum256(nil)
	for i, c := range contents {
		b, _ := json.Marshal(c)
		h := sha256.New()
		h.Write(hashes[i][:])
		h.Write(b)
		h.Sum(hashes[i+1][:0])
		sizes[i+1] = sizes[i] + len(b)
	}
	return hashes, sizes
}
