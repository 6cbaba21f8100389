package runner

// CacheUsage reports the idle live sessions kept and their accounted bytes.
func (r *Runner) CacheUsage() (sessions int, bytes int64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.idle.Len(), r.idleBytes
}
