package sandbox

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/quavon/quavon/internal/canonical"
)

func TestKeyRules(t *testing.T) {
	t.Parallel()
	if _, err := NewKey(make([]byte, 31)); err == nil {
		t.Fatal("31-byte key accepted")
	}
	k := testKey(t, 1)
	// Key id = first 16 hex of SHA-256(key): 32 bytes of 0x01.
	if k.ID() != "72cd6e8422c407fb" {
		t.Fatalf("key id %s", k.ID())
	}
	if strings.Contains(fmt.Sprint(k), string(k.secret)) || strings.Contains(fmt.Sprintf("%+v", k), "\x01\x01") {
		t.Fatal("formatting a key prints its secret")
	}
}

func TestLoadKeyRingFiles(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	write := func(name, content string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	b64 := func(fill byte) string {
		k := bytes.Repeat([]byte{fill}, 32)
		s, _ := json.Marshal(k) // []byte marshals as standard base64
		return strings.Trim(string(s), `"`)
	}
	cur := write("cur", b64(1)+"\n")
	prev := write("prev", "# rotated 2026-11\n"+b64(2)+"\n\n"+b64(3)+"\n")
	r, err := LoadKeyRing(cur, prev)
	if err != nil {
		t.Fatal(err)
	}
	if ids := r.IDs(); len(ids) != 3 || ids[0] != testKey(t, 1).ID() {
		t.Fatalf("ids %v", ids)
	}
	short := write("short", "c2hvcnQ=\n")
	if _, err := LoadKeyRing(short, ""); err == nil || !strings.Contains(err.Error(), "at least 32") {
		t.Fatalf("short key: %v", err)
	}
	hexKey := write("hex", strings.Repeat("!@", 32))
	if _, err := LoadKeyRing(hexKey, ""); err == nil || strings.Contains(err.Error(), "!@") {
		t.Fatalf("non-base64 key: %v (must fail without echoing the key)", err)
	}
	if _, err := LoadKeyRing(filepath.Join(dir, "missing"), ""); err == nil {
		t.Fatal("missing file accepted")
	}
}

func TestSignOpenRoundTrip(t *testing.T) {
	t.Parallel()
	r := testRing(t, testKey(t, 1))
	job := validJob()
	env, err := SignJob(r, job)
	if err != nil {
		t.Fatal(err)
	}
	got, err := OpenJob(r, env)
	if err != nil {
		t.Fatal(err)
	}
	a, _ := canonical.JSON(job)
	b, _ := canonical.JSON(got)
	if !bytes.Equal(a, b) {
		t.Fatalf("round trip changed the job:\n%s\n%s", a, b)
	}
	// The signature is over the domain string, a newline and the canonical
	// JSON, recomputed here by hand.
	var e Envelope
	if err := json.Unmarshal(env, &e); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(e.Payload, a) {
		t.Fatal("payload is not the canonical JSON")
	}
	if e.Signature != fmt.Sprintf("%x", mac(r.Current(), JobDomain, a)) {
		t.Fatal("signature differs from HMAC-SHA256(key, domain\\n canonical)")
	}
	// A job signature is not a result signature.
	if _, err := OpenResult(r, env); !errors.Is(err, ErrBadSignature) {
		t.Fatalf("job envelope opened as a result: %v", err)
	}
}

// resign replaces the payload and signs it as given (bypassing Validate), the
// way a forger holding the key would.
func resign(t *testing.T, k Key, payload []byte) []byte {
	t.Helper()
	c, err := canonical.Transform(payload)
	if err != nil {
		t.Fatal(err)
	}
	env, _ := json.Marshal(Envelope{KeyID: k.ID(), Signature: fmt.Sprintf("%x", mac(k, JobDomain, c)), Payload: c})
	return env
}

func TestVerifyOutcomes(t *testing.T) {
	t.Parallel()
	cur, prev, other := testKey(t, 1), testKey(t, 2), testKey(t, 9)
	ring := testRing(t, cur, prev)
	signWith := func(k Key, j *SandboxJob) []byte {
		env, err := SignJob(testRing(t, k), j)
		if err != nil {
			t.Fatal(err)
		}
		return env
	}
	good := signWith(cur, validJob())
	var e Envelope
	_ = json.Unmarshal(good, &e)

	expired := validJob()
	expired.IssuedAt, expired.NotAfter = testNow.Add(-10*time.Minute), testNow.Add(-31*time.Second)
	withinSkew := validJob()
	withinSkew.NotAfter = testNow.Add(-29 * time.Second)
	withinSkew.IssuedAt = withinSkew.NotAfter.Add(-time.Minute)
	ahead := validJob()
	ahead.IssuedAt, ahead.NotAfter = testNow.Add(5*time.Minute), testNow.Add(16*time.Minute)
	aheadIssued := validJob()
	aheadIssued.IssuedAt = testNow.Add(time.Minute)
	otherPool := validJob()
	otherPool.Pool = "acme"
	invalid := validJob()
	invalid.ImageClass = "node:latest"
	invalidJSON, _ := json.Marshal(invalid)
	miscased := bytes.Replace(mustJSON(t, validJob()), []byte(`"runCommand"`), []byte(`"RunCommand"`), 1)
	emptyEnv := bytes.Replace(mustJSON(t, withoutEnv(validJob())), []byte(`"egress"`), []byte(`"env":{},"egress"`), 1)
	unknownField := bytes.Replace(mustJSON(t, validJob()), []byte(`"runCommand"`), []byte(`"privileged":true,"runCommand"`), 1)
	wrongType := bytes.Replace(mustJSON(t, validJob()), []byte(`"pids":256`), []byte(`"pids":"256"`), 1)

	cases := []struct {
		name string
		env  []byte
		want error
	}{
		{"valid", good, nil},
		{"previous key", signWith(prev, validJob()), nil},
		{"within skew", signWith(cur, withinSkew), nil},
		{"empty", []byte{}, ErrMalformedEnvelope},
		{"not json", []byte("job"), ErrMalformedEnvelope},
		{"unsigned", mustJSON(t, map[string]any{"keyId": cur.ID(), "payload": json.RawMessage(e.Payload)}), ErrMalformedEnvelope},
		{"empty sig", mustJSON(t, Envelope{KeyID: cur.ID(), Payload: e.Payload}), ErrMalformedEnvelope},
		{"upper-case sig", mustJSON(t, Envelope{KeyID: cur.ID(), Signature: strings.ToUpper(e.Signature), Payload: e.Payload}), ErrMalformedEnvelope},
		{"extra envelope field", bytes.Replace(good, []byte(`{`), []byte(`{"alg":"none",`), 1), ErrMalformedEnvelope},
		{"payload array", mustJSON(t, Envelope{KeyID: cur.ID(), Signature: e.Signature, Payload: json.RawMessage(`[1]`)}), ErrMalformedEnvelope},
		{"duplicate key", bytes.Replace(good, []byte(`"id":`), []byte(`"id":"x","id":`), 1), ErrMalformedEnvelope},
		{"trailing data", append(bytes.Clone(good), []byte(`{}`)...), ErrMalformedEnvelope},
		{"oversize", append(bytes.Clone(good), bytes.Repeat([]byte(" "), MaxJobEnvelopeBytes)...), ErrMalformedEnvelope},
		{"unknown key id", signWith(other, validJob()), ErrUnknownKey},
		{"wrong key, current id", mustJSON(t, Envelope{KeyID: cur.ID(), Signature: fmt.Sprintf("%x", mac(other, JobDomain, e.Payload)), Payload: e.Payload}), ErrBadSignature},
		{"result domain", mustJSON(t, Envelope{KeyID: cur.ID(), Signature: fmt.Sprintf("%x", mac(cur, ResultDomain, e.Payload)), Payload: e.Payload}), ErrBadSignature},
		{"schema-invalid signed", resign(t, cur, invalidJSON), ErrSchemaInvalid},
		{"mis-cased field signed", resign(t, cur, miscased), ErrSchemaInvalid},
		{"empty optional signed", resign(t, cur, emptyEnv), ErrSchemaInvalid},
		{"unknown field signed", resign(t, cur, unknownField), ErrSchemaInvalid},
		{"wrong type signed", resign(t, cur, wrongType), ErrSchemaInvalid},
		{"other pool", signWith(cur, otherPool), ErrSchemaInvalid},
		{"expired", signWith(cur, expired), ErrExpired},
		{"too far ahead", signWith(cur, ahead), ErrTooFarAhead},
		{"issued in the future", signWith(cur, aheadIssued), ErrTooFarAhead},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			v, err := NewVerifier(ring, DefaultPool, &memGuard{}, func() time.Time { return testNow })
			if err != nil {
				t.Fatal(err)
			}
			job, err := v.Verify(context.Background(), c.env)
			if c.want == nil {
				if err != nil || job == nil {
					t.Fatalf("Verify = %v", err)
				}
				return
			}
			if !errors.Is(err, c.want) || job != nil {
				t.Fatalf("Verify = %v, want %v", err, c.want)
			}
			if c.name == "too far ahead" && !strings.Contains(err.Error(), "notAfter") ||
				c.name == "issued in the future" && !strings.Contains(err.Error(), "issuedAt") {
				// Both checks report ErrTooFarAhead; each must still fire on its own.
				t.Fatalf("Verify = %v names the wrong field", err)
			}
			for _, other := range []error{ErrMalformedEnvelope, ErrUnknownKey, ErrBadSignature, ErrSchemaInvalid, ErrExpired, ErrTooFarAhead, ErrReplayed} {
				if other != c.want && errors.Is(err, other) {
					t.Fatalf("Verify = %v matches both %v and %v", err, c.want, other)
				}
			}
		})
	}
}

func mustJSON(t *testing.T, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func withoutEnv(j *SandboxJob) *SandboxJob { j.Env = nil; return j }

func TestVerifyReplayAndRotation(t *testing.T) {
	t.Parallel()
	cur, prev := testKey(t, 1), testKey(t, 2)
	guard := &memGuard{}
	clock := func() time.Time { return testNow }
	v, _ := NewVerifier(testRing(t, cur, prev), DefaultPool, guard, clock)
	env, _ := SignJob(testRing(t, prev), validJob())
	if _, err := v.Verify(context.Background(), env); err != nil {
		t.Fatalf("previous key: %v", err)
	}
	if _, err := v.Verify(context.Background(), env); !errors.Is(err, ErrReplayed) {
		t.Fatalf("second delivery: %v, want replayed", err)
	}
	// After rotation removes the key, its jobs no longer verify.
	j := validJob()
	j.ID = "job-0002-abcdef"
	env, _ = SignJob(testRing(t, prev), j)
	v2, _ := NewVerifier(testRing(t, cur), DefaultPool, guard, clock)
	if _, err := v2.Verify(context.Background(), env); !errors.Is(err, ErrUnknownKey) {
		t.Fatalf("removed key: %v, want unknown key", err)
	}
	// A job that fails verification does not burn its id.
	if guard.seen[j.ID] {
		t.Fatal("rejected job was remembered as seen")
	}
}

// TestEveryTamperedFieldIsRejected changes each value in a signed job, one
// at a time, and keeps the signature.
func TestEveryTamperedFieldIsRejected(t *testing.T) {
	t.Parallel()
	r := testRing(t, testKey(t, 1))
	env, err := SignJob(r, validJob())
	if err != nil {
		t.Fatal(err)
	}
	var e Envelope
	_ = json.Unmarshal(env, &e)
	var payload any
	_ = json.Unmarshal(e.Payload, &payload)
	n := 0
	for _, mutated := range mutations(payload) {
		n++
		p, _ := json.Marshal(mutated)
		forged, _ := json.Marshal(Envelope{KeyID: e.KeyID, Signature: e.Signature, Payload: p})
		if _, err := OpenJob(r, forged); !errors.Is(err, ErrBadSignature) {
			t.Errorf("tampered payload %s: %v, want bad signature", p, err)
		}
	}
	if n < 40 {
		t.Fatalf("only %d mutations generated", n)
	}
}

// mutations returns copies of v with exactly one leaf changed, one key
// removed or one key added, at every position.
func mutations(v any) []any {
	var out []any
	switch x := v.(type) {
	case map[string]any:
		add := cloneMap(x)
		add["zz"] = true
		out = append(out, add)
		for k, child := range x {
			del := cloneMap(x)
			delete(del, k)
			out = append(out, del)
			for _, m := range mutations(child) {
				c := cloneMap(x)
				c[k] = m
				out = append(out, c)
			}
		}
	case []any:
		for i, child := range x {
			for _, m := range mutations(child) {
				c := append([]any(nil), x...)
				c[i] = m
				out = append(out, c)
			}
		}
		out = append(out, append(append([]any(nil), x...), "extra"))
	case string:
		out = append(out, x+"x")
	case float64:
		out = append(out, x+1)
	case bool:
		out = append(out, !x)
	}
	return out
}

func cloneMap(m map[string]any) map[string]any {
	c := make(map[string]any, len(m))
	for k, v := range m {
		c[k] = v
	}
	return c
}

func FuzzOpenJob(f *testing.F) {
	r := testRing(f, testKey(f, 1))
	good, err := SignJob(r, validJob())
	if err != nil {
		f.Fatal(err)
	}
	f.Add(good)
	f.Add([]byte(`{"keyId":"0123456789abcdef","sig":"00","payload":{}}`))
	f.Add([]byte(`{"keyId":"","sig":"","payload":[]}`))
	f.Add(bytes.Replace(good, []byte(`"id":`), []byte(`"id":"x","id":`), 1))
	f.Fuzz(func(t *testing.T, data []byte) {
		job, err := OpenJob(r, data)
		if err != nil {
			if job != nil {
				t.Fatal("job returned with an error")
			}
			if Reason(err) == "" {
				t.Fatalf("error without a reject reason: %v", err)
			}
			return
		}
		if err := job.Validate(); err != nil {
			t.Fatalf("accepted an invalid job: %v", err)
		}
		// Only the exact signed bytes are accepted: re-signing the decoded
		// job reproduces the envelope's payload.
		var e Envelope
		if err := json.Unmarshal(data, &e); err != nil {
			t.Fatal(err)
		}
		c, _ := canonical.JSON(job)
		canon, _ := canonical.Transform(e.Payload)
		if !bytes.Equal(c, canon) {
			t.Fatalf("accepted payload differs from the decoded job")
		}
	})
}
