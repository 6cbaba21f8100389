package telemetry

import (
	"encoding/json"
	"fmt"
	"runtime"
	"strings"
	"testing"
	"unsafe"

	"google.golang.org/genai"
)

// TestContentCache: a cached encoding is the content's JSON without inline
// data, computed once per content, and the cache stays within its bound.
func TestContentCache(t *testing.T) {
	cc := contentCache{max: maxCachedJSON}
	c := &genai.Content{Role: "user", Parts: []*genai.Part{
		{Text: "hello"},
		{InlineData: &genai.Blob{MIMEType: "image/png", Data: []byte{1, 2, 3}}},
	}}
	got, err := cc.encode(c)
	if err != nil {
		t.Fatal(err)
	}
	want, _ := json.Marshal(&genai.Content{Role: "user", Parts: []*genai.Part{{Text: "hello"}}})
	if string(got) != string(want) {
		t.Fatalf("encode = %s, want %s", got, want)
	}
	again, _ := cc.encode(c)
	if &again[0] != &got[0] {
		t.Error("the second encoding of one content was not taken from the cache")
	}
	other := &genai.Content{Role: "user", Parts: []*genai.Part{{Text: "hello"}}}
	if b, _ := cc.encode(other); &b[0] == &got[0] {
		t.Error("an equal but distinct content shares a cache entry")
	}
	big := strings.Repeat("x", 64<<10)
	keep := make([]*genai.Content, 0, 400)
	for i := range 400 { // 400 × 64 KiB is more than the bound
		k := &genai.Content{Role: "user", Parts: []*genai.Part{{Text: fmt.Sprint(i, big)}}}
		keep = append(keep, k)
		if _, err := cc.encode(k); err != nil {
			t.Fatal(err)
		}
	}
	if cc.bytes > maxCachedJSON || len(cc.m) != len(cc.queue) {
		t.Fatalf("cache holds %d bytes in %d entries (queue %d), bound %d", cc.bytes, len(cc.m), len(cc.queue), maxCachedJSON)
	}
	_ = keep
}

// TestContentCacheFollowsSpanBytes: the cache of a Telemetry holds at most
// a quarter of Config.MaxSpanBytes, so that a small span budget bounds it
// too (it used to hold 8 MiB whatever the budget).
func TestContentCacheFollowsSpanBytes(t *testing.T) {
	const spanBytes = 1 << 20
	tel, err := New(Config{MaxSpanBytes: spanBytes})
	if err != nil {
		t.Fatal(err)
	}
	keep := make([]*genai.Content, 0, 1000)
	for i := range 1000 { // 1000 × about 2 KiB is more than the bound
		c := &genai.Content{Role: "user", Parts: []*genai.Part{{Text: fmt.Sprint(i, strings.Repeat("y", 2<<10))}}}
		keep = append(keep, c)
		if _, err := tel.contents.encode(c); err != nil {
			t.Fatal(err)
		}
	}
	if tel.contents.bytes > spanBytes/4 || tel.contents.bytes < spanBytes/8 {
		t.Fatalf("the content cache holds %d bytes for a span budget of %d, want at most a quarter", tel.contents.bytes, spanBytes)
	}
	_ = keep
}

// TestContentCacheAddressReused encodes many short-lived contents, letting
// the garbage collector free them so that new ones take their addresses:
// every encoding must be its own content's, never one cached for a content
// that lived at the same address before. The test checks that addresses
// were in fact reused.
func TestContentCacheAddressReused(t *testing.T) {
	cc := contentCache{max: maxCachedJSON}
	seen := map[uintptr]bool{}
	reused := 0
	for i := range 20000 {
		c := &genai.Content{Role: "user", Parts: []*genai.Part{{Text: fmt.Sprint("message ", i)}}}
		addr := uintptr(unsafe.Pointer(c))
		if seen[addr] {
			reused++
		}
		seen[addr] = true
		got, err := cc.encode(c)
		if err != nil {
			t.Fatal(err)
		}
		if want := fmt.Sprintf(`{"parts":[{"text":"message %d"}],"role":"user"}`, i); string(got) != want {
			t.Fatalf("content %d encoded as %s, want %s", i, got, want)
		}
		if i%500 == 499 {
			runtime.GC()
		}
	}
	if reused == 0 {
		t.Fatal("no address was reused: the test proves nothing")
	}
	if len(cc.m) != len(cc.queue) || cc.bytes > maxCachedJSON {
		t.Fatalf("cache holds %d entries, queue %d, %d bytes", len(cc.m), len(cc.queue), cc.bytes)
	}
	total := 0
	for _, e := range cc.m {
		total += len(e.json)
	}
	if total != cc.bytes {
		t.Fatalf("entries hold %d bytes, the cache counts %d", total, cc.bytes)
	}
	t.Logf("%d of 20000 contents took an address used before", reused)
}
