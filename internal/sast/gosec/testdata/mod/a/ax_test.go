package a_test

import (
	"crypto/md5"
	"testing"

	"example.com/mod/a"
)

func TestRunX(t *testing.T) { _ = a.Sum(nil); _ = md5.New() }
