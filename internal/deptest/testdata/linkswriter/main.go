// Command linkswriter links the GitHub writer, as a binary outside the
// publisher must not: deptest's own test shows its rules catch that.
package main

import _ "github.com/quavon/quavon/internal/github/writer"

func main() {}
