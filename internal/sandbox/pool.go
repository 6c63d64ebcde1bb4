package sandbox

import (
	"fmt"
	"regexp"
)

// DefaultPool is the pool of all hosted runners.
const DefaultPool = "default"

var poolRE = regexp.MustCompile(`^[a-z0-9][a-z0-9-]{0,31}$`)

// ValidatePool refuses a pool name that could not be a key prefix: 1-32 of
// [a-z0-9-], starting with a letter or digit.
func ValidatePool(pool string) error {
	if !poolRE.MatchString(pool) {
		return fmt.Errorf("sandbox pool %q: want 1-32 of [a-z0-9-], starting with a letter or digit", pool)
	}
	return nil
}
