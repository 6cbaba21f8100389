package cli_test

import (
	"bytes"
	"io"
	"mime/multipart"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// builderGet reads a file through ADK's agent builder route.
func builderGet(t *testing.T, base, query string) (int, string) {
	t.Helper()
	res, err := http.Get(base + "/dev/apps/helper/builder" + query)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	return res.StatusCode, string(b)
}

// builderPost posts files (name → content) as ADK's web UI does.
func builderPost(t *testing.T, base, route string, files map[string]string) (int, string) {
	t.Helper()
	var body bytes.Buffer
	mw := multipart.NewWriter(&body)
	for name, content := range files {
		fw, err := mw.CreateFormFile("files", name)
		if err != nil {
			t.Fatal(err)
		}
		fw.Write([]byte(content))
	}
	mw.Close()
	res, err := http.Post(base+"/dev/apps/helper/builder"+route, mw.FormDataContentType(), &body)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	return res.StatusCode, strings.TrimSpace(string(b))
}

// TestAgentBuilderRoutes: "loom api DIR" serves ADK's agent builder routes
// for a YAML app: the app's files are read, a draft (tmp=true) is kept
// apart from the app until saved, a save writes the app's files (and the
// app reloads them), a cancel drops the draft, and paths outside the app,
// files that are not YAML and files with an "args" key are refused.
func TestAgentBuilderRoutes(t *testing.T) {
	dir := t.TempDir()
	root := filepath.Join(dir, "helper", "root_agent.yaml")
	const v1 = "name: helper\nmodel: gemini-2.5-flash\ninstruction: Help.\n"
	writeFile(t, root, v1)
	writeFile(t, filepath.Join(dir, "secret.yaml"), "token: s3cr3t\n")
	writeFile(t, filepath.Join(dir, "helper", ".env"), "KEY=1\n")
	base := startServerArgs(t, []string{"api", dir})

	if code, got := builderGet(t, base, ""); code != http.StatusOK || got != v1 {
		t.Fatalf("root file: %d %q", code, got)
	}
	for _, q := range []string{"?file_path=../secret.yaml", "?file_path=.env", "?file_path=missing.yaml"} {
		if code, got := builderGet(t, base, q); code != http.StatusOK || got != "" {
			t.Errorf("%s: %d %q, want an empty answer", q, code, got)
		}
	}

	const v2 = "name: helper\nmodel: gemini-2.5-flash\ninstruction: Help briefly.\n"
	if code, got := builderPost(t, base, "/save?tmp=true", map[string]string{"helper/root_agent.yaml": v2, "helper/sub.yaml": "name: sub\n"}); code != http.StatusOK || got != "true" {
		t.Fatalf("draft save: %d %s", code, got)
	}
	if code, got := builderGet(t, base, "?tmp=true"); code != http.StatusOK || got != v2 {
		t.Errorf("draft read: %d %q", code, got)
	}
	if b, _ := os.ReadFile(root); string(b) != v1 {
		t.Errorf("a draft save changed the app: %q", b)
	}
	if code, _ := builderPost(t, base, "/cancel", nil); code != http.StatusOK {
		t.Errorf("cancel: %d", code)
	}
	if _, got := builderGet(t, base, "?tmp=true"); got != v1 {
		t.Errorf("draft after cancel: %q, want the app's file", got)
	}

	builderPost(t, base, "/save?tmp=true", map[string]string{"helper/sub.yaml": "name: sub\n"})
	if code, got := builderPost(t, base, "/save", map[string]string{"helper/root_agent.yaml": v2}); code != http.StatusOK || got != "true" {
		t.Fatalf("save: %d %s", code, got)
	}
	if b, _ := os.ReadFile(root); string(b) != v2 {
		t.Errorf("after save the app's file is %q", b)
	}
	if b, err := os.ReadFile(filepath.Join(dir, "helper", "sub.yaml")); err != nil || string(b) != "name: sub\n" {
		t.Errorf("the draft's other file was not saved: %q %v", b, err)
	}

	for name, content := range map[string]string{
		"../evil.yaml":            "name: x\n",
		"helper/run.py":           "print(1)\n",
		"helper/root_agent.yaml":  "name: helper\ntools:\n  - name: x\n    args: {command: rm}\n",
		"helper/not_yaml.yaml":    "a: [\n",
		"helper/../../evil2.yaml": "name: x\n",
	} {
		if code, _ := builderPost(t, base, "/save", map[string]string{name: content}); code != http.StatusBadRequest {
			t.Errorf("save %s: %d, want 400", name, code)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "evil.yaml")); err == nil {
		t.Error("a file was written outside the app")
	}
	if b, _ := os.ReadFile(root); string(b) != v2 {
		t.Errorf("a refused save changed the app: %q", b)
	}
}
