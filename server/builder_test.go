package server_test

import (
	"bytes"
	"mime/multipart"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/loomkit/loom/server"
)

// memFiles is an in-memory server.AppFiles.
type memFiles struct {
	mu    sync.Mutex
	saved map[string]string
}

func (m *memFiles) ReadAppFile(app, p string, draft bool) ([]byte, bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	c, ok := m.saved[p]
	return []byte(c), ok, nil
}

func (m *memFiles) SaveAppFiles(app string, files map[string][]byte, draft bool) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	for p, c := range files {
		m.saved[p] = string(c)
	}
	return nil
}

func (m *memFiles) CancelDraft(string) error { return nil }

// TestBuilderWritesOnlyInDevelopment: the agent builder's files are read
// in any setting, but written only in the development one: a server with
// other hosts allowed, with authentication, or reached from another
// address answers a save with 403 and writes nothing.
func TestBuilderWritesOnlyInDevelopment(t *testing.T) {
	for _, tc := range []struct {
		name   string
		hosts  []string
		remote string
		want   int
	}{
		{"development", []string{"localhost"}, "127.0.0.1:4000", http.StatusOK},
		{"public host", []string{"agents.example.com"}, "127.0.0.1:4000", http.StatusForbidden},
		{"remote client", []string{"localhost"}, "192.0.2.7:4000", http.StatusForbidden},
	} {
		t.Run(tc.name, func(t *testing.T) {
			files := &memFiles{saved: map[string]string{"root_agent.yaml": "name: demo\n"}}
			f := newFixture(t, server.Config{AppFiles: files, AllowedHosts: tc.hosts})
			get := httptest.NewRequest("GET", "/dev/apps/demo/builder", nil)
			get.Host, get.RemoteAddr = "localhost", tc.remote
			rec := httptest.NewRecorder()
			f.srv.ServeHTTP(rec, get)
			if rec.Code != http.StatusOK || rec.Body.String() != "name: demo\n" {
				t.Errorf("read: %d %q", rec.Code, rec.Body)
			}
			var body bytes.Buffer
			mw := multipart.NewWriter(&body)
			fw, _ := mw.CreateFormFile("files", "demo/root_agent.yaml")
			fw.Write([]byte("name: changed\n"))
			mw.Close()
			save := httptest.NewRequest("POST", "/dev/apps/demo/builder/save", &body)
			save.Header.Set("Content-Type", mw.FormDataContentType())
			save.Host, save.RemoteAddr = "localhost", tc.remote
			rec = httptest.NewRecorder()
			f.srv.ServeHTTP(rec, save)
			if rec.Code != tc.want {
				t.Errorf("save: %d %s, want %d", rec.Code, rec.Body, tc.want)
			}
			if changed := files.saved["root_agent.yaml"] != "name: demo\n"; changed != (tc.want == http.StatusOK) || (changed && strings.TrimSpace(rec.Body.String()) != "true") {
				t.Errorf("file %q after a save answered %d %s", files.saved["root_agent.yaml"], rec.Code, rec.Body)
			}
		})
	}
	// Authentication: never written.
	files := &memFiles{saved: map[string]string{}}
	f := newFixture(t, server.Config{AppFiles: files, AllowedHosts: []string{"localhost"},
		Authenticate: func(*http.Request) (string, error) { return "ann", nil }})
	req := httptest.NewRequest("POST", "/dev/apps/demo/builder/cancel", nil)
	req.Host, req.RemoteAddr = "localhost", "127.0.0.1:4000"
	rec := httptest.NewRecorder()
	f.srv.ServeHTTP(rec, req)
	if rec.Code != http.StatusForbidden {
		t.Errorf("cancel with authentication: %d", rec.Code)
	}
}
