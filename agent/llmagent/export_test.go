package llmagent

// Histories returns the number of model histories the agent keeps.
func (a *Agent) Histories() int {
	n := 0
	a.histories.Range(func(any, any) bool { n++; return true })
	return n
}
