package docker

// DieForTest drops the backend's containers started ahead the way a runner
// that dies does: their attach connections close, nothing removes them.
func (b *Backend) DieForTest() {
	b.pool.mu.Lock()
	defer b.pool.mu.Unlock()
	for _, c := range b.pool.warm {
		c.att.Close()
	}
	b.pool.warm, b.pool.closed = nil, true
}
