package llmagent

import (
	"context"
	"fmt"
	"regexp"
	"strings"

	"google.golang.org/genai"

	"github.com/loomkit/loom/agent"
	"github.com/loomkit/loom/artifact"
	"github.com/loomkit/loom/codeexec"
	"github.com/loomkit/loom/event"
)

// defaultCodeErrorRetries is the number of consecutive failed executions
// after which code blocks are no longer run.
const defaultCodeErrorRetries = 2

const codeInstruction = "You can run Python code. To run code, write it in a block that starts with ```tool_code " +
	"and ends with ```, then stop and wait: its output comes back in a ```tool_output block. Files the code writes " +
	"in its working directory are saved and shown to the user."

var codeBlock = regexp.MustCompile("(?s)```(?:tool_code|python)[ \t]*\n(.*?)```")

// localExecutor returns the agent's code executor when it runs code
// itself, or nil.
func (a *Agent) localExecutor() codeexec.Executor {
	switch a.cfg.CodeExecutor.(type) {
	case nil, codeexec.BuiltIn, *codeexec.BuiltIn:
		return nil
	}
	return a.cfg.CodeExecutor
}

func (a *Agent) builtInExecutor() bool {
	switch a.cfg.CodeExecutor.(type) {
	case codeexec.BuiltIn, *codeexec.BuiltIn:
		return true
	}
	return false
}

// extractCode finds the first code block in the text of a model response
// and returns the content rewritten as the text before the block followed
// by the code as an executableCode part; the text after the block, which
// the model wrote without the output, is dropped.
func extractCode(c *genai.Content) (*genai.Content, string, bool) {
	if c == nil {
		return nil, "", false
	}
	out := &genai.Content{Role: c.Role}
	for i, p := range c.Parts {
		if p == nil || p.Thought || p.Text == "" {
			if p != nil {
				out.Parts = append(out.Parts, p)
			}
			continue
		}
		loc := codeBlock.FindStringSubmatchIndex(p.Text)
		if loc == nil {
			out.Parts = append(out.Parts, p)
			continue
		}
		code := p.Text[loc[2]:loc[3]]
		if before := p.Text[:loc[0]]; strings.TrimSpace(before) != "" {
			out.Parts = append(out.Parts, &genai.Part{Text: before})
		}
		out.Parts = append(out.Parts, &genai.Part{ExecutableCode: &genai.ExecutableCode{Language: genai.LanguagePython, Code: code}})
		for _, rest := range c.Parts[i+1:] {
			if rest != nil && rest.Thought {
				out.Parts = append(out.Parts, rest)
			}
		}
		return out, code, true
	}
	return nil, "", false
}

// codeRetriesLeft reports whether the agent may run code again in this
// invocation: fewer than the allowed number of consecutive executions
// have failed.
func (a *Agent) codeRetriesLeft(inv *agent.Invocation) bool {
	limit := a.cfg.CodeErrorRetries
	switch {
	case limit == 0:
		limit = defaultCodeErrorRetries
	case limit < 0:
		limit = 0
	}
	failed := 0
	sess := inv.Session()
	for i := sess.Len() - 1; i >= 0; i-- {
		e := sess.At(i)
		if e.InvocationID != inv.ID() {
			break
		}
		if e.Author != a.Name() || !e.HasTrailingCodeResult() {
			continue
		}
		r := e.Content.Parts[len(e.Content.Parts)-1].CodeExecutionResult
		if r.Outcome == genai.OutcomeOK {
			break
		}
		failed++
	}
	return failed <= limit
}

// runCode executes code and returns the event with its result. Files the
// code wrote are saved as artifacts of the session; a file whose name would
// make it a user-scoped ("user:") artifact is refused and reported as not
// saved.
func (a *Agent) runCode(ctx context.Context, inv *agent.Invocation, exec codeexec.Executor, code string) (*event.Event, error) {
	res, err := exec.Execute(ctx, codeexec.Input{Code: code})
	if err != nil {
		return nil, fmt.Errorf("llmagent: %s: code executor: %w", a.Name(), err)
	}
	var out strings.Builder
	out.WriteString(res.Stdout)
	if res.Stderr != "" {
		if out.Len() > 0 && !strings.HasSuffix(out.String(), "\n") {
			out.WriteByte('\n')
		}
		out.WriteString(res.Stderr)
	}
	cc := agent.NewCallbackContext(inv)
	var saved, failed []string
	for _, f := range res.Files {
		name := strings.ReplaceAll(f.Name, "/", "_")
		if strings.HasPrefix(name, artifact.PrefixUser) {
			// Output files belong to the session: code must not replace
			// what every session of the user shares.
			failed = append(failed, fmt.Sprintf("%s (a name starting with %q would be the user's, not the session's)", name, artifact.PrefixUser))
			continue
		}
		if _, err := cc.SaveArtifact(ctx, name, &genai.Part{InlineData: &genai.Blob{MIMEType: f.MIMEType, Data: f.Data}}); err != nil {
			failed = append(failed, fmt.Sprintf("%s (%v)", name, err))
			continue
		}
		saved = append(saved, name)
	}
	if len(saved) > 0 {
		fmt.Fprintf(&out, "\nSaved files: %s", strings.Join(saved, ", "))
	}
	if len(failed) > 0 {
		fmt.Fprintf(&out, "\nFiles not saved: %s", strings.Join(failed, ", "))
	}
	outcome := genai.OutcomeOK
	if res.Failed {
		outcome = genai.OutcomeFailed
	}
	ev := inv.NewEvent()
	ev.Content = &genai.Content{Role: genai.RoleModel, Parts: []*genai.Part{
		{CodeExecutionResult: &genai.CodeExecutionResult{Outcome: outcome, Output: out.String()}}}}
	ev.Actions = cc.TakeActions()
	return ev, nil
}

// codeAsText returns contents with executableCode and codeExecutionResult
// parts written as the text blocks a model without built-in execution
// reads and writes, sharing the contents it does not change.
func codeAsText(contents []*genai.Content) []*genai.Content {
	var out []*genai.Content
	for i, c := range contents {
		if c == nil || !hasCodePart(c) {
			if out != nil {
				out = append(out, c)
			}
			continue
		}
		if out == nil {
			out = append(make([]*genai.Content, 0, len(contents)), contents[:i]...)
		}
		cp := &genai.Content{Role: c.Role, Parts: make([]*genai.Part, 0, len(c.Parts))}
		for _, p := range c.Parts {
			switch {
			case p == nil:
			case p.ExecutableCode != nil:
				cp.Parts = append(cp.Parts, &genai.Part{Text: "```tool_code\n" + strings.TrimRight(p.ExecutableCode.Code, "\n") + "\n```"})
			case p.CodeExecutionResult != nil:
				cp.Parts = append(cp.Parts, &genai.Part{Text: "```tool_output\n" + strings.TrimRight(p.CodeExecutionResult.Output, "\n") + "\n```"})
			default:
				cp.Parts = append(cp.Parts, p)
			}
		}
		out = append(out, cp)
	}
	if out == nil {
		return contents
	}
	return out
}

func hasCodePart(c *genai.Content) bool {
	for _, p := range c.Parts {
		if p != nil && (p.ExecutableCode != nil || p.CodeExecutionResult != nil) {
			return true
		}
	}
	return false
}
