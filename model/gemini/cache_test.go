package gemini_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"google.golang.org/genai"

	"github.com/loomkit/loom/model"
	"github.com/loomkit/loom/model/gemini"
	"github.com/loomkit/loom/model/internal/fakeapi"
)

func cachingModel(t *testing.T, srv *fakeapi.Server, opts *gemini.CacheOptions) *gemini.Model {
	t.Helper()
	m, err := gemini.New(t.Context(), "gemini-2.5-flash", &genai.ClientConfig{
		APIKey: "test-key", Backend: genai.BackendGeminiAPI, HTTPClient: srv.Client(),
		HTTPOptions: genai.HTTPOptions{BaseURL: srv.URL},
	}, &gemini.Options{Cache: opts})
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func conversation(system string, turns ...string) *model.Request {
	req := &model.Request{Config: &genai.GenerateContentConfig{
		SystemInstruction: genai.NewContentFromText(system, genai.RoleUser),
		Tools:             []*genai.Tool{{FunctionDeclarations: []*genai.FunctionDeclaration{{Name: "lookup", Description: "Looks things up."}}}},
		Temperature:       ptr[float32](0.2),
	}}
	for i, t := range turns {
		role := genai.Role(genai.RoleUser)
		if i%2 == 1 {
			role = genai.RoleModel
		}
		req.Contents = append(req.Contents, genai.NewContentFromText(t, role))
	}
	return req
}

// generateBodies returns the bodies of the generate requests received.
func generateBodies(t *testing.T, srv *fakeapi.Server) []map[string]any {
	t.Helper()
	var out []map[string]any
	for _, r := range srv.Requests() {
		if strings.Contains(r.Path, ":generateContent") {
			var m map[string]any
			if err := json.Unmarshal(r.Body, &m); err != nil {
				t.Fatal(err)
			}
			out = append(out, m)
		}
	}
	return out
}

func count(srv *fakeapi.Server, method, pathPart string) int {
	n := 0
	for _, r := range srv.Requests() {
		if r.Method == method && strings.Contains(r.Path, pathPart) {
			n++
		}
	}
	return n
}

var longInstruction = strings.Repeat("You are a careful assistant. ", 20)

// TestContextCache checks creation, reuse, invalidation when the prefix
// changes, and the wire shape: the cache holds the instruction, tools and
// history before the latest user turn; the generate request names the
// cache and carries only the rest.
func TestContextCache(t *testing.T) {
	reply := fakeapi.File(t, 200, "testdata/cached.json", false)
	srv := fakeapi.Start(t, reply, reply, reply)
	m := cachingModel(t, srv, &gemini.CacheOptions{MinPrefixBytes: 200})

	// 1. A long stable prefix: a cache is made.
	resps, err := fakeapi.Collect(m.Generate(t.Context(), conversation(longInstruction, "hi", "hello", "what now?"), false))
	if err != nil {
		t.Fatal(err)
	}
	var create fakeapi.Request
	for _, r := range srv.Requests() {
		if r.Method == http.MethodPost && strings.HasSuffix(r.Path, "/cachedContents") {
			create = r
		}
	}
	fakeapi.Golden(t, "testdata/cache_create.golden.json", fakeapi.Indent(create.Body), *update)
	gen := srv.Requests()[len(srv.Requests())-1]
	fakeapi.Golden(t, "testdata/request_cached.golden.json", fakeapi.Indent(gen.Body), *update)
	if u := resps[0].UsageMetadata; u == nil || u.CachedContentTokenCount != 4096 {
		t.Errorf("usage = %+v", u)
	}

	// 2. The same conversation, one turn longer: the cache is reused.
	if _, err := fakeapi.Collect(m.Generate(t.Context(), conversation(longInstruction, "hi", "hello", "what now?", "this", "and then?"), false)); err != nil {
		t.Fatal(err)
	}
	bodies := generateBodies(t, srv)
	if count(srv, http.MethodPost, "/cachedContents") != 1 || bodies[1]["cachedContent"] != "cachedContents/c1" || len(bodies[1]["contents"].([]any)) != 3 {
		t.Fatalf("second request: creates %d, body %v", count(srv, http.MethodPost, "/cachedContents"), bodies[1])
	}

	// 3. The instruction changed: a new cache, and the old one is deleted.
	if _, err := fakeapi.Collect(m.Generate(t.Context(), conversation(longInstruction+"Be brief.", "hi", "hello", "what now?"), false)); err != nil {
		t.Fatal(err)
	}
	bodies = generateBodies(t, srv)
	if bodies[2]["cachedContent"] != "cachedContents/c2" || count(srv, http.MethodDelete, "cachedContents/c1") != 1 {
		t.Fatalf("after a prefix change: body %v, requests %d", bodies[2], len(srv.Requests()))
	}
	if got := srv.CachedContents(); len(got) != 1 || got[0] != "cachedContents/c2" {
		t.Errorf("caches left = %v", got)
	}
}

// TestContextCacheSmallPrefix checks that a short prefix is sent as is.
func TestContextCacheSmallPrefix(t *testing.T) {
	srv := fakeapi.Start(t, fakeapi.File(t, 200, "testdata/text.json", false))
	m := cachingModel(t, srv, &gemini.CacheOptions{})
	if _, err := fakeapi.Collect(m.Generate(t.Context(), conversation("Short.", "hi", "hello", "again"), false)); err != nil {
		t.Fatal(err)
	}
	if n := len(srv.Requests()); n != 1 || generateBodies(t, srv)[0]["cachedContent"] != nil {
		t.Fatalf("%d requests", n)
	}
}

// TestContextCacheMaxUses checks that a cache is replaced after MaxUses
// requests by one holding the longer history.
func TestContextCacheMaxUses(t *testing.T) {
	reply := fakeapi.File(t, 200, "testdata/cached.json", false)
	srv := fakeapi.Start(t, reply, reply, reply)
	m := cachingModel(t, srv, &gemini.CacheOptions{MinPrefixBytes: 200, MaxUses: 2})
	turns := []string{"hi", "hello", "q1", "a1", "q2", "a2", "q3"}
	for _, n := range []int{3, 5, 7} {
		if _, err := fakeapi.Collect(m.Generate(t.Context(), conversation(longInstruction, turns[:n]...), false)); err != nil {
			t.Fatal(err)
		}
	}
	bodies := generateBodies(t, srv)
	if bodies[1]["cachedContent"] != "cachedContents/c1" || bodies[2]["cachedContent"] != "cachedContents/c2" || len(bodies[2]["contents"].([]any)) != 1 {
		t.Fatalf("caches used: %v %v %v", bodies[0]["cachedContent"], bodies[1]["cachedContent"], bodies[2]["cachedContent"])
	}
	if count(srv, http.MethodDelete, "cachedContents/c1") != 1 {
		t.Error("the superseded cache was not deleted")
	}
}

// TestContextCacheGoneOnServer checks that a cache the server dropped
// (expired early, deleted elsewhere) is forgotten and the request is sent
// whole instead of failing.
func TestContextCacheGoneOnServer(t *testing.T) {
	reply := fakeapi.File(t, 200, "testdata/cached.json", false)
	srv := fakeapi.Start(t, reply, reply, reply)
	m := cachingModel(t, srv, &gemini.CacheOptions{MinPrefixBytes: 200})
	req := conversation(longInstruction, "hi", "hello", "what now?")
	if _, err := fakeapi.Collect(m.Generate(t.Context(), req, false)); err != nil {
		t.Fatal(err)
	}
	srv.DropCache("cachedContents/c1")
	resps, err := fakeapi.Collect(m.Generate(t.Context(), req, false))
	if err != nil || resps[len(resps)-1].Text() != "From the cache." {
		t.Fatalf("after the cache was dropped: %v", err)
	}
	bodies := generateBodies(t, srv)
	last := bodies[len(bodies)-1]
	if last["cachedContent"] != nil || last["systemInstruction"] == nil || len(last["contents"].([]any)) != 3 {
		t.Fatalf("fallback body = %v", last)
	}
	// Forgotten: the next request makes a new cache.
	if _, err := fakeapi.Collect(m.Generate(t.Context(), req, false)); err != nil {
		t.Fatal(err)
	}
	if count(srv, http.MethodPost, "/cachedContents") != 2 {
		t.Error("no new cache after the old one was forgotten")
	}
}
