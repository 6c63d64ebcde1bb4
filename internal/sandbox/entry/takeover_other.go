//go:build !linux

package entry

// takeOver does nothing outside Linux: the entry program runs only in Linux
// containers; elsewhere the package is built for its protocol.
func (c *Config) takeOver() (release func()) { return func() {} }
