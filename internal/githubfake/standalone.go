package githubfake

import (
	"fmt"
	"log/slog"
	"sync"
	"testing"
)

// standaloneTB lets the emulator run outside a test (`quavon dev`'s
// quavon-dev-github): helpers that would fail a test panic with the
// message instead (inside a request, net/http turns that into a closed
// connection), errors are logged, and cleanups run at Close.
type standaloneTB struct {
	testing.TB // nil: only the methods below are called
	log        *slog.Logger
	mu         sync.Mutex
	cleanups   []func()
}

func (t *standaloneTB) Helper() {}

func (t *standaloneTB) Fatalf(format string, args ...any) {
	msg := fmt.Sprintf(format, args...)
	t.log.Error("emulator", "error", msg)
	panic(msg)
}

func (t *standaloneTB) Errorf(format string, args ...any) {
	t.log.Error("emulator", "error", fmt.Sprintf(format, args...))
}

func (t *standaloneTB) Cleanup(f func()) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.cleanups = append(t.cleanups, f)
}

func (t *standaloneTB) close() {
	t.mu.Lock()
	fs := t.cleanups
	t.cleanups = nil
	t.mu.Unlock()
	for i := len(fs) - 1; i >= 0; i-- {
		fs[i]()
	}
}

// NewStandalone starts an emulator outside a test, on 127.0.0.1 with a
// free port (s.URL); close stops it after the deliveries under way.
func NewStandalone(log *slog.Logger) (s *Server, close func()) {
	tb := &standaloneTB{log: log}
	return New(tb), tb.close
}
