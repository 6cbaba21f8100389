package session

import (
	"unsafe"

	"google.golang.org/genai"

	"github.com/loomkit/loom/event"
)

// Fixed costs, in bytes, of the structures an estimate counts: the structs
// themselves plus a pointer to them, and a map entry's share of its table.
const (
	szEvent    = int64(unsafe.Sizeof(event.Event{})) + 8
	szContent  = int64(unsafe.Sizeof(genai.Content{})) + 8
	szPart     = int64(unsafe.Sizeof(genai.Part{})) + 8
	szCall     = int64(unsafe.Sizeof(genai.FunctionCall{}))
	szResponse = int64(unsafe.Sizeof(genai.FunctionResponse{}))
	szBlob     = int64(unsafe.Sizeof(genai.Blob{}))
	szMetadata = 256 // grounding, citation, usage, logprobs, transcription: small, rarely set
	szSlot     = 32  // a map slot: a string key and an interface or string value
	szValue    = 16  // an interface value
)

// Size estimates the memory this copy of the session holds, in bytes: its
// events (their structures, texts, inline data, function arguments and
// results, state deltas and other maps), its state, and what is held on
// its behalf (see Charge). Strings and byte
// slices count their length; a value of a type other than the JSON-like
// ones (maps, slices, strings, numbers, booleans) counts a fixed amount.
// The estimate is kept up to date as events are appended and the session is
// refreshed, so reading it costs nothing.
func (s *Session) Size() int64 {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.evBytes + s.stateBytes + s.charged
}

// Charge adds n bytes (n may be negative) to the session copy's Size for
// memory held on its behalf outside it, such as the model history an agent
// builds from its events and keeps for its next turns, so that a cache of
// sessions bounded in bytes bounds that memory too. A reload of the copy
// (Refresh of a session deleted and created again) drops the charges.
func (s *Session) Charge(n int64) {
	s.mu.Lock()
	s.charged += n
	s.mu.Unlock()
}

// ContentSize estimates the memory of a content in bytes, as Size counts
// the content of an event.
func ContentSize(c *genai.Content) int64 { return contentSize(c) }

// eventsSize estimates the memory of events.
func eventsSize(evs []*event.Event) int64 {
	var n int64
	for _, ev := range evs {
		n += eventSize(ev)
	}
	return n
}

// eventSize estimates the memory an event holds, in bytes, as
// [Session.Size] counts it. It does not allocate.
func eventSize(ev *event.Event) int64 {
	if ev == nil {
		return 0
	}
	n := szEvent + int64(len(ev.ID)+len(ev.InvocationID)+len(ev.Author)+len(ev.Branch)+
		len(ev.ModelVersion)+len(ev.FinishReason)+len(ev.ErrorCode)+len(ev.ErrorMessage))
	n += contentSize(ev.Content)
	if ev.GroundingMetadata != nil || ev.CitationMetadata != nil || ev.UsageMetadata != nil ||
		ev.LogprobsResult != nil || ev.InputTranscription != nil || ev.OutputTranscription != nil {
		n += szMetadata
	}
	n += mapSize(ev.CustomMetadata)
	if ids := ev.LongRunningToolIDs; ids != nil {
		n += 24 + 16*int64(len(ids))
		for _, id := range ids {
			n += int64(len(id))
		}
	}
	if ev.Output != nil {
		n += valueSize(ev.Output)
	}
	if ni := ev.NodeInfo; ni != nil {
		n += 64 + int64(len(ni.Path))
		for _, p := range ni.OutputFor {
			n += 16 + int64(len(p))
		}
	}
	a := &ev.Actions
	n += mapSize(a.StateDelta) + mapSize(a.RequestedAuthConfigs) + mapSize(a.AgentState)
	if a.ArtifactDelta != nil {
		n += 56 + 24*tableSlots(len(a.ArtifactDelta))
		for k := range a.ArtifactDelta {
			n += int64(len(k))
		}
	}
	if a.RequestedToolConfirmations != nil {
		n += 56 + 64*tableSlots(len(a.RequestedToolConfirmations))
		for k, c := range a.RequestedToolConfirmations {
			n += int64(len(k)+len(c.Hint)) + valueSize(c.Payload)
		}
	}
	if a.Compaction != nil {
		n += 64 + contentSize(a.Compaction.Content)
	}
	n += int64(len(a.TransferToAgent) + len(a.RewindBeforeInvocationID))
	return n
}

func contentSize(c *genai.Content) int64 {
	if c == nil {
		return 0
	}
	n := szContent + int64(len(c.Role))
	for _, p := range c.Parts {
		if p == nil {
			continue
		}
		n += szPart + int64(len(p.Text)+len(p.ThoughtSignature))
		if fc := p.FunctionCall; fc != nil {
			n += szCall + int64(len(fc.ID)+len(fc.Name)) + mapSize(fc.Args)
		}
		if fr := p.FunctionResponse; fr != nil {
			n += szResponse + int64(len(fr.ID)+len(fr.Name)) + mapSize(fr.Response)
			for _, fp := range fr.Parts {
				if fp != nil && fp.InlineData != nil {
					n += szBlob + int64(len(fp.InlineData.Data))
				}
			}
		}
		if b := p.InlineData; b != nil {
			n += szBlob + int64(len(b.Data)+len(b.MIMEType)+len(b.DisplayName))
		}
		if f := p.FileData; f != nil {
			n += 64 + int64(len(f.FileURI)+len(f.MIMEType)+len(f.DisplayName))
		}
		if e := p.ExecutableCode; e != nil {
			n += 64 + int64(len(e.Code))
		}
		if r := p.CodeExecutionResult; r != nil {
			n += 64 + int64(len(r.Output))
		}
		n += mapSize(p.PartMetadata)
	}
	return n
}

// mapSize estimates a map[string]any: its header, its table (eight slots
// of a string key and an interface value at least, grown at a load factor
// of 7/8), and what its keys and values point to.
func mapSize(m map[string]any) int64 {
	if m == nil {
		return 0
	}
	n := 56 + szSlot*tableSlots(len(m))
	for k, v := range m {
		n += int64(len(k)) + valueSize(v)
	}
	return n
}

func tableSlots(n int) int64 { return int64(max(8, n+n/7)) }

// valueSize estimates the memory an interface value points to.
func valueSize(v any) int64 {
	switch x := v.(type) {
	case nil, bool:
		return 0
	case string:
		return 16 + int64(len(x))
	case []byte:
		return 24 + int64(len(x))
	case map[string]any:
		return mapSize(x)
	case []any:
		n := int64(24) + szValue*int64(len(x))
		for _, e := range x {
			n += valueSize(e)
		}
		return n
	case []string:
		n := int64(24) + 16*int64(len(x))
		for _, e := range x {
			n += int64(len(e))
		}
		return n
	case map[string]string:
		n := 56 + szSlot*tableSlots(len(x))
		for k, e := range x {
			n += int64(len(k) + len(e))
		}
		return n
	case float64, int, int64, int32, float32, uint, uint64, uint32:
		return 8
	}
	return 64
}

// stateSize estimates the memory of a state map.
func stateSize(m map[string]any) int64 { return mapSize(m) }
