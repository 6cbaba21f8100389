// Package offline holds what the example agents' scripted models share:
// reading a model request the way a real model would (who is asking, what
// the user said, which tool results just arrived).
package offline

import (
	"regexp"
	"strconv"
	"strings"
	"sync"

	"github.com/loomkit/loom/event"
	"github.com/loomkit/loom/model"
)

// UserText returns the text of the latest message the user typed, skipping
// function responses and relayed context from other agents.
func UserText(req *model.Request) string { return event.TypedText(req.Contents) }

// HasTool reports whether the request declares a function named name.
func HasTool(req *model.Request, name string) bool {
	if req.Config == nil {
		return false
	}
	for _, t := range req.Config.Tools {
		if t == nil {
			continue
		}
		for _, fd := range t.FunctionDeclarations {
			if fd != nil && fd.Name == name {
				return true
			}
		}
	}
	return false
}

// Instruction returns the system instruction of the request as text.
func Instruction(req *model.Request) string {
	if req.Config == nil || req.Config.SystemInstruction == nil {
		return ""
	}
	var b strings.Builder
	for _, p := range req.Config.SystemInstruction.Parts {
		if p != nil && p.Text != "" {
			if b.Len() > 0 {
				b.WriteString("\n")
			}
			b.WriteString(p.Text)
		}
	}
	return b.String()
}

// Quoted returns the text the instruction holds between the line `label:`
// followed by a line `"""` and the next line `"""`, or "" when absent. The
// examples quote state values in their instructions that way, so that the
// scripted models can read what a real model would see.
func Quoted(instruction, label string) string {
	start := strings.Index(instruction, label+":\n\"\"\"\n")
	if start < 0 {
		return ""
	}
	rest := instruction[start+len(label)+5:]
	end := strings.Index(rest, "\n\"\"\"")
	if end < 0 {
		return ""
	}
	return strings.TrimSpace(rest[:end])
}

// HasWord reports whether text contains one of the words, ignoring case
// and punctuation.
func HasWord(text string, words ...string) bool {
	for _, w := range strings.FieldsFunc(strings.ToLower(text), func(r rune) bool {
		return !(r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r > 127)
	}) {
		for _, want := range words {
			if w == want {
				return true
			}
		}
	}
	return false
}

// The expressions are compiled when first used, not when a program that
// links this package starts.
var (
	numberRE = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`-?\d+(?:\.\d+)?`) })
	cityRE   = sync.OnceValue(func() *regexp.Regexp {
		return regexp.MustCompile(`(?i)\b(?:in|at|for)\s+([\p{L}][\p{L} .'-]*)`)
	})
)

// Numbers returns up to n numbers written in text, in order.
func Numbers(text string, n int) []float64 {
	var out []float64
	for _, s := range numberRE().FindAllString(text, n) {
		if f, err := strconv.ParseFloat(s, 64); err == nil {
			out = append(out, f)
		}
	}
	return out
}

// City returns the city a weather question names ("weather in new york
// today?" → "New York"), or fallback.
func City(text, fallback string) string {
	m := cityRE().FindStringSubmatch(text)
	if m == nil {
		return fallback
	}
	c := strings.ToLower(strings.Trim(strings.TrimSpace(m[1]), ".?!'- "))
	for _, stop := range []string{" right now", " today", " tomorrow", " now", " please"} {
		c = strings.TrimSuffix(c, stop)
	}
	words := strings.Fields(c)
	if len(words) == 0 {
		return fallback
	}
	for i, w := range words {
		r := []rune(w)
		words[i] = strings.ToUpper(string(r[:1])) + string(r[1:])
	}
	return strings.Join(words, " ")
}
