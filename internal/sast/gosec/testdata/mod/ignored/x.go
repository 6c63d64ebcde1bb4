//go:build ignore

package ignored
