package llmagent

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"regexp"
	"runtime"
	"slices"
	"strings"
	"sync"
	"unicode"
	"weak"

	"google.golang.org/genai"

	"github.com/loomkit/loom/agent"
	"github.com/loomkit/loom/artifact"
	"github.com/loomkit/loom/event"
	"github.com/loomkit/loom/model"
	"github.com/loomkit/loom/session"
	"github.com/loomkit/loom/tool"
)

// resolveTools returns the tools available in this step by name: the
// configured tools, the toolsets' tools and, when there are transfer
// targets, the transfer tool; and their names in the order requests list
// them (as ADK does: set_model_response, the transfer tool, the configured
// tools as given, then the toolsets' tools).
func (a *Agent) resolveTools(ctx context.Context, inv *agent.Invocation) (map[string]tool.Tool, []string, error) {
	targets := a.transferTargets(inv)
	if len(a.cfg.Toolsets) == 0 && len(targets) == 0 {
		return a.tools, a.order, nil
	}
	tools := maps.Clone(a.tools)
	order := make([]string, 0, len(a.order)+1)
	rest := a.order
	if len(rest) > 0 && rest[0] == SetModelResponseName {
		order, rest = append(order, SetModelResponseName), rest[1:]
	}
	if len(targets) > 0 {
		tools[transferToolName] = transferTool{targets: targets, reason: a.cfg.DeclareTransferReason}
		order = append(order, transferToolName)
	}
	order = append(order, rest...)
	for _, ts := range a.cfg.Toolsets {
		list, err := ts.Tools(ctx)
		if err != nil {
			return nil, nil, fmt.Errorf("llmagent: %s: toolset %s: %w", a.Name(), ts.Name(), err)
		}
		for _, t := range list {
			if _, dup := tools[t.Name()]; !dup {
				tools[t.Name()] = t
				order = append(order, t.Name())
			}
		}
	}
	return tools, order, nil
}

// buildRequest assembles the model request of one step; files is the
// run's cache of the artifacts shown to the model.
func (a *Agent) buildRequest(ctx context.Context, inv *agent.Invocation, cc *agent.CallbackContext, tools map[string]tool.Tool, order []string, files *fileCache) (*model.Request, error) {
	// The request's parts are owned by it (callbacks may change them) and
	// allocated together.
	m := &requestMemory{}
	cfg := &m.cfg
	if a.cfg.GenerateConfig != nil {
		*cfg = *a.cfg.GenerateConfig
		cfg.Tools = slices.Clone(cfg.Tools)
		if cfg.SystemInstruction != nil {
			cfg.SystemInstruction = event.CloneContent(cfg.SystemInstruction)
		}
	}
	instr, err := a.instruction(ctx, inv, cc)
	if err != nil {
		return nil, err
	}
	global, err := globalInstruction(ctx, inv)
	if err != nil {
		return nil, err
	}
	var dynamic string // the instruction sent as user content, after a static one
	if a.cfg.StaticInstruction != nil {
		dynamic, instr = instr, ""
	}
	// ADK's order: the global instruction, the agent's, its identity; the
	// runtime's own instructions follow, the transfer rules last, then what
	// the tools add.
	if global == "" && a.instructed != "" && instr == a.cfg.Instruction {
		instr = a.instructed // the same string, made once
	} else {
		instr = joinInstructions(joinInstructions(global, instr), a.identity)
	}
	a.systemInstruction(m, instr)
	a.declareTools(m, tools, order)
	var finalTool bool
	if a.cfg.OutputSchema != nil {
		_, finalTool = tools[SetModelResponseName].(*setModelResponseTool)
		if !finalTool {
			cfg.ResponseMIMEType = "application/json"
			cfg.ResponseJsonSchema = a.cfg.OutputSchema
		}
	}
	contents, history, plain := a.requestContents(inv, dynamic)
	m.req = model.Request{Model: a.cfg.Model.Name(), Contents: contents, Config: cfg}
	if finalTool {
		appendInstruction(&m.req, setModelResponseInstruction)
	}
	if a.localExecutor() != nil {
		appendInstruction(&m.req, codeInstruction)
	}
	if tt, ok := tools[transferToolName].(transferTool); ok { // resolveTools found targets
		appendInstruction(&m.req, transferInstruction(a, tt.targets, inv))
	}
	if a.builtInExecutor() {
		cfg.Tools = append(slices.Clip(cfg.Tools), &genai.Tool{CodeExecution: &genai.ToolCodeExecution{}})
	}
	for _, name := range a.processorNames(tools, order) {
		if err := tools[name].(tool.RequestProcessor).ProcessRequest(ctx, cc, &m.req); err != nil {
			return nil, fmt.Errorf("llmagent: %s: tool %s: %w", a.Name(), name, err)
		}
	}
	// The history's contents are known to hold no artifact reference when
	// none of its events does: only what was put before or after them
	// needs a look, so a long session costs nothing here.
	skip := 0
	if plain && len(history) > 0 && len(m.req.Contents) >= len(history) && &m.req.Contents[0] == &history[0] {
		skip = len(history)
	}
	if err := a.resolveArtifacts(ctx, inv, &m.req, skip, files); err != nil {
		return nil, err
	}
	if a.cfg.Planner != nil {
		if err := a.cfg.Planner.ProcessRequest(ctx, cc, &m.req); err != nil {
			return nil, fmt.Errorf("llmagent: %s: planner: %w", a.Name(), err)
		}
	}
	return &m.req, nil
}

// systemInstruction puts the static instruction, if any, and instr into
// the request's system instruction.
func (a *Agent) systemInstruction(m *requestMemory, instr string) {
	cfg := &m.cfg
	if static := a.cfg.StaticInstruction; static != nil {
		si := event.CloneContent(static) // the request owns its parts
		si.Role = genai.RoleUser
		if cfg.SystemInstruction != nil {
			si.Parts = append(slices.Clip(si.Parts), cfg.SystemInstruction.Parts...)
		}
		cfg.SystemInstruction = si
	}
	if instr != "" {
		if cfg.SystemInstruction == nil {
			m.system.Role = genai.RoleUser
			cfg.SystemInstruction = &m.system
		}
		m.instr.Text = instr
		if len(cfg.SystemInstruction.Parts) == 0 {
			m.instrParts[0] = &m.instr
			cfg.SystemInstruction.Parts = m.instrParts[:]
		} else {
			cfg.SystemInstruction.Parts = append(cfg.SystemInstruction.Parts, &m.instr)
		}
	}
}

// declareTools adds the declarations of the tools to the request's.
func (a *Agent) declareTools(m *requestMemory, tools map[string]tool.Tool, order []string) {
	cfg := &m.cfg
	decls := a.decls // the static tools' declarations, computed once
	if len(tools) != len(a.tools) {
		decls = declarations(tools, order)
	}
	if len(decls) > 0 {
		m.tool.FunctionDeclarations = decls
		if len(cfg.Tools) == 0 {
			m.tools[0] = &m.tool
			cfg.Tools = m.tools[:]
		} else {
			cfg.Tools = append(cfg.Tools, &m.tool)
		}
	}
}

// requestContents returns the request's contents: the history as the
// model is shown it, with the dynamic instruction, if any, before the user's
// turn. history is the history as a.contents returned it; plain reports
// that none of its events holds an artifact reference.
func (a *Agent) requestContents(inv *agent.Invocation, dynamic string) (contents, history []*genai.Content, plain bool) {
	contents, plain = a.contents(inv)
	history = contents
	if a.localExecutor() != nil {
		contents = codeAsText(contents)
	}
	if a.cfg.Planner != nil && !a.cfg.KeepThoughts {
		contents = withoutEarlierThoughts(contents)
	}
	if dynamic != "" {
		contents = insertBeforeUserTurn(contents, genai.NewContentFromText(dynamic, genai.RoleUser))
	}
	return contents, history, plain
}

// processorNames returns the names of the tools that process requests,
// in order: those of the static tools are computed once.
func (a *Agent) processorNames(tools map[string]tool.Tool, order []string) []string {
	if len(tools) == len(a.tools) {
		return a.processors
	}
	return requestProcessors(tools, order)
}

func requestProcessors(tools map[string]tool.Tool, order []string) []string {
	var names []string
	for _, name := range order {
		if _, ok := tools[name].(tool.RequestProcessor); ok {
			names = append(names, name)
		}
	}
	return names
}

// insertBeforeUserTurn returns contents with c placed before the latest
// user turn (the run of user contents with text that ends with the latest
// one), in a new slice: not between a function call and its response, which
// are user contents too. Without a user turn, c goes last.
func insertBeforeUserTurn(contents []*genai.Content, c *genai.Content) []*genai.Content {
	isTurn := func(x *genai.Content) bool { return x != nil && x.Role == genai.RoleUser && hasUserText(x) }
	at := len(contents)
	for i := len(contents) - 1; i >= 0; i-- {
		if isTurn(contents[i]) {
			at = i
			break
		}
	}
	for at > 0 && at < len(contents) && isTurn(contents[at-1]) {
		at--
	}
	out := make([]*genai.Content, 0, len(contents)+1)
	out = append(out, contents[:at]...)
	out = append(out, c)
	return append(out, contents[at:]...)
}

// globalInstruction returns the templated global instruction of the root
// of the invocation's agent tree, if the root is an LLM agent with one.
func globalInstruction(ctx context.Context, inv *agent.Invocation) (string, error) {
	tree := inv.Tree()
	if tree == nil {
		return "", nil
	}
	root, ok := tree.Root().(*Agent)
	if !ok || root.cfg.GlobalInstruction == "" {
		return "", nil
	}
	text := root.cfg.GlobalInstruction
	if !strings.Contains(text, "{") {
		return text, nil
	}
	s, err := InjectState(ctx, text, inv)
	if err != nil {
		return "", fmt.Errorf("llmagent: %s: global instruction: %w", root.Name(), err)
	}
	return s, nil
}

// appendInstruction adds text to the end of a request's system
// instruction, which the request owns.
func appendInstruction(req *model.Request, text string) { req.AppendInstructions(text) }

// requestMemory holds a request and the parts buildRequest adds to it, so
// that they take one allocation. Slices of one element have capacity one:
// appending to them copies.
type requestMemory struct {
	req        model.Request
	cfg        genai.GenerateContentConfig
	system     genai.Content
	instr      genai.Part
	instrParts [1]*genai.Part
	tool       genai.Tool
	tools      [1]*genai.Tool
}

// declarations returns the function declarations of tools, in order.
// The slice is shared by requests; models must not modify it.
func declarations(tools map[string]tool.Tool, order []string) []*genai.FunctionDeclaration {
	var decls []*genai.FunctionDeclaration
	for _, name := range order {
		if f, ok := tools[name].(tool.Function); ok {
			if d := f.Declaration(); d != nil {
				decls = append(decls, d)
			}
		}
	}
	return slices.Clip(decls)
}

func sortStrings(s []string) { slices.Sort(s) }

func joinInstructions(a, b string) string {
	switch {
	case a == "":
		return b
	case b == "":
		return a
	}
	return a + "\n\n" + b
}

// contents returns the model history for this agent and branch, and
// whether it is known to hold no artifact reference (see resolveArtifacts).
func (a *Agent) contents(inv *agent.Invocation) ([]*genai.Content, bool) {
	sess := inv.Session()
	opts := event.HistoryOptions{Agent: a.Name(), Branch: inv.Branch(), Fence: a.cfg.FenceRelayedText}
	if a.cfg.IncludeContents == IncludeNone {
		return currentTurn(sess, opts), false
	}
	return a.history(sess, opts).update(sess, opts)
}

// currentTurn returns the contents from the latest user message on.
func currentTurn(sess *session.Session, opts event.HistoryOptions) []*genai.Content {
	n := sess.Len()
	start := 0
	for i := n - 1; i >= 0; i-- {
		e := sess.At(i)
		if e.Author == event.AuthorUser && len(e.FunctionResponses()) == 0 {
			start = i
			break
		}
	}
	return event.History(sess.EventsFrom(start), opts)
}

// history is the incrementally built model history of one agent on one
// branch of one live session.
type history struct {
	mu    sync.Mutex
	n     int          // events consumed
	first *event.Event // the session's first event when consumption began
	b     *event.HistoryBuilder
	refs  bool  // some event consumed has an artifact reference
	size  int64 // the estimated memory of the contents, charged to the session
}

type historyKey struct {
	sess   weak.Pointer[session.Session]
	branch string
}

// history returns the history cache entry of a live session. Entries are
// removed when the session copy is garbage collected.
func (a *Agent) history(sess *session.Session, opts event.HistoryOptions) *history {
	key := historyKey{sess: weak.Make(sess), branch: opts.Branch}
	if h, ok := a.histories.Load(key); ok {
		return h.(*history)
	}
	h, loaded := a.histories.LoadOrStore(key, &history{})
	if !loaded {
		runtime.AddCleanup(sess, func(k historyKey) { a.histories.Delete(k) }, key)
	}
	return h.(*history)
}

// update brings the history up to date with the session and returns it,
// with whether it is known to hold no artifact reference: none of the
// events it was built from has one (its contents come from theirs). The
// returned slice has no spare capacity, so appending to it copies.
func (h *history) update(sess *session.Session, opts event.HistoryOptions) ([]*genai.Content, bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	n := sess.Len()
	if h.b == nil || n < h.n || (h.n > 0 && sess.At(0) != h.first) {
		// New, or the session copy was reloaded, which dropped its charges.
		h.n, h.b, h.refs, h.size = 0, event.NewHistoryBuilder(opts), false, 0
	}
	if h.n == 0 && n > 0 {
		h.first = sess.At(0)
	}
	// The new events are read in place (At), once each, not copied out:
	// this runs on every model call.
	had := h.b.Len()
	rebuild := false
	for i := h.n; i < n; i++ {
		e := sess.At(i)
		if e == nil {
			break
		}
		if e.Actions.Compaction != nil || e.Actions.RewindBeforeInvocationID != "" {
			rebuild = true
			break
		}
		if e.Content != nil && hasArtifactRef(e.Content) {
			h.refs = true
		}
		h.b.Add(e)
	}
	if rebuild {
		// A compaction or a rewind changes what came before: start over.
		h.b, had = event.NewHistoryBuilder(opts), 0
		sess.Charge(-h.size)
		h.size = 0
		for _, e := range event.ModelView(sess.Events()) {
			if e.Content != nil && hasArtifactRef(e.Content) {
				h.refs = true
			}
			h.b.Add(e)
		}
	}
	h.n = n
	contents := h.b.Contents()
	// The session's cache, bounded in bytes, counts the history with it.
	var added int64
	for _, c := range h.b.Since(had) {
		added += session.ContentSize(c) + 8
	}
	if added != 0 {
		sess.Charge(added)
		h.size += added
	}
	return contents, !h.refs
}

// instruction returns the agent's instruction for this step.
func (a *Agent) instruction(ctx context.Context, inv *agent.Invocation, cc *agent.CallbackContext) (string, error) {
	if a.cfg.InstructionProvider != nil {
		s, err := a.cfg.InstructionProvider(ctx, cc)
		if err != nil {
			return "", fmt.Errorf("llmagent: %s: instruction provider: %w", a.Name(), err)
		}
		return s, nil
	}
	if !strings.Contains(a.cfg.Instruction, "{") {
		return a.cfg.Instruction, nil
	}
	s, err := InjectState(ctx, a.cfg.Instruction, inv)
	if err != nil {
		return "", fmt.Errorf("llmagent: %s: instruction: %w", a.Name(), err)
	}
	return s, nil
}

// placeholder is ADK's pattern: a run of opening braces, anything without
// braces, a run of closing braces. Every run counts as one placeholder, so
// {{name}} is replaced like {name}, as ADK replaces it.
var placeholder = regexp.MustCompile(`\{+[^{}]*\}+`)

// InjectState replaces {placeholders} in a template with session state and
// artifact text, by ADK's rules. A placeholder is any run of braces around
// text without braces ({name}, {{name}}); its text, trimmed of spaces, is
// the reference. {key} is the value of state key, also in a scope
// ({app:key}, {user:key}, {temp:key}); {key?} is empty when the key is
// not set; {artifact.name} is the text of the named artifact. A key that
// is not an identifier (a Unicode letter or underscore, then letters,
// digits or underscores), alone or after one of the three prefixes, is
// left as written with its braces, as is the JSON in {{"type": "llm"}}.
// A value is written as Python's str() writes it (strings as they are,
// true as True, maps as {'k': 1}). A missing required key or artifact is
// an error.
func InjectState(ctx context.Context, template string, inv *agent.Invocation) (string, error) {
	var firstErr error
	out := placeholder.ReplaceAllStringFunc(template, func(m string) string {
		if firstErr != nil {
			return m
		}
		key := strings.TrimSpace(strings.TrimRight(strings.TrimLeft(m, "{"), "}"))
		key, optional := strings.CutSuffix(key, "?")
		if name, ok := strings.CutPrefix(key, "artifact."); ok {
			text, err := artifactText(ctx, inv, name)
			switch {
			case err == nil:
				return text
			case optional && errors.Is(err, artifact.ErrNotFound):
				return ""
			}
			firstErr = err
			return m
		}
		if !validStateKey(key) {
			return m
		}
		v, ok := inv.Session().Get(key)
		if !ok {
			if optional {
				return ""
			}
			firstErr = fmt.Errorf("state key %q is not set (use {%s?} if it is optional)", key, key)
			return m
		}
		return formatValue(v)
	})
	if firstErr != nil {
		return "", firstErr
	}
	return out, nil
}

// validStateKey reports whether ADK takes key for a state key: an
// identifier, or one after the app:, user: or temp: prefix.
func validStateKey(key string) bool {
	prefix, name, scoped := strings.Cut(key, ":")
	if !scoped {
		return isIdentifier(key)
	}
	switch prefix + ":" {
	case session.PrefixApp, session.PrefixUser, session.PrefixTemp:
		return isIdentifier(name)
	}
	return false
}

// isIdentifier reports whether s is an identifier as Python's
// str.isidentifier sees one: a letter or underscore, then letters, digits,
// combining marks or connector punctuation.
func isIdentifier(s string) bool {
	if s == "" {
		return false
	}
	for i, r := range s {
		switch {
		case r == '_' || unicode.IsLetter(r) || unicode.Is(unicode.Nl, r):
		case i > 0 && (unicode.IsDigit(r) || unicode.In(r, unicode.Mn, unicode.Mc, unicode.Pc)):
		default:
			return false
		}
	}
	return true
}

// formatValue writes a state value as Python's str() does, which is what
// ADK puts in the instruction.
func formatValue(v any) string {
	switch x := v.(type) {
	case string:
		return x
	case nil:
		return ""
	}
	return event.PythonRepr(v)
}

func artifactText(ctx context.Context, inv *agent.Invocation, name string) (string, error) {
	svc := inv.Artifacts()
	if svc == nil {
		return "", fmt.Errorf("artifact %q: %w", name, agent.ErrNoService)
	}
	s := inv.Session()
	p, err := svc.Load(ctx, artifact.Ref{AppName: s.AppName(), UserID: s.UserID(), SessionID: s.ID(), Name: name}, artifact.Latest)
	if err != nil {
		return "", err
	}
	if p.Text != "" {
		return p.Text, nil
	}
	if p.InlineData != nil && strings.HasPrefix(p.InlineData.MIMEType, "text/") {
		return string(p.InlineData.Data), nil
	}
	return "", fmt.Errorf("artifact %q has no text", name)
}
