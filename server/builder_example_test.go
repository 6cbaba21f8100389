package server_test

import (
	"context"
	"fmt"
	"io"
	"iter"
	"net/http"
	"net/http/httptest"
	"sync"

	"github.com/loomkit/loom/agent"
	"github.com/loomkit/loom/event"
	"github.com/loomkit/loom/runner"
	"github.com/loomkit/loom/server"
	"github.com/loomkit/loom/session/memsession"
)

// yamlFiles keeps one app's YAML files in memory; loom web and loom api
// serve the files of their YAML apps' directories instead.
type yamlFiles struct {
	mu    sync.Mutex
	files map[string][]byte
}

func (y *yamlFiles) ReadAppFile(app, path string, draft bool) ([]byte, bool, error) {
	y.mu.Lock()
	defer y.mu.Unlock()
	content, ok := y.files[path]
	return content, ok, nil
}

func (y *yamlFiles) SaveAppFiles(app string, files map[string][]byte, draft bool) error {
	y.mu.Lock()
	defer y.mu.Unlock()
	for path, content := range files {
		y.files[path] = content
	}
	return nil
}

func (y *yamlFiles) CancelDraft(app string) error { return nil }

// ADK's agent builder reads an app's root_agent.yaml through
// Config.AppFiles.
func ExampleAppFiles() {
	root, _ := agent.New(agent.Config{Name: "helper", Run: func(context.Context, *agent.Invocation) iter.Seq2[*event.Event, error] {
		return func(func(*event.Event, error) bool) {}
	}})
	app, _ := runner.New(runner.Config{AppName: "helper", Agent: root, Sessions: memsession.NewService()})
	files := &yamlFiles{files: map[string][]byte{"root_agent.yaml": []byte("name: helper\nmodel: gemini-2.5-flash\n")}}
	srv, err := server.New(server.Config{Apps: []*runner.Runner{app}, AppFiles: files})
	if err != nil {
		fmt.Println(err)
		return
	}
	ts := httptest.NewServer(srv)
	defer ts.Close()
	resp, err := http.Get(ts.URL + "/dev/apps/helper/builder")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	fmt.Print(string(b))
	// Output:
	// name: helper
	// model: gemini-2.5-flash
}
