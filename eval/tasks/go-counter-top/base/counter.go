package words

// Counter counts words.
type Counter struct{ n map[string]int }

// Add counts one occurrence of w.
func (c *Counter) Add(w string) {
	if c.n == nil {
		c.n = map[string]int{}
	}
	c.n[w]++
}

// Count is how often w was added.
func (c *Counter) Count(w string) int { return c.n[w] }
