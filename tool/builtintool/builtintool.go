// Package builtintool provides typed wrappers for tools that run inside the
// model provider rather than in the agent: grounding in Google Search,
// enterprise web search, Google Maps or Vertex AI Search, and URL context.
// Each is a [tool.RequestProcessor] that adds its genai tool to every request of the agent that has it; the model is
// never asked to call it as a function.
//
// The provider's code execution is a code executor, codeexec.BuiltIn, not
// a tool here: an LLM agent with it adds the provider's tool and runs
// nothing itself.
//
// Gemini runs them all. The other adapters map what their provider has:
// Anthropic and OpenAI run GoogleSearch as their own web search (Anthropic's
// web_search server tool, OpenAI's web_search_options). Any other
// combination fails before anything is sent, with an error that wraps
// model.ErrUnsupportedContent and names the tool.
//
// What the provider reports about the search (queries, sources, which
// text each source supports) is kept on the response's GroundingMetadata and
// so on the event; executed code and its output are executableCode and
// codeExecutionResult parts of the response.
package builtintool

import (
	"context"
	"fmt"
	"slices"

	"google.golang.org/genai"

	"github.com/loomkit/loom/model"
	"github.com/loomkit/loom/tool"
)

// Names of the built-in tools, as ADK's config files name them.
const (
	GoogleSearchName        = "google_search"
	URLContextName          = "url_context"
	GoogleMapsName          = "google_maps_grounding"
	EnterpriseWebSearchName = "enterprise_web_search"
	VertexAISearchName      = "vertex_ai_search"
)

// Tool is a provider-side tool. It is immutable and safe for concurrent
// use.
type Tool struct {
	name, description string
	gt                genai.Tool
}

var _ tool.RequestProcessor = (*Tool)(nil)

// GoogleSearch returns the search grounding tool: the model searches the
// web and grounds its answer in the results.
func GoogleSearch() *Tool {
	return &Tool{name: GoogleSearchName, description: "Searches the web to ground answers.",
		gt: genai.Tool{GoogleSearch: &genai.GoogleSearch{}}}
}

// URLContext returns the URL context tool: the model reads the web pages
// whose URLs appear in the conversation (Gemini only).
func URLContext() *Tool {
	return &Tool{name: URLContextName, description: "Reads the web pages at URLs given in the conversation.",
		gt: genai.Tool{URLContext: &genai.URLContext{}}}
}

// GoogleMaps returns the Google Maps grounding tool: the model grounds its
// answer in Google Maps data (Gemini on Vertex AI).
func GoogleMaps() *Tool {
	return &Tool{name: GoogleMapsName, description: "Grounds answers in Google Maps data.",
		gt: genai.Tool{GoogleMaps: &genai.GoogleMaps{}}}
}

// EnterpriseWebSearch returns the enterprise web search tool: web search
// grounding with enterprise compliance controls (Gemini on Vertex AI).
func EnterpriseWebSearch() *Tool {
	return &Tool{name: EnterpriseWebSearchName, description: "Searches the web, with enterprise controls, to ground answers.",
		gt: genai.Tool{EnterpriseWebSearch: &genai.EnterpriseWebSearch{}}}
}

// VertexAISearch returns the Vertex AI Search grounding tool over one
// data store (projects/.../dataStores/...) or one search engine
// (projects/.../engines/...): exactly one of the two must be given.
// filter and maxResults (0 for the service's default) narrow the search.
func VertexAISearch(dataStore, engine, filter string, maxResults int32) (*Tool, error) {
	if (dataStore == "") == (engine == "") {
		return nil, fmt.Errorf("%s: give exactly one of a data store and a search engine", VertexAISearchName)
	}
	vs := &genai.VertexAISearch{Datastore: dataStore, Engine: engine, Filter: filter}
	if maxResults > 0 {
		vs.MaxResults = &maxResults
	}
	return &Tool{name: VertexAISearchName, description: "Searches a Vertex AI Search data store to ground answers.",
		gt: genai.Tool{Retrieval: &genai.Retrieval{VertexAISearch: vs}}}, nil
}

// Name implements tool.Tool.
func (t *Tool) Name() string { return t.name }

// Description implements tool.Tool.
func (t *Tool) Description() string { return t.description }

// GenaiTool returns a copy of the genai tool this tool adds to requests.
func (t *Tool) GenaiTool() *genai.Tool {
	gt := t.gt
	return &gt
}

// ProcessRequest implements tool.RequestProcessor: it adds the tool to the
// request's tools.
func (t *Tool) ProcessRequest(_ context.Context, _ tool.Context, req *model.Request) error {
	if req.Config == nil {
		req.Config = &genai.GenerateContentConfig{}
	}
	req.Config.Tools = append(slices.Clip(req.Config.Tools), t.GenaiTool())
	return nil
}
