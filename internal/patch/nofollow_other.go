//go:build !unix

package patch

const syscallNoFollow = 0
