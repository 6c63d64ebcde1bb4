package eval

import (
	"bytes"
	"os"
	"testing"
)

// task.json comes from users' task directories: strict decoding never
// panics and whatever it accepts validates.
func FuzzDecodeSpec(f *testing.F) {
	if b, err := os.ReadFile(tasksDir + "/go-clamp/task.json"); err == nil {
		f.Add(b)
	}
	f.Add([]byte(`{"id":"a","kind":"adversarial","language":"go","difficulty":"adversarial","license":"Apache-2.0","image_class":"go","policy":{},"fail_to_pass":[],"pass_to_pass":[]}`))
	f.Add([]byte(`{"id":1}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		s, err := DecodeSpec(b)
		if err == nil {
			if verr := s.Validate(); verr != nil {
				t.Fatalf("accepted an invalid spec: %v", verr)
			}
		}
	})
}

// A results file may be torn or edited: decoding never panics, and what
// it returns re-encodes.
func FuzzDecodeResults(f *testing.F) {
	f.Add([]byte(`{"task":"a","kind":"fix","language":"go","difficulty":"one-line","model":"noop","run":1,"resolved":false,"hidden_ran":false,"steps":1,"turns":1,"sandbox_runs":0,"tokens":3,"cost_micros":0,"wall_millis":1}` + "\n" + `{"task":"b`))
	f.Add([]byte("\n\n{}\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		rs, err := DecodeResults(bytes.NewReader(b))
		if err != nil {
			return
		}
		for _, r := range rs {
			if r.Task == "" || r.Model == "" {
				t.Fatalf("accepted %+v", r)
			}
		}
		_ = Markdown(rs)
	})
}

func TestDecodeResultsTornAndBad(t *testing.T) {
	good := `{"task":"a","kind":"fix","language":"go","difficulty":"one-line","model":"noop","run":1,"resolved":true,"hidden_ran":true,"steps":1,"turns":1,"sandbox_runs":0,"tokens":3,"cost_micros":0,"wall_millis":1}`
	rs, err := DecodeResults(bytes.NewReader([]byte(good + "\n" + `{"task":"b`)))
	if err != nil || len(rs) != 1 {
		t.Fatalf("torn last line: %d %v", len(rs), err)
	}
	if _, err := DecodeResults(bytes.NewReader([]byte(`{"task":"b","x":1}` + "\n" + good + "\n"))); err == nil {
		t.Error("a bad line in the middle was accepted")
	}
	s := Summarise(rs)
	if len(s) != 1 || s[0].Resolved != 1 || s[0].ResolveRate != 1 {
		t.Errorf("summary %+v", s[0])
	}
}
