package seq

// First returns the first element of a non-empty slice.
func First(xs []int) int {
	return xs[0]
}

// Last returns the last element of a non-empty slice.
func Last(xs []int) int {
	return xs[len(xs)]
}

// Sum adds the elements.
func Sum(xs []int) int {
	total := 0
	for _, x := range xs {
		total += x
	}
	return total
}
