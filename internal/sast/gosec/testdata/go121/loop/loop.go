// Package loop takes the address of a range variable: G601 before Go 1.22.
package loop

// Pointers returns a pointer to each element (before Go 1.22, to the one
// loop variable).
func Pointers(xs []int) []*int {
	var out []*int
	for _, x := range xs {
		out = append(out, &x)
	}
	return out
}
