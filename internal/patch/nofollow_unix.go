//go:build unix

package patch

import "syscall"

// syscallNoFollow refuses to open the final component if it became a
// symlink between Lstat and open.
const syscallNoFollow = syscall.O_NOFOLLOW
