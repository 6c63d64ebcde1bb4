package words

import "sort"

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

// Top returns the n most frequent words, the most frequent first; words
// with the same count in alphabetical order.
func (c *Counter) Top(n int) []string {
	ws := make([]string, 0, len(c.n))
	for w := range c.n {
		ws = append(ws, w)
	}
	sort.Slice(ws, func(i, j int) bool {
		if c.n[ws[i]] != c.n[ws[j]] {
			return c.n[ws[i]] > c.n[ws[j]]
		}
		return ws[i] < ws[j]
	})
	if n < len(ws) {
		ws = ws[:n]
	}
	return ws
}
