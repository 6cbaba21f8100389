package server

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"path"
	"strings"

	"go.yaml.in/yaml/v3"
)

// AppFiles reads and writes the YAML files of applications defined by
// files (ADK's Agent Config format), for the agent builder of ADK's web UI:
//
//	GET  /dev/apps/{app}/builder?file_path=F&tmp=B  → the file, as text
//	POST /dev/apps/{app}/builder/save?tmp=B         → true or false
//	POST /dev/apps/{app}/builder/cancel             → true or false
//
// The server checks every path before it reaches the implementation: it is
// relative, slash-separated, names a .yaml or .yml file and has no ".."
// element. Implementations must be safe for concurrent use.
type AppFiles interface {
	// ReadAppFile returns the file at path in the directory of app: in the
	// app's draft (an edit not yet saved) when draft is set, the draft
	// starting as a copy of the app. ok is false when the app is not
	// defined by files or has no such file.
	ReadAppFile(app, path string, draft bool) (content []byte, ok bool, err error)
	// SaveAppFiles writes files (path → content) into the app's draft when
	// draft is set; otherwise into the app itself, with the draft's other
	// files, and then drops the draft.
	SaveAppFiles(app string, files map[string][]byte, draft bool) error
	// CancelDraft drops the app's draft.
	CancelDraft(app string) error
}

// builderRootFile is the file the builder reads when none is named.
const builderRootFile = "root_agent.yaml"

// builderPath checks a path of an app's YAML file given by a client.
func builderPath(p string) (string, error) {
	p = strings.TrimLeft(strings.ReplaceAll(p, `\`, "/"), "/")
	if p == "" {
		return "", errors.New("the file path is empty")
	}
	for _, elem := range strings.Split(p, "/") {
		if elem == ".." {
			return "", fmt.Errorf("the file path %q leaves the app's directory", p)
		}
	}
	switch strings.ToLower(path.Ext(p)) {
	case ".yaml", ".yml":
	default:
		return "", fmt.Errorf("the file %q is not a YAML file (allowed: .yaml, .yml)", p)
	}
	return path.Clean(p), nil
}

// builderRead serves GET /dev/apps/{app}/builder: the app's YAML file
// (root_agent.yaml unless file_path names another), or an empty text when
// there is none or the path is not one the builder may read, as ADK
// answers.
func (s *Server) builderRead(w http.ResponseWriter, r *http.Request) error {
	app := r.PathValue("app")
	if _, err := s.app(app); err != nil {
		return err
	}
	var content []byte
	file := builderRootFile
	if fp := r.URL.Query().Get("file_path"); fp != "" {
		file = fp
	}
	if p, err := builderPath(file); err == nil && s.cfg.AppFiles != nil {
		got, ok, err := s.cfg.AppFiles.ReadAppFile(app, p, queryBool(r, "tmp"))
		if err != nil {
			return err
		}
		if ok {
			content = got
		}
	}
	w.Header().Set("Cache-Control", "no-store")
	if content == nil {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	} else {
		w.Header().Set("Content-Type", "application/x-yaml")
	}
	_, err := w.Write(content)
	return err
}

// builderSave serves POST /dev/apps/{app}/builder/save: a multipart form
// of "files" (each named "APP/PATH" or "PATH"), written to the app's draft
// (tmp=true) or to the app. Writing changes files on the server's disk:
// it is allowed only in the development setting (see devSetting), and a
// file holding an "args" key anywhere, which can make the app run code, is
// refused as ADK refuses it.
func (s *Server) builderSave(w http.ResponseWriter, r *http.Request) error {
	app, err := s.builderWriter(r)
	if err != nil {
		return err
	}
	files, err := builderUploads(r, app)
	if err != nil {
		return err
	}
	if err := s.cfg.AppFiles.SaveAppFiles(app, files, queryBool(r, "tmp")); err != nil {
		s.log.Error("server: builder save", "app", app, "err", err)
		return writeJSON(w, http.StatusOK, false)
	}
	return writeJSON(w, http.StatusOK, true)
}

// builderUploads reads the "files" of a builder save. The paths are read
// from the parts' headers as sent (mime/multipart keeps only their base
// names), so that files in sub-directories keep their place and a path
// leaving the app is refused rather than flattened. The body is bounded
// by Config.MaxRequestBytes (limitBody).
func builderUploads(r *http.Request, app string) (map[string][]byte, error) {
	mr, err := r.MultipartReader()
	if err != nil {
		return nil, badRequest("read the uploaded files: %v", err)
	}
	files := map[string][]byte{}
	for {
		part, err := mr.NextPart()
		if errors.Is(err, io.EOF) {
			return files, nil
		}
		if err != nil {
			return nil, uploadError(err)
		}
		_, params, err := mime.ParseMediaType(part.Header.Get("Content-Disposition"))
		if err != nil || part.FormName() != "files" {
			part.Close()
			continue
		}
		name := strings.TrimPrefix(strings.ReplaceAll(params["filename"], `\`, "/"), "/")
		name = strings.TrimPrefix(name, app+"/")
		p, err := builderPath(name)
		if err != nil {
			return nil, badRequest("%v", err)
		}
		content, err := io.ReadAll(part)
		part.Close()
		if err != nil {
			return nil, uploadError(err)
		}
		if err := checkBuilderYAML(content, app+"/"+p); err != nil {
			return nil, badRequest("%v", err)
		}
		files[p] = content
	}
}

// uploadError is the error of a failed read of the uploaded files: a body
// over the size limit keeps its own status (413).
func uploadError(err error) error {
	var tooLarge *http.MaxBytesError
	if errors.As(err, &tooLarge) {
		return err
	}
	return badRequest("read the uploaded files: %v", err)
}

// builderCancel serves POST /dev/apps/{app}/builder/cancel: the app's
// draft is dropped.
func (s *Server) builderCancel(w http.ResponseWriter, r *http.Request) error {
	app, err := s.builderWriter(r)
	if err != nil {
		return err
	}
	if err := s.cfg.AppFiles.CancelDraft(app); err != nil {
		s.log.Error("server: builder cancel", "app", app, "err", err)
		return writeJSON(w, http.StatusOK, false)
	}
	return writeJSON(w, http.StatusOK, true)
}

// builderWriter checks that r may change the files of its {app}.
func (s *Server) builderWriter(r *http.Request) (string, error) {
	app := r.PathValue("app")
	if _, err := s.app(app); err != nil {
		return "", err
	}
	if s.cfg.AppFiles == nil {
		return "", &detailError{detail: "this server has no app files to edit", err: errNotFound}
	}
	if !s.devSetting(r) {
		return "", &detailError{detail: "the agent builder writes files only on a development server (no authentication, loopback hosts and clients)", err: errForbidden}
	}
	return app, nil
}

// checkBuilderYAML refuses a file that is not YAML or holds an "args" key.
func checkBuilderYAML(content []byte, name string) error {
	dec := yaml.NewDecoder(bytes.NewReader(content))
	for {
		var doc any
		err := dec.Decode(&doc)
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("invalid YAML in %s: %v", name, err)
		}
		if hasKey(doc, "args") {
			return fmt.Errorf("the key %q in %s is not allowed in the agent builder's files: it can make the app run code", "args", name)
		}
	}
}

// hasKey reports whether a decoded YAML value holds key in a mapping at any
// depth.
func hasKey(v any, key string) bool {
	switch v := v.(type) {
	case map[string]any:
		for k, e := range v {
			if k == key || hasKey(e, key) {
				return true
			}
		}
	case map[any]any:
		for k, e := range v {
			if k == key || hasKey(e, key) {
				return true
			}
		}
	case []any:
		for _, e := range v {
			if hasKey(e, key) {
				return true
			}
		}
	}
	return false
}

// queryBool reads a boolean query parameter ("true", "1"; anything else is
// false).
func queryBool(r *http.Request, name string) bool {
	switch strings.ToLower(r.URL.Query().Get(name)) {
	case "true", "1":
		return true
	}
	return false
}
