package b

import (
	"math/rand"

	"example.com/mod/c"
)

// N is not random enough.
func N() int { return rand.Int() + c.Seed }
