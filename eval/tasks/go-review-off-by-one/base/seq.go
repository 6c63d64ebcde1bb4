package seq

// First returns the first element.
func First(xs []int) int {
	return xs[0]
}
