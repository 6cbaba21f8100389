package temporal

import "slices"

// Subscribed returns the request ids whose clients wait in this process.
func Subscribed() []string {
	feeds.mu.Lock()
	defer feeds.mu.Unlock()
	var ids []string
	for id := range feeds.feeds {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	return ids
}
