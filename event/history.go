package event

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	"google.golang.org/genai"

	"github.com/loomkit/loom/model"
)

// Names of the function calls the runtime itself uses to talk to clients.
// They never reach a model.
const (
	FunctionRequestConfirmation = "adk_request_confirmation"
	FunctionRequestCredential   = "adk_request_credential"
)

// FunctionRequestInput is the name of the function call with which a node
// of a graph workflow asks the user for input (package agent/graph),
// ADK's shared wire name.
const FunctionRequestInput = "adk_request_input"

// GeneratedCallIDPrefix starts the ids the runtime gives to function calls
// whose model supplied none. Such ids are removed before history goes back to
// a model.
const GeneratedCallIDPrefix = "adk-"

// ModelView returns the events of a session log as a model should see them:
//
//   - a compaction event's summary replaces the events whose timestamps lie in
//     its range, at the place of the first of them; when compaction ranges
//     overlap, the newest compaction wins and older ones that overlap it are
//     ignored, so their events show unless another summary covers them;
//   - an event with RewindBeforeInvocationID hides every earlier event from
//     that invocation on, and itself.
//
// The summary appears as a synthetic event authored like the compaction
// event, with the compacted content. ModelView does not modify events.
// Its cost is linear in len(events) when, as usual, each compaction covers
// a later range than the ones before it.
func ModelView(events []*Event) []*Event {
	hidden, ranges := scanBackward(events)
	if len(hidden) == 0 && len(ranges) == 0 {
		return events
	}
	out := make([]*Event, 0, len(events))
	r := len(ranges) - 1 // ranges were collected newest first; oldest is last
	for i, e := range events {
		if hidden[i] || e.Actions.Compaction != nil {
			continue
		}
		for r >= 0 && (ranges[r].c.Actions.Compaction.End.Before(e.Timestamp) || i > ranges[r].at) {
			out = append(out, ranges[r].summary())
			r--
		}
		if r >= 0 && !e.Timestamp.Before(ranges[r].c.Actions.Compaction.Start) && i < ranges[r].at {
			continue // covered by a summary, emitted when the range is passed
		}
		out = append(out, e)
	}
	for ; r >= 0; r-- {
		out = append(out, ranges[r].summary())
	}
	return out
}

// compactRange is a winning compaction: the event c at index at of the log.
// It covers only events logged before it: an event committed after the
// summary was written is not in the summary, whatever its timestamp.
type compactRange struct {
	c  *Event
	at int
}

func (r compactRange) summary() *Event {
	c := r.c
	return &Event{
		Response:     model.Response{Content: c.Actions.Compaction.Content},
		ID:           c.ID,
		InvocationID: c.InvocationID,
		Author:       c.Author,
		Branch:       c.Branch,
		Timestamp:    c.Actions.Compaction.End,
	}
}

// scanBackward walks the log newest first, marking events hidden by rewinds
// (see Visible) and collecting the compactions that win: each one that
// overlaps no newer winner. The winners are disjoint and returned latest
// range first.
func scanBackward(events []*Event) (hidden map[int]bool, ranges []compactRange) {
	sorted := true         // ranges are newest first and also latest first
	var minStart time.Time // earliest start among ranges
	next := len(events)    // the index visited before i: anything between is hidden
	for i, e := range Visible(Events(events)) {
		for j := i + 1; j < next; j++ {
			if hidden == nil {
				hidden = map[int]bool{}
			}
			hidden[j] = true
		}
		next = i
		c := e.Actions.Compaction
		if c == nil {
			continue
		}
		// Compactions usually move forward in time, so an older one
		// normally ends before every newer winner starts; only otherwise
		// is it checked against each winner.
		if len(ranges) == 0 || c.End.Before(minStart) {
			ranges = append(ranges, compactRange{e, i})
			minStart = c.Start
		} else if !slices.ContainsFunc(ranges, c.overlaps) {
			ranges = append(ranges, compactRange{e, i})
			sorted = false
			if c.Start.Before(minStart) {
				minStart = c.Start
			}
		}
	}
	for j := 0; j < next; j++ {
		if hidden == nil {
			hidden = map[int]bool{}
		}
		hidden[j] = true
	}
	if !sorted {
		// A newer compaction summarized an earlier range: order the winners
		// by time, latest first, as ModelView consumes them.
		slices.SortFunc(ranges, func(a, b compactRange) int {
			return b.c.Actions.Compaction.Start.Compare(a.c.Actions.Compaction.Start)
		})
	}
	return hidden, ranges
}

// overlaps reports whether the time ranges of c and r's compaction share an
// instant.
func (c *Compaction) overlaps(r compactRange) bool {
	o := r.c.Actions.Compaction
	return !c.End.Before(o.Start) && !o.End.Before(c.Start)
}

// HistoryOptions selects whose view of the log [History] builds.
type HistoryOptions struct {
	// Agent is the name of the agent the history is for. Events by other
	// agents are presented to it as user-role context.
	Agent string
	// Branch is the agent's branch. Events on other branches (neither this
	// branch nor one of its ancestors) are left out.
	Branch string
	// Fence fences the text relayed from other agents and their tools
	// ([FenceContext]), so that it cannot pose as instructions. It changes
	// what the model reads from ADK's words, so it is off by default.
	Fence bool
}

// History builds the contents a model receives from a session log: it applies
// [ModelView], drops events without content, events on unrelated branches
// and the runtime's own confirmation and credential calls, presents other
// agents' events as context, strips generated function-call ids, and shows
// only the latest response to a call (see [HistoryBuilder]).
func History(events []*Event, opts HistoryOptions) []*genai.Content {
	b := NewHistoryBuilder(opts)
	for _, e := range ModelView(events) {
		b.Add(e)
	}
	return b.Contents()
}

// HistoryBuilder builds a model history one event at a time, as [History]
// does for a whole log. When a call has several responses (a long-running
// tool's interim result, then the client's final one), the model sees the
// latest only, in the place of the first, so every call is followed by
// exactly one response. While the latest event is such a later response,
// the history ends with it: what came between the call and it (the
// model's words about the interim result) is left out, as ADK leaves it
// out, until another event follows. It is not safe for concurrent use.
type HistoryBuilder struct {
	opts      HistoryOptions
	contents  []*genai.Content
	responses map[string][2]int // call id → content and part index of its response
	shared    bool              // contents was handed out: copy before changing an element
	cut       int               // when > 0, Contents ends after this many contents
}

// NewHistoryBuilder returns an empty history for the agent and branch of
// opts.
func NewHistoryBuilder(opts HistoryOptions) *HistoryBuilder {
	return &HistoryBuilder{opts: opts}
}

// Add appends what e contributes to the history (events must be added in
// log order, after ModelView).
func (b *HistoryBuilder) Add(e *Event) {
	c := e.ContentFor(b.opts.Agent, b.opts.Branch)
	if c == nil {
		return
	}
	if b.opts.Fence && e.Author != b.opts.Agent && e.Author != AuthorUser {
		c = FenceContext(c)
	}
	var ids []string // the original ids of the responses ContentFor kept, in order
	for _, p := range e.Content.Parts {
		if p != nil && p.FunctionResponse != nil && !isRuntimeCall(p.FunctionResponse.Name) {
			ids = append(ids, p.FunctionResponse.ID)
		}
	}
	b.cut = 0
	if len(ids) > 0 && hasResponse(c) {
		kept := c.Parts[:0]
		k := 0
		replaced := -1 // the last content holding a response this event replaced
		for _, p := range c.Parts {
			if p.FunctionResponse == nil {
				kept = append(kept, p)
				continue
			}
			id := ids[k]
			k++
			if at, ok := b.responses[id]; ok && id != "" {
				b.replace(at, p)
				replaced = max(replaced, at[0])
				continue
			}
			if id != "" {
				if b.responses == nil {
					b.responses = map[string][2]int{}
				}
				b.responses[id] = [2]int{len(b.contents), len(kept)}
			}
			kept = append(kept, p)
		}
		if len(kept) == 0 {
			if replaced >= 0 {
				b.cut = replaced + 1
			}
			return
		}
		c.Parts = kept
	}
	if b.contents == nil {
		// A turn adds a few contents at once (a call and its response):
		// a new history starts with room for them.
		b.contents = make([]*genai.Content, 0, 4)
	}
	b.contents = append(b.contents, c)
}

func hasResponse(c *genai.Content) bool {
	return slices.ContainsFunc(c.Parts, func(p *genai.Part) bool { return p.FunctionResponse != nil })
}

// replace puts a later response in the place of an earlier one.
func (b *HistoryBuilder) replace(at [2]int, p *genai.Part) {
	if b.shared {
		b.contents = slices.Clone(b.contents)
		b.shared = false
	}
	old := b.contents[at[0]]
	c := &genai.Content{Role: old.Role, Parts: slices.Clone(old.Parts)}
	c.Parts[at[1]] = p
	b.contents[at[0]] = c
}

// Len returns the number of contents built so far, those Contents leaves
// out after a later response included.
func (b *HistoryBuilder) Len() int { return len(b.contents) }

// Contents returns the history built so far. The slice has no spare
// capacity and is never changed by later calls, so callers may keep it;
// they must not modify it.
func (b *HistoryBuilder) Contents() []*genai.Content {
	b.shared = true
	n := len(b.contents)
	if b.cut > 0 && b.cut < n {
		n = b.cut
	}
	return b.contents[:n:n]
}

// Since returns the contents built since Len returned i, whether or not
// Contents shows them; the same rules as for Contents apply.
func (b *HistoryBuilder) Since(i int) []*genai.Content {
	b.shared = true
	return b.contents[i:len(b.contents):len(b.contents)]
}

// ContentFor returns the content this event contributes to the model history
// of the named agent on the given branch, or nil if it contributes none.
// The returned content never aliases the event's.
func (e *Event) ContentFor(agent, branch string) *genai.Content {
	if e.Content == nil || len(e.Content.Parts) == 0 || e.Partial {
		return nil
	}
	if !InBranch(branch, e.Branch) {
		return nil
	}
	var parts []*genai.Part
	var one *historyContent // a one-part content and its part list, allocated together
	if len(e.Content.Parts) == 1 {
		if c := stripped(e.Content.Parts[0]); c != nil {
			one = &c.historyContent
			parts = append(one.parts[:0], &c.part) // the loop below has nothing left to do
		} else {
			one = new(historyContent)
			parts = one.parts[:0]
		}
	} else {
		parts = make([]*genai.Part, 0, len(e.Content.Parts))
	}
	for _, p := range e.Content.Parts[len(parts):] {
		switch {
		case p == nil:
		case p.FunctionCall != nil && isRuntimeCall(p.FunctionCall.Name):
		case p.FunctionResponse != nil && isRuntimeCall(p.FunctionResponse.Name):
		case p.Text == "" && !p.Thought && p.FunctionCall == nil && p.FunctionResponse == nil &&
			p.InlineData == nil && p.FileData == nil && p.ExecutableCode == nil && p.CodeExecutionResult == nil:
		default:
			parts = append(parts, stripGeneratedID(p))
		}
	}
	if len(parts) == 0 {
		return nil
	}
	if e.Author != AuthorUser && e.Author != agent && agent != "" {
		return otherAgentContent(e.Author, parts)
	}
	role := e.Content.Role
	if role == "" {
		role = genai.RoleModel
		if e.Author == AuthorUser {
			role = genai.RoleUser
		}
	}
	if one != nil {
		one.content = genai.Content{Role: role, Parts: parts}
		return &one.content
	}
	return &genai.Content{Role: role, Parts: parts}
}

// historyContent is a history content of one part with its part list.
type historyContent struct {
	content genai.Content
	parts   [1]*genai.Part
}

// strippedCall is a history content whose one part is a copy of a
// function call or response without its generated id, allocated together.
type strippedCall struct {
	historyContent
	part genai.Part
	call genai.FunctionCall
	resp genai.FunctionResponse
}

// stripped returns a copy of a function call or response part without its
// generated id, inside the one-part content that will hold it, or nil for
// any other part. Runtime calls are not history and are never copied.
func stripped(p *genai.Part) *strippedCall {
	switch {
	case p == nil:
		return nil
	case p.FunctionCall != nil && strings.HasPrefix(p.FunctionCall.ID, GeneratedCallIDPrefix) && !isRuntimeCall(p.FunctionCall.Name):
		c := &strippedCall{part: *p, call: *p.FunctionCall}
		c.call.ID = ""
		c.part.FunctionCall = &c.call
		return c
	case p.FunctionResponse != nil && strings.HasPrefix(p.FunctionResponse.ID, GeneratedCallIDPrefix) && !isRuntimeCall(p.FunctionResponse.Name):
		c := &strippedCall{part: *p, resp: *p.FunctionResponse}
		c.resp.ID = ""
		c.part.FunctionResponse = &c.resp
		return c
	}
	return nil
}

// InBranch reports whether an event on eventBranch is visible to an agent on
// branch: events with no branch are visible everywhere, and an agent sees its
// own branch and its ancestors'.
func InBranch(branch, eventBranch string) bool {
	return branch == "" || eventBranch == "" || branch == eventBranch ||
		strings.HasPrefix(branch, eventBranch+".")
}

func isRuntimeCall(name string) bool {
	return name == FunctionRequestConfirmation || name == FunctionRequestCredential
}

func stripGeneratedID(p *genai.Part) *genai.Part {
	if c := stripped(p); c != nil {
		return &c.part
	}
	return p
}

// otherAgentContent presents another agent's parts as user-role context, so a
// model never mistakes them for its own turns. The wording is ADK's, and
// arguments and results are written as Python writes a dict, as ADK does.
func otherAgentContent(author string, parts []*genai.Part) *genai.Content {
	out := &genai.Content{Role: genai.RoleUser, Parts: []*genai.Part{{Text: ContextPrefix}}}
	for _, p := range parts {
		switch {
		case p.Thought:
			continue
		case p.Text != "":
			out.Parts = append(out.Parts, &genai.Part{Text: fmt.Sprintf("[%s] said: %s", author, p.Text)})
		case p.FunctionCall != nil:
			out.Parts = append(out.Parts, &genai.Part{Text: fmt.Sprintf("[%s] called tool `%s` with parameters: %s",
				author, p.FunctionCall.Name, PythonRepr(argsValue(p.FunctionCall.Args)))})
		case p.FunctionResponse != nil:
			out.Parts = append(out.Parts, &genai.Part{Text: fmt.Sprintf("[%s] `%s` tool returned result: %s",
				author, p.FunctionResponse.Name, PythonRepr(argsValue(p.FunctionResponse.Response)))})
		default:
			out.Parts = append(out.Parts, p)
		}
	}
	if len(out.Parts) == 1 {
		return nil
	}
	return out
}

// argsValue is a call's arguments or a response as PythonRepr takes them:
// a nil map is an empty dict, as ADK shows a call without arguments.
func argsValue(m map[string]any) any {
	if m == nil {
		return map[string]any{}
	}
	return m
}

// CompactJSON renders v as compact JSON for people and models to read,
// falling back to Go's formatting for values JSON cannot hold.
func CompactJSON(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	return string(b)
}
