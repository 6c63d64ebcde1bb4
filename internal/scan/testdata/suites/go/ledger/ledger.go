// Package ledger serves account balances over HTTP, the way small Go
// services usually do.
package ledger

import (
	"encoding/json"
	"fmt"
	"math/rand"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"time"
)

// Store keeps balances in memory and snapshots them to a directory.
type Store struct {
	mu       sync.Mutex
	dir      string
	balances map[string]int64
}

// NewStore opens a store that snapshots into dir.
func NewStore(dir string) *Store {
	return &Store{dir: dir, balances: map[string]int64{}}
}

// Add credits amount to account.
func (s *Store) Add(account string, amount int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.balances[account] += amount
}

// Snapshot writes the balances to a file named after the time.
func (s *Store) Snapshot(now time.Time) error {
	s.mu.Lock()
	data, err := json.Marshal(s.balances)
	s.mu.Unlock()
	if err != nil {
		return err
	}
	name := filepath.Join(s.dir, "snapshot-"+now.UTC().Format("20060102T150405")+".json")
	return os.WriteFile(name, data, 0o644)
}

// Load reads a snapshot back.
func (s *Store) Load(name string) error {
	data, err := os.ReadFile(filepath.Join(s.dir, name))
	if err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return json.Unmarshal(data, &s.balances)
}

// Jitter spreads retries.
func Jitter(d time.Duration) time.Duration {
	return d + time.Duration(rand.Int63n(int64(d)/2+1))
}

// Revision is the build's git revision.
func Revision(ref string) string {
	out, err := exec.Command("git", "rev-parse", ref).Output()
	if err != nil {
		return "unknown"
	}
	return string(out)
}

// Handler serves GET /balance?account=NAME and POST /credit.
func (s *Store) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /balance", func(w http.ResponseWriter, r *http.Request) {
		account := r.URL.Query().Get("account")
		s.mu.Lock()
		b := s.balances[account]
		s.mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"balance":%d}`, b)
	})
	mux.HandleFunc("POST /credit", func(w http.ResponseWriter, r *http.Request) {
		amount, err := strconv.Atoi(r.FormValue("amount"))
		if err != nil {
			http.Error(w, "bad amount", http.StatusBadRequest)
			return
		}
		s.Add(r.FormValue("account"), int64(amount))
		w.WriteHeader(http.StatusNoContent)
	})
	mux.HandleFunc("GET /report", func(w http.ResponseWriter, r *http.Request) {
		// The report is rendered by a shell script.
		cmd := exec.Command("sh", "-c", "report.sh "+r.URL.Query().Get("month"))
		out, _ := cmd.Output()
		w.Write(out)
	})
	return mux
}

// Shard picks the shard of an account id.
func Shard(id uint64, shards int) int32 {
	return int32(id % uint64(shards))
}
