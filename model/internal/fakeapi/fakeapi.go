// Package fakeapi is a scripted HTTP server for the model adapters' wire
// tests: it answers each request with the next recorded reply and keeps the
// requests it received for golden comparison.
package fakeapi

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"iter"
	"net/http"
	"net/http/httptest"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/loomkit/loom/model"
	"github.com/loomkit/loom/model/retry"
)

// Reply is one scripted HTTP answer.
type Reply struct {
	// Status is the HTTP status; zero means 200.
	Status int
	// Header holds extra response headers (Retry-After, ...).
	Header http.Header
	// ContentType defaults to application/json, or text/event-stream when
	// SSE is set.
	ContentType string
	// Body is written as is.
	Body []byte
	// SSE flushes the body line by line, like a streaming API.
	SSE bool
	// Cut aborts the connection after the body, without ending the
	// chunked response: the client sees a stream cut in the middle.
	Cut bool
	// Hang sends nothing until the client gives up on the request: a
	// provider that stopped answering.
	Hang bool
}

// Request is one request the server received.
type Request struct {
	Method string
	Path   string
	Query  string
	Header http.Header
	Body   []byte
}

// Server is a scripted API server. It is safe for concurrent use.
type Server struct {
	*httptest.Server
	transport *http.Transport

	mu       sync.Mutex
	replies  []Reply
	requests []Request
	caches   map[string]cachedContent // Gemini cachedContents by name
	nextID   int
}

// cachedContent is one cache of the emulated Gemini cachedContents API.
type cachedContent struct {
	model   string
	expires time.Time
}

// New starts a server that answers with replies in order. Requests past
// the end of the script get 599 and are still recorded.
func New(replies ...Reply) *Server {
	s := &Server{replies: replies}
	s.Server = httptest.NewServer(http.HandlerFunc(s.serve))
	s.transport = &http.Transport{}
	return s
}

// Client returns an HTTP client with its own transport, so Close can drop
// its idle connections and leave no goroutine behind.
func (s *Server) Client() *http.Client {
	return &http.Client{Transport: s.transport}
}

// Close shuts the server and the client transport down.
func (s *Server) Close() {
	s.transport.CloseIdleConnections()
	s.Server.Close()
	s.transport.CloseIdleConnections()
}

// Requests returns the requests received so far.
func (s *Server) Requests() []Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Request(nil), s.requests...)
}

// CachedContents returns the names of the Gemini caches that exist.
func (s *Server) CachedContents() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	names := make([]string, 0, len(s.caches))
	for n := range s.caches {
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}

// DropCache removes a Gemini cache behind the client's back, as expiry on
// the server does.
func (s *Server) DropCache(name string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.caches, name)
}

// serveCache emulates Gemini's cachedContents endpoint (create, get,
// delete) and checks the cachedContent a generate request refers to. It
// reports whether it answered the request.
func (s *Server) serveCache(w http.ResponseWriter, r *http.Request, body []byte) bool {
	p := r.URL.Path
	if s.caches == nil {
		s.caches = map[string]cachedContent{}
	}
	notFound := func() bool {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusNotFound)
		_, _ = w.Write([]byte(`{"error":{"code":404,"message":"CachedContent not found (or permission denied)","status":"NOT_FOUND"}}`))
		return true
	}
	switch i := strings.Index(p, "cachedContents"); {
	case i >= 0 && r.Method == http.MethodPost:
		var req struct {
			Model string `json:"model"`
			TTL   string `json:"ttl"`
		}
		_ = json.Unmarshal(body, &req)
		ttl, err := time.ParseDuration(req.TTL)
		if err != nil {
			ttl = time.Hour
		}
		s.nextID++
		name := fmt.Sprintf("cachedContents/c%d", s.nextID)
		s.caches[name] = cachedContent{model: req.Model, expires: time.Now().Add(ttl)}
		w.Header().Set("Content-Type", "application/json")
		_, _ = fmt.Fprintf(w, `{"name":%q,"model":%q,"displayName":"loom","expireTime":%q,"usageMetadata":{"totalTokenCount":4096}}`,
			name, req.Model, time.Now().Add(ttl).UTC().Format(time.RFC3339Nano))
		return true
	case i >= 0:
		name := p[i:]
		c, ok := s.caches[name]
		if !ok {
			return notFound()
		}
		if r.Method == http.MethodDelete {
			delete(s.caches, name)
			w.Header().Set("Content-Type", "application/json")
			_, _ = w.Write([]byte(`{}`))
			return true
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = fmt.Fprintf(w, `{"name":%q,"model":%q}`, name, c.model)
		return true
	case strings.Contains(p, ":generateContent") || strings.Contains(p, ":streamGenerateContent"):
		var req struct {
			CachedContent string `json:"cachedContent"`
		}
		if json.Unmarshal(body, &req) == nil && req.CachedContent != "" {
			if _, ok := s.caches[req.CachedContent]; !ok {
				return notFound()
			}
		}
	}
	return false
}

func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	s.mu.Lock()
	s.requests = append(s.requests, Request{Method: r.Method, Path: r.URL.Path, Query: r.URL.RawQuery, Header: r.Header.Clone(), Body: body})
	if s.serveCache(w, r, body) {
		s.mu.Unlock()
		return
	}
	var rep Reply
	ok := len(s.replies) > 0
	if ok {
		rep = s.replies[0]
		s.replies = s.replies[1:]
	}
	s.mu.Unlock()
	if !ok {
		http.Error(w, `{"error":{"message":"unexpected request"}}`, 599)
		return
	}
	if rep.Hang {
		<-r.Context().Done()
		return
	}
	for k, v := range rep.Header {
		w.Header()[k] = v
	}
	ct := rep.ContentType
	if ct == "" {
		ct = "application/json"
		if rep.SSE {
			ct = "text/event-stream"
		}
	}
	w.Header().Set("Content-Type", ct)
	status := rep.Status
	if status == 0 {
		status = http.StatusOK
	}
	w.WriteHeader(status)
	if rep.SSE || rep.Cut {
		f, _ := w.(http.Flusher)
		for line := range bytes.Lines(rep.Body) {
			_, _ = w.Write(line)
			if f != nil && len(bytes.TrimSpace(line)) == 0 {
				f.Flush()
			}
		}
		if f != nil {
			f.Flush()
		}
	} else {
		_, _ = w.Write(rep.Body)
	}
	if rep.Cut {
		panic(http.ErrAbortHandler)
	}
}

// JSON is a reply with a JSON body and the given status.
func JSON(status int, body string) Reply {
	return Reply{Status: status, Body: []byte(body)}
}

// File is a reply whose body is read from path.
func File(t testing.TB, status int, path string, sse bool) Reply {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return Reply{Status: status, Body: b, SSE: sse}
}

// Indent re-indents a JSON document for stable golden files; non-JSON input
// is returned unchanged.
func Indent(b []byte) []byte {
	var v any
	if json.Unmarshal(b, &v) != nil {
		return b
	}
	out, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return b
	}
	return append(out, '\n')
}

// Start starts a server for a test and registers its shutdown, followed by
// a check that the test left no goroutine behind (CONFORMANCE R6): the
// client transport's connections, the SDK's stream readers and the adapter's
// iterators must all be gone once the server is closed.
func Start(t testing.TB, replies ...Reply) *Server {
	t.Helper()
	ignore := goleak.IgnoreCurrent()
	t.Cleanup(func() {
		if err := goleak.Find(ignore); err != nil {
			t.Errorf("goroutine leak: %v", err)
		}
	})
	s := New(replies...)
	t.Cleanup(s.Close)
	return s
}

// Clock records the waits of a retry policy instead of sleeping.
type Clock struct {
	mu    sync.Mutex
	waits []time.Duration
}

// Policy returns a retry policy with the given attempt limit whose waits are
// recorded by c. Jitter is fixed to its upper bound so the recorded backoff
// is exact.
func (c *Clock) Policy(attempts int) *retry.Policy {
	return &retry.Policy{
		MaxAttempts: attempts,
		BaseDelay:   100 * time.Millisecond,
		MaxDelay:    10 * time.Second,
		Jitter:      func(max time.Duration) time.Duration { return max },
		Sleep: func(ctx context.Context, d time.Duration) error {
			c.mu.Lock()
			c.waits = append(c.waits, d)
			c.mu.Unlock()
			return ctx.Err()
		},
	}
}

// Waits returns the recorded waits.
func (c *Clock) Waits() []time.Duration {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]time.Duration(nil), c.waits...)
}

// Collect drains a model stream into its responses and final error.
func Collect(seq iter.Seq2[*model.Response, error]) ([]*model.Response, error) {
	var out []*model.Response
	for r, err := range seq {
		if err != nil {
			return out, err
		}
		out = append(out, r)
	}
	return out, nil
}

// Golden compares got with the file at path, rewriting the file when update
// is set.
func Golden(t testing.TB, path string, got []byte, update bool) {
	t.Helper()
	if update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run with -update to create it)", err)
	}
	if !bytes.Equal(want, got) {
		t.Errorf("%s differs from the request sent:\n--- want\n%s\n--- got\n%s", path, want, got)
	}
}
