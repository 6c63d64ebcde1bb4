package a

import (
	"crypto/sha1"
	"testing"
)

func TestSum(t *testing.T) { _ = sha1.Sum(nil) }
