package telemetry

import (
	"fmt"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"

	"github.com/loomkit/loom/model"
	"github.com/loomkit/loom/model/fallback"
)

// Attributes of a call_llm span whose answer came from a fallback model
// (model/fallback): the model the agent is configured with, the one that
// answered and the failure that moved the call on. Each failed attempt is
// also an event "model_fallback" of the span.
const (
	keyFallbackOriginal  = "loom.fallback.original_model"
	keyFallbackModel     = "loom.fallback.model"
	keyFallbackErrorCode = "loom.fallback.error_code"
)

// fallbackAttrs records on span the fallback a response reports in its
// custom metadata, if any.
func fallbackAttrs(span trace.Span, resp *model.Response) {
	md := resp.CustomMetadata
	if md == nil || md[fallback.KeyTriggered] != true {
		return
	}
	span.SetAttributes(
		attribute.String(keyFallbackOriginal, fmt.Sprint(md[fallback.KeyOriginal])),
		attribute.String(keyFallbackModel, fmt.Sprint(md[fallback.KeyModel])),
		attribute.String(keyFallbackErrorCode, fmt.Sprint(md[fallback.KeyErrorCode])))
	errs, _ := md[fallback.KeyErrors].([]any)
	for _, e := range errs {
		f, _ := e.(map[string]any)
		span.AddEvent("model_fallback", trace.WithAttributes(
			attribute.String("gen_ai.request.model", fmt.Sprint(f["model"])),
			attribute.String("error.message", fmt.Sprint(f["error"]))))
	}
}
