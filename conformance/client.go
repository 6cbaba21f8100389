package conformance

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"time"

	"google.golang.org/genai"

	"github.com/loomkit/loom/event"
)

// DefaultUserID is the user the cases run as, as in ADK's runner.
const DefaultUserID = "adk_conformance_test_user"

// Limits of what the client reads from a server.
const (
	maxSessionBytes = 64 << 20
	maxSSELine      = 16 << 20
)

// Client drives an ADK-compatible server (Loom's, ADK Python's, ...)
// through its HTTP API.
type Client struct {
	// BaseURL is the server's, such as "http://127.0.0.1:8000".
	BaseURL string
	// HTTP is the client used; nil means one with a 10-minute timeout.
	HTTP *http.Client
	// UserID is the user the sessions belong to; empty means
	// DefaultUserID.
	UserID string
}

func (c *Client) http() *http.Client {
	if c.HTTP != nil {
		return c.HTTP
	}
	return &http.Client{Timeout: 10 * time.Minute}
}

func (c *Client) user() string {
	if c.UserID != "" {
		return c.UserID
	}
	return DefaultUserID
}

func (c *Client) sessionURL(app, id string) string {
	u := strings.TrimRight(c.BaseURL, "/") + "/apps/" + url.PathEscape(app) + "/users/" + url.PathEscape(c.user()) + "/sessions"
	if id != "" {
		u += "/" + url.PathEscape(id)
	}
	return u
}

func (c *Client) do(ctx context.Context, method, u string, body any) ([]byte, error) {
	var r io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return nil, err
		}
		r = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, u, r)
	if err != nil {
		return nil, err
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := c.http().Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, maxSessionBytes+1))
	if err != nil {
		return nil, err
	}
	if len(b) > maxSessionBytes {
		return nil, fmt.Errorf("%s %s: response larger than %d bytes", method, u, maxSessionBytes)
	}
	if resp.StatusCode/100 != 2 {
		return nil, fmt.Errorf("%s %s: %s: %s", method, u, resp.Status, bytes.TrimSpace(b))
	}
	return b, nil
}

// CreateSession creates a session of app with an initial state and
// returns its id.
func (c *Client) CreateSession(ctx context.Context, app string, state map[string]any) (string, error) {
	body := map[string]any{}
	if state != nil {
		body["state"] = state
	}
	b, err := c.do(ctx, http.MethodPost, c.sessionURL(app, ""), body)
	if err != nil {
		return "", err
	}
	var s struct {
		ID string `json:"id"`
	}
	if err := json.Unmarshal(b, &s); err != nil || s.ID == "" {
		return "", fmt.Errorf("create session: unexpected answer %.200s", b)
	}
	return s.ID, nil
}

// GetSession returns a session as the server's JSON tree.
func (c *Client) GetSession(ctx context.Context, app, id string) (map[string]any, error) {
	b, err := c.do(ctx, http.MethodGet, c.sessionURL(app, id), nil)
	if err != nil {
		return nil, err
	}
	d := json.NewDecoder(bytes.NewReader(b))
	d.UseNumber()
	var m map[string]any
	if err := d.Decode(&m); err != nil {
		return nil, fmt.Errorf("get session: %w", err)
	}
	return m, nil
}

// DeleteSession deletes a session.
func (c *Client) DeleteSession(ctx context.Context, app, id string) error {
	_, err := c.do(ctx, http.MethodDelete, c.sessionURL(app, id), nil)
	return err
}

// RunSSE posts one message to /run_sse (streaming or not, as ADK's
// runner does) and calls each for every event the server sends. An error
// event ends the run with that error.
func (c *Client) RunSSE(ctx context.Context, app, sessionID string, msg *genai.Content, stateDelta map[string]any, streaming bool, each func(*event.Event)) error {
	body := map[string]any{
		"appName": app, "userId": c.user(), "sessionId": sessionID,
		"newMessage": msg, "streaming": streaming,
	}
	if stateDelta != nil {
		body["stateDelta"] = stateDelta
	}
	b, err := json.Marshal(body)
	if err != nil {
		return err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, strings.TrimRight(c.BaseURL, "/")+"/run_sse", bytes.NewReader(b))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "text/event-stream")
	resp, err := c.http().Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		msg, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
		var detail struct {
			Detail string `json:"detail"`
		}
		if json.Unmarshal(msg, &detail) == nil && detail.Detail != "" {
			return fmt.Errorf("run_sse: %s: %s", resp.Status, detail.Detail)
		}
		return fmt.Errorf("run_sse: %s: %s", resp.Status, bytes.TrimSpace(msg))
	}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 64<<10), maxSSELine)
	for sc.Scan() {
		data, ok := strings.CutPrefix(sc.Text(), "data:")
		if !ok {
			continue
		}
		data = strings.TrimSpace(data)
		if data == "" {
			continue
		}
		var probe struct {
			Error any `json:"error"`
		}
		if json.Unmarshal([]byte(data), &probe) == nil && probe.Error != nil {
			return fmt.Errorf("server: %v", probe.Error)
		}
		var ev event.Event
		if err := json.Unmarshal([]byte(data), &ev); err != nil {
			return fmt.Errorf("run_sse: event: %w", err)
		}
		each(&ev)
	}
	return sc.Err()
}

// Result is the outcome of one case.
type Result struct {
	// Case is the case run.
	Case *Case
	// Err says why the case failed; nil when it passed.
	Err error
}

// Passed reports whether the case passed.
func (r *Result) Passed() bool { return r.Err == nil }

// Run runs a case in replay mode against the client's server: it creates
// a session with the case's initial state, sends each user message with
// _adk_replay_config, and compares the session left with the recorded one.
// The session is deleted afterwards.
func (c *Client) Run(ctx context.Context, cs *Case, streaming string) Result {
	res := Result{Case: cs}
	want, err := LoadSession(cs.Dir, streaming)
	if err != nil {
		res.Err = fmt.Errorf("recorded session: %w", err)
		return res
	}
	id, err := c.send(ctx, cs, ReplayConfigKey, streaming)
	if id != "" {
		defer c.DeleteSession(context.WithoutCancel(ctx), cs.Spec.Agent, id)
	}
	if err != nil {
		res.Err = fmt.Errorf("replay: %w", err)
		return res
	}
	got, err := c.GetSession(ctx, cs.Spec.Agent, id)
	if err != nil {
		res.Err = err
		return res
	}
	if m := CompareAll(got, want); m != nil {
		res.Err = m
	}
	return res
}

// send creates the case's session and sends its messages with the
// protocol config under key; it returns the session id.
func (c *Client) send(ctx context.Context, cs *Case, key, streaming string) (string, error) {
	id, err := c.CreateSession(ctx, cs.Spec.Agent, cs.Spec.InitialState)
	if err != nil {
		return "", err
	}
	callIDs := map[string]string{}
	for i, um := range cs.Spec.UserMessages {
		msg, err := userContent(um, callIDs)
		if err != nil {
			return id, fmt.Errorf("user message %d: %w", i, err)
		}
		delta := event.CloneMap(um.StateDelta)
		if delta == nil {
			delta = map[string]any{}
		}
		delta[key] = map[string]any{"dir": cs.Dir, "user_message_index": i, "streaming_mode": streaming}
		err = c.RunSSE(ctx, cs.Spec.Agent, id, msg, delta, streaming == StreamingSSE, func(ev *event.Event) {
			if ev.Content == nil {
				return
			}
			for _, p := range ev.Content.Parts {
				if p != nil && p.FunctionCall != nil && p.FunctionCall.ID != "" {
					callIDs[p.FunctionCall.Name] = p.FunctionCall.ID
				}
			}
		})
		if err != nil {
			return id, fmt.Errorf("user message %d: %w", i, err)
		}
	}
	return id, nil
}

// userContent is the content a user message sends: its text, or its
// content with the ids of function responses set to the live ids of the
// calls of the same names.
func userContent(um UserMessage, callIDs map[string]string) (*genai.Content, error) {
	if um.Content == nil {
		return genai.NewContentFromText(um.Text, genai.RoleUser), nil
	}
	c := event.CloneContent(um.Content)
	if c.Role == "" {
		c.Role = genai.RoleUser
	}
	for _, p := range c.Parts {
		if p == nil || p.FunctionResponse == nil || p.FunctionResponse.Name == "" {
			continue
		}
		id, ok := callIDs[p.FunctionResponse.Name]
		if !ok {
			return nil, fmt.Errorf("function response for %s answers no earlier function call", p.FunctionResponse.Name)
		}
		p.FunctionResponse.ID = id
	}
	return c, nil
}

// Record runs a case against the client's server with
// _adk_recordings_config, so that a server running the recording plugin
// writes the case's recordings, and writes the session it left as the
// case's generated session (without the protocol's state keys).
// Existing generated files of the mode are replaced.
func (c *Client) Record(ctx context.Context, cs *Case, streaming string) error {
	for _, p := range []string{RecordingsPath(cs.Dir, streaming), SessionPath(cs.Dir, streaming)} {
		if err := os.Remove(p); err != nil && !errors.Is(err, os.ErrNotExist) {
			return err
		}
	}
	id, err := c.send(ctx, cs, RecordingConfigKey, streaming)
	if err != nil {
		return err
	}
	s, err := c.GetSession(ctx, cs.Spec.Agent, id)
	if err != nil {
		return err
	}
	return WriteSession(SessionPath(cs.Dir, streaming), s)
}

// WriteSession writes a session (the server's JSON tree) as a case's
// generated session file, without the protocol's _adk_* state keys.
func WriteSession(path string, s map[string]any) error {
	s, _ = Normalize(s).(map[string]any)
	if st, ok := s["state"].(map[string]any); ok {
		dropInternal(st)
	}
	evs, _ := s["events"].([]any)
	for _, e := range evs {
		em, _ := e.(map[string]any)
		a, _ := em["actions"].(map[string]any)
		if sd, ok := a["state_delta"].(map[string]any); ok {
			dropInternal(sd)
		}
	}
	return WriteYAML(path, s)
}

// WriteCase writes a case from a session (the server's JSON tree, or a
// stored session's): a spec.yaml whose user messages are the session's
// user events, in order (their text, or their content when it is more
// than text; their state deltas), and the session as generated-session.yaml.
// Recording the case against a model adds its recordings.
func WriteCase(dir string, s map[string]any) error {
	n, _ := Normalize(s).(map[string]any)
	app, _ := n["app_name"].(string)
	if app == "" {
		return errors.New("conformance: the session names no app")
	}
	spec := map[string]any{"description": "Recorded from session " + fmt.Sprint(n["id"]) + ".", "agent": app}
	var msgs []any
	evs, _ := n["events"].([]any)
	for _, e := range evs {
		em, _ := e.(map[string]any)
		if em["author"] != "user" {
			continue
		}
		m := map[string]any{}
		c, _ := em["content"].(map[string]any)
		parts, _ := c["parts"].([]any)
		if p, ok := onlyText(parts); ok {
			m["text"] = p
		} else if c != nil {
			c = Normalize(c).(map[string]any)
			for _, p := range c["parts"].([]any) {
				if fr, ok := p.(map[string]any)["function_response"].(map[string]any); ok {
					delete(fr, "id")
				}
			}
			m["content"] = c
		}
		a, _ := em["actions"].(map[string]any)
		if sd, ok := a["state_delta"].(map[string]any); ok {
			sd = event.CloneMap(sd)
			dropInternal(sd)
			if len(sd) > 0 {
				m["state_delta"] = sd
			}
		}
		if len(m) > 0 {
			msgs = append(msgs, m)
		}
	}
	spec["user_messages"] = msgs
	if err := WriteYAML(filepath.Join(dir, SpecFile), spec); err != nil {
		return err
	}
	return WriteSession(SessionPath(dir, StreamingNone), s)
}

func onlyText(parts []any) (string, bool) {
	if len(parts) != 1 {
		return "", false
	}
	p, _ := parts[0].(map[string]any)
	t, ok := p["text"].(string)
	return t, ok && len(p) == 1
}
