package b

import "math/rand"

// N is not random enough.
func N() int { return rand.Int() }
