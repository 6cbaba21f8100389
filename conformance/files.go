package conformance

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"go.yaml.in/yaml/v3"
	"google.golang.org/genai"

	"github.com/loomkit/loom/event"
	"github.com/loomkit/loom/model"
)

// The files of a case directory.
const (
	SpecFile       = "spec.yaml"
	recordingsFile = "generated-recordings"
	sessionFile    = "generated-session"
)

// Streaming modes of a run, as ADK names them.
const (
	StreamingNone = "none"
	StreamingSSE  = "sse"
)

// State keys of the protocol. A run request's state delta carries one of
// them; the comparisons ignore every key starting with "_adk_".
const (
	ReplayConfigKey    = "_adk_replay_config"
	RecordingConfigKey = "_adk_recordings_config"
)

// maxFileBytes bounds the case files read.
const maxFileBytes = 64 << 20

// RecordingsPath returns the recordings file of a case for a streaming mode.
func RecordingsPath(dir, streaming string) string {
	return filepath.Join(dir, generatedName(recordingsFile, streaming))
}

// SessionPath returns the session file of a case for a streaming mode.
func SessionPath(dir, streaming string) string {
	return filepath.Join(dir, generatedName(sessionFile, streaming))
}

func generatedName(base, streaming string) string {
	if streaming == StreamingSSE {
		return base + "-sse.yaml"
	}
	return base + ".yaml"
}

// Spec is a case's spec.yaml.
type Spec struct {
	// Description says what the case tests.
	Description string `json:"description,omitempty"`
	// Agent is the application (a folder of the suite's agents) to run.
	Agent string `json:"agent"`
	// InitialState is the state the session is created with.
	InitialState map[string]any `json:"initial_state,omitempty"`
	// UserMessages are sent in order, one invocation each.
	UserMessages []UserMessage `json:"user_messages"`
}

// UserMessage is one message of a case: text, or a full content (a
// function response names its call by function name; the runner fills in
// the live call id), with an optional state delta.
type UserMessage struct {
	Text       string          `json:"text,omitempty"`
	Content    *genai.Content  `json:"-"`
	RawContent json.RawMessage `json:"content,omitempty"`
	StateDelta map[string]any  `json:"state_delta,omitempty"`
}

// Recordings is a case's generated-recordings.yaml.
type Recordings struct {
	Recordings []Recording `json:"recordings"`
}

// Recording is one model call or one tool call of one agent during one
// user message.
type Recording struct {
	UserMessageIndex int            `json:"user_message_index"`
	AgentName        string         `json:"agent_name"`
	LLM              *LLMRecording  `json:"llm_recording,omitempty"`
	Tool             *ToolRecording `json:"tool_recording,omitempty"`
}

// LLMRecording is a model request and the responses it got. Request is
// kept as the file's tree, in the normalized form of [Normalize].
// Responses holds the file's llm_responses, or its older singular
// llm_response.
type LLMRecording struct {
	Request   map[string]any   `json:"llm_request"`
	Responses []map[string]any `json:"llm_responses,omitempty"`
	Response  map[string]any   `json:"llm_response,omitempty"`
}

// ToolRecording is a tool call and its result.
type ToolRecording struct {
	Call     *genai.FunctionCall     `json:"tool_call"`
	Response *genai.FunctionResponse `json:"tool_response"`
}

// LoadSpec reads the spec.yaml of a case directory.
func LoadSpec(dir string) (*Spec, error) {
	var s Spec
	if err := readYAML(filepath.Join(dir, SpecFile), &s); err != nil {
		return nil, err
	}
	if s.Agent == "" {
		return nil, fmt.Errorf("conformance: %s: no agent", filepath.Join(dir, SpecFile))
	}
	for i := range s.UserMessages {
		m := &s.UserMessages[i]
		if len(m.RawContent) > 0 {
			c, err := decodeContent(m.RawContent)
			if err != nil {
				return nil, fmt.Errorf("conformance: %s: user message %d: %w", filepath.Join(dir, SpecFile), i, err)
			}
			m.Content = c
		}
		if m.Content == nil && m.Text == "" && m.StateDelta == nil {
			return nil, fmt.Errorf("conformance: %s: user message %d has neither text nor content", filepath.Join(dir, SpecFile), i)
		}
	}
	return &s, nil
}

// LoadRecordings reads the recordings of a case for a streaming mode.
func LoadRecordings(dir, streaming string) (*Recordings, error) {
	var r Recordings
	if err := readYAML(RecordingsPath(dir, streaming), &r); err != nil {
		return nil, err
	}
	for i := range r.Recordings {
		l := r.Recordings[i].LLM
		if l == nil {
			continue
		}
		if l.Response != nil {
			l.Responses = append(l.Responses, l.Response)
			l.Response = nil
		}
		l.Request, _ = Normalize(l.Request).(map[string]any)
	}
	return &r, nil
}

// RecordedSession is a session as a case file holds it: a tree in the
// normalized form of [Normalize].
type RecordedSession map[string]any

// LoadSession reads the recorded session of a case for a streaming mode.
func LoadSession(dir, streaming string) (RecordedSession, error) {
	var m map[string]any
	if err := readYAML(SessionPath(dir, streaming), &m); err != nil {
		return nil, err
	}
	n, _ := Normalize(m).(map[string]any)
	return n, nil
}

// ModelResponses returns the recorded responses as model responses.
func (l *LLMRecording) ModelResponses() ([]*model.Response, error) {
	out := make([]*model.Response, 0, len(l.Responses))
	for _, r := range l.Responses {
		b, err := json.Marshal(r)
		if err != nil {
			return nil, err
		}
		var ev event.Event
		if err := json.Unmarshal(b, &ev); err != nil {
			return nil, fmt.Errorf("recorded response: %w", err)
		}
		resp := ev.Response
		out = append(out, &resp)
	}
	return out, nil
}

// readYAML decodes a YAML file into v through JSON, so that v's JSON tags
// (and genai's) apply.
func readYAML(path string, v any) error {
	b, err := readBounded(path)
	if err != nil {
		return err
	}
	var tree any
	if err := yaml.Unmarshal(b, &tree); err != nil {
		return fmt.Errorf("conformance: %s: %w", path, err)
	}
	j, err := json.Marshal(jsonable(tree))
	if err != nil {
		return fmt.Errorf("conformance: %s: %w", path, err)
	}
	if err := json.Unmarshal(j, v); err != nil {
		return fmt.Errorf("conformance: %s: %w", path, err)
	}
	return nil
}

func readBounded(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("conformance: %w", err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("conformance: %w", err)
	}
	if !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("conformance: %s: not a regular file", path)
	}
	if fi.Size() > maxFileBytes {
		return nil, fmt.Errorf("conformance: %s: larger than %d bytes", path, maxFileBytes)
	}
	return os.ReadFile(path)
}

// jsonable turns a YAML tree into one encoding/json can encode: maps with
// non-string keys get their keys formatted.
func jsonable(v any) any {
	switch x := v.(type) {
	case map[string]any:
		for k, e := range x {
			x[k] = jsonable(e)
		}
		return x
	case map[any]any:
		m := make(map[string]any, len(x))
		for k, e := range x {
			m[fmt.Sprint(k)] = jsonable(e)
		}
		return m
	case []any:
		for i, e := range x {
			x[i] = jsonable(e)
		}
		return x
	}
	return v
}

// decodeContent decodes a content written with snake_case or camelCase
// keys, as genai's JSON does not read snake_case.
func decodeContent(raw json.RawMessage) (*genai.Content, error) {
	var tree any
	if err := json.Unmarshal(raw, &tree); err != nil {
		return nil, err
	}
	b, err := json.Marshal(map[string]any{"author": "user", "content": tree})
	if err != nil {
		return nil, err
	}
	var ev event.Event
	if err := json.Unmarshal(b, &ev); err != nil {
		return nil, err
	}
	return ev.Content, nil
}

// Case is a case directory found under a path.
type Case struct {
	// Category and Name are the names of the case's parent directory and
	// its own ("tool", "function_001").
	Category, Name string
	// Dir is the case's directory.
	Dir string
	// Spec is its spec.yaml.
	Spec *Spec
}

// ID is category/name.
func (c *Case) ID() string { return c.Category + "/" + c.Name }

// Discover finds every case (a directory holding spec.yaml) under paths,
// sorted by category and name. A spec that does not load is an error.
func Discover(paths []string) ([]*Case, error) {
	var cases []*Case
	seen := map[string]bool{}
	for _, p := range paths {
		fi, err := os.Stat(p)
		if err != nil {
			return nil, fmt.Errorf("conformance: %w", err)
		}
		if !fi.IsDir() {
			return nil, fmt.Errorf("conformance: %s: not a directory", p)
		}
		err = filepath.WalkDir(p, func(path string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if d.IsDir() || d.Name() != SpecFile {
				return nil
			}
			dir, _ := filepath.Abs(filepath.Dir(path))
			if seen[dir] {
				return nil
			}
			seen[dir] = true
			spec, err := LoadSpec(dir)
			if err != nil {
				return err
			}
			cases = append(cases, &Case{Category: filepath.Base(filepath.Dir(dir)), Name: filepath.Base(dir), Dir: dir, Spec: spec})
			return nil
		})
		if err != nil {
			return nil, err
		}
	}
	slices.SortFunc(cases, func(a, b *Case) int { return strings.Compare(a.ID(), b.ID()) })
	return cases, nil
}

// WriteYAML writes v (anything encoding/json encodes) as YAML with
// snake_case keys, in ADK's file style, to path.
func WriteYAML(path string, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	d := json.NewDecoder(bytes.NewReader(b))
	d.UseNumber()
	var tree any
	if err := d.Decode(&tree); err != nil {
		return err
	}
	var buf bytes.Buffer
	enc := yaml.NewEncoder(&buf)
	enc.SetIndent(2)
	if err := enc.Encode(toYAMLNode(Normalize(tree))); err != nil {
		return err
	}
	if err := enc.Close(); err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	return os.WriteFile(path, buf.Bytes(), 0o644)
}

// toYAMLNode prepares a normalized tree for the YAML encoder: whole
// numbers are written without a fraction.
func toYAMLNode(v any) any {
	switch x := v.(type) {
	case map[string]any:
		for k, e := range x {
			x[k] = toYAMLNode(e)
		}
	case []any:
		for i, e := range x {
			x[i] = toYAMLNode(e)
		}
	case float64:
		if x == float64(int64(x)) && x < 1<<53 && x > -(1<<53) {
			return int64(x)
		}
	}
	return v
}
