// Package cost prices model token usage and sums it over a session's turns.
//
// # Prices
//
// [Prices] maps model names to a [Price] in currency units (dollars, say)
// per million tokens: input tokens, output tokens and input tokens read
// from a provider's context cache. A model without a price, or whose price
// is all zeros, is unpriced: its tokens are counted, and no cost is given
// for them. [Parse] and [Load] read prices from JSON or YAML:
//
//	models:
//	  gemini-2.5-flash: {input: 0.30, output: 2.50, cached_input: 0.03}
//	  gpt-4o: {input: 2.50, output: 10.00}
//
// A model name is looked up as given and then, for a dated or numbered
// release of a listed model ("gpt-4o-2024-08-06", "gemini-2.0-flash-001"),
// as the longest listed name it starts with followed by "-" and a digit.
//
// # Usage
//
// [Of] is the usage of one model response; [Session] sums the usage
// metadata a session's stored events carry (what ADK stores as
// "usageMetadata"), per turn and in total, pricing each response by the
// model that answered it (the event's modelVersion).
package cost

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"strings"

	"go.yaml.in/yaml/v3"
	"google.golang.org/genai"

	"github.com/loomkit/loom/event"
)

// Price is what one model's tokens cost, in currency units per million
// tokens.
type Price struct {
	// Input prices prompt tokens not read from a cache.
	Input float64 `json:"input" yaml:"input"`
	// Output prices output tokens, the model's thoughts included.
	Output float64 `json:"output" yaml:"output"`
	// CachedInput prices prompt tokens read from a provider's context
	// cache; zero prices them as Input.
	CachedInput float64 `json:"cached_input,omitempty" yaml:"cached_input"`
}

// Prices maps model names to their prices. The zero value prices nothing.
// It is safe for concurrent reads.
type Prices map[string]Price

// Lookup returns the price of the named model: the price listed under the
// name, else under the longest listed name that the name extends with "-"
// and a digit (a dated or numbered release). ok is false for a model
// without a price or whose price is all zeros. A leading "models/" is
// ignored.
func (p Prices) Lookup(model string) (price Price, ok bool) {
	if len(p) == 0 || model == "" {
		return Price{}, false
	}
	model = strings.TrimPrefix(model, "models/")
	if pr, found := p[model]; found {
		return pr, pr != Price{}
	}
	best := -1
	for name, pr := range p {
		n := len(name)
		if len(model) > n+1 && model[n] == '-' && model[n+1] >= '0' && model[n+1] <= '9' &&
			strings.HasPrefix(model, name) && n > best {
			best, price = n, pr
		}
	}
	return price, best >= 0 && price != Price{}
}

// file is the form of a prices file.
type file struct {
	Models map[string]Price `yaml:"models"`
}

// Parse reads prices from JSON or YAML: an object whose "models" key maps
// model names to objects with "input", "output" and optionally
// "cached_input" prices per million tokens. Unknown keys, negative or
// non-finite prices and empty model names are errors.
func Parse(data []byte) (Prices, error) {
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	var f file
	if err := dec.Decode(&f); err != nil {
		if errors.Is(err, io.EOF) {
			return nil, errors.New("cost: prices: empty document, want a \"models\" key")
		}
		return nil, fmt.Errorf("cost: prices: %w", err)
	}
	if len(f.Models) == 0 {
		return nil, errors.New("cost: prices: no \"models\" key, or it is empty")
	}
	for name, pr := range f.Models {
		if strings.TrimSpace(name) == "" {
			return nil, errors.New("cost: prices: a model has an empty name")
		}
		for _, v := range [...]struct {
			key string
			v   float64
		}{{"input", pr.Input}, {"output", pr.Output}, {"cached_input", pr.CachedInput}} {
			if v.v < 0 || math.IsNaN(v.v) || math.IsInf(v.v, 0) {
				return nil, fmt.Errorf("cost: prices: model %q: %s price %v: want a finite number, zero or more", name, v.key, v.v)
			}
		}
	}
	return Prices(f.Models), nil
}

// Load reads prices from a JSON or YAML file (see [Parse]).
func Load(path string) (Prices, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("cost: prices: %w", err)
	}
	p, err := Parse(data)
	if err != nil {
		return nil, fmt.Errorf("%w (in %s)", err, path)
	}
	return p, nil
}

// Usage is the token usage of one or more model responses and what it
// cost.
type Usage struct {
	// Responses counts the model responses that reported usage.
	Responses int `json:"responses"`
	// Prompt counts input tokens, cached ones included.
	Prompt int64 `json:"prompt_tokens"`
	// Candidates counts output tokens, thoughts excluded.
	Candidates int64 `json:"candidates_tokens"`
	// Thoughts counts the model's thinking tokens.
	Thoughts int64 `json:"thoughts_tokens"`
	// Cached counts the prompt tokens read from a context cache.
	Cached int64 `json:"cached_tokens"`
	// Total counts every token: the provider's total, or the sum of the
	// others when it gives none.
	Total int64 `json:"total_tokens"`
	// Cost is what the priced responses cost, in the prices' currency.
	Cost float64 `json:"cost"`
	// Unpriced counts the responses of models without a price, whose
	// tokens Cost leaves out.
	Unpriced int `json:"unpriced_responses"`
}

// Of returns the usage of one model response of the named model, priced
// by p; a nil u is no usage at all.
func Of(u *genai.GenerateContentResponseUsageMetadata, model string, p Prices) Usage {
	if u == nil {
		return Usage{}
	}
	out := Usage{
		Responses:  1,
		Prompt:     int64(u.PromptTokenCount),
		Candidates: int64(u.CandidatesTokenCount),
		Thoughts:   int64(u.ThoughtsTokenCount),
		Cached:     int64(u.CachedContentTokenCount),
		Total:      int64(u.TotalTokenCount),
	}
	if out.Total == 0 {
		out.Total = out.Prompt + out.Candidates + out.Thoughts + int64(u.ToolUsePromptTokenCount)
	}
	price, ok := p.Lookup(model)
	if !ok {
		out.Unpriced = 1
		return out
	}
	cachedPrice := price.CachedInput
	if cachedPrice == 0 {
		cachedPrice = price.Input
	}
	uncached := max(out.Prompt-out.Cached, 0)
	out.Cost = (float64(uncached)*price.Input + float64(out.Cached)*cachedPrice +
		float64(out.Candidates+out.Thoughts)*price.Output) / 1e6
	return out
}

// Add adds v to u.
func (u *Usage) Add(v Usage) {
	u.Responses += v.Responses
	u.Prompt += v.Prompt
	u.Candidates += v.Candidates
	u.Thoughts += v.Thoughts
	u.Cached += v.Cached
	u.Total += v.Total
	u.Cost += v.Cost
	u.Unpriced += v.Unpriced
}

// Turn is the usage of one invocation of a session.
type Turn struct {
	// InvocationID identifies the invocation.
	InvocationID string `json:"invocation_id"`
	Usage
}

// SessionUsage is a session's usage: in total and per turn.
type SessionUsage struct {
	// Total sums every turn.
	Total Usage `json:"total"`
	// Turns are the session's invocations in the order they began, each
	// with its usage (zero for a turn that called no model).
	Turns []Turn `json:"turns"`
}

// Session sums the usage metadata of a session's events per invocation,
// pricing each response by p under the model that answered it (its
// modelVersion). Partial events, the user's events and events imported
// from a client-supplied history are left out: only complete responses the
// runtime received count.
func Session(events []*event.Event, p Prices) SessionUsage {
	out := SessionUsage{Turns: []Turn{}}
	index := map[string]int{} // invocation id → its turn
	for _, ev := range events {
		if ev == nil || ev.Partial || ev.Imported() {
			continue
		}
		i, ok := index[ev.InvocationID]
		if !ok {
			i = len(out.Turns)
			index[ev.InvocationID] = i
			out.Turns = append(out.Turns, Turn{InvocationID: ev.InvocationID})
		}
		if ev.Author == "user" {
			continue
		}
		u := Of(ev.UsageMetadata, ev.ModelVersion, p)
		out.Turns[i].Add(u)
		out.Total.Add(u)
	}
	return out
}
