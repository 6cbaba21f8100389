package event

// IsZero reports whether a carries no action at all. It is the one place
// that knows every field of Actions (with Merge).
func (a *Actions) IsZero() bool {
	return !a.SkipSummarization && len(a.StateDelta) == 0 && len(a.ArtifactDelta) == 0 &&
		a.TransferToAgent == "" && !a.Escalate && len(a.RequestedAuthConfigs) == 0 &&
		len(a.RequestedToolConfirmations) == 0 && a.Compaction == nil && !a.EndOfAgent &&
		a.AgentState == nil && a.RewindBeforeInvocationID == "" && a.Route == nil &&
		len(a.RenderUIWidgets) == 0 && a.SetModelResponse == nil && len(a.Unknown) == 0
}

// IsCheckpoint reports whether a records only an agent's progress: agent
// state or its end, and nothing else.
func (a *Actions) IsCheckpoint() bool {
	if a.AgentState == nil && !a.EndOfAgent {
		return false
	}
	rest := *a
	rest.AgentState, rest.EndOfAgent = nil, false
	return rest.IsZero()
}

// Merge merges src into a, as when the actions of several tool calls are
// committed with one event: maps are merged key by key (src wins), flags
// are or-ed, and the other fields of src win when set. a's maps may be
// modified; src's are not kept.
func (a *Actions) Merge(src *Actions) {
	a.StateDelta = mergeMap(a.StateDelta, src.StateDelta)
	a.RequestedAuthConfigs = mergeMap(a.RequestedAuthConfigs, src.RequestedAuthConfigs)
	a.AgentState = mergeMap(a.AgentState, src.AgentState)
	a.ArtifactDelta = mergeMap(a.ArtifactDelta, src.ArtifactDelta)
	a.RequestedToolConfirmations = mergeMap(a.RequestedToolConfirmations, src.RequestedToolConfirmations)
	a.SkipSummarization = a.SkipSummarization || src.SkipSummarization
	a.Escalate = a.Escalate || src.Escalate
	a.EndOfAgent = a.EndOfAgent || src.EndOfAgent
	if src.TransferToAgent != "" {
		a.TransferToAgent = src.TransferToAgent
	}
	if src.Compaction != nil {
		a.Compaction = src.Compaction
	}
	if src.RewindBeforeInvocationID != "" {
		a.RewindBeforeInvocationID = src.RewindBeforeInvocationID
	}
	if src.Route != nil {
		a.Route = src.Route
	}
	a.RenderUIWidgets = append(a.RenderUIWidgets, src.RenderUIWidgets...)
	if src.SetModelResponse != nil {
		a.SetModelResponse = src.SetModelResponse
	}
	a.Unknown = mergeMap(a.Unknown, src.Unknown)
}

// mergeMap copies src's entries into dst, allocating dst when needed.
func mergeMap[V any](dst, src map[string]V) map[string]V {
	for k, v := range src {
		if dst == nil {
			dst = make(map[string]V, len(src))
		}
		dst[k] = v
	}
	return dst
}
