package sandbox

import (
	"encoding/json"

	"github.com/quavon/quavon/internal/hostname"

	"errors"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/quavon/quavon/internal/secret"
)

// Bounds of the job contract. They reject nonsense; the runner clamps the
// limits of a valid job further to its own ceiling.
const (
	// MaxJobTTL is how far notAfter may lie after issuedAt, and how far ahead
	// of the runner's clock it may lie.
	MaxJobTTL = 15 * time.Minute
	// ClockSkew is the tolerance between worker and runner clocks.
	ClockSkew = 30 * time.Second

	maxCommandBytes  = 4096
	maxEnvValueBytes = 1024
	maxHosts         = 16
	maxArtefacts     = 16
	maxArtefactName  = 64
)

// Purpose says why a job runs; it is logged and selects nothing.
type Purpose string

// The purposes the worker issues.
const (
	PurposeSAST    Purpose = "sast"
	PurposeFixTest Purpose = "fix_test"
	PurposeFixLint Purpose = "fix_lint"
)

// EgressMode is the network a job's setup step gets.
type EgressMode string

// Egress modes. The zero value is not valid: the worker must say none.
const (
	EgressNone       EgressMode = "none"
	EgressRegistries EgressMode = "registries"
)

// SandboxEnvKey is an environment variable a job may set in the sandbox. The set is
// closed: anything that changes what runs, where it loads code from or where
// it sends data (PATH, LD_*, *_PROXY, NODE_OPTIONS, PYTHONPATH …) is absent.
type SandboxEnvKey string

// The allowed environment keys.
const (
	EnvCI                      SandboxEnvKey = "CI"
	EnvLang                    SandboxEnvKey = "LANG"
	EnvLcAll                   SandboxEnvKey = "LC_ALL"
	EnvTZ                      SandboxEnvKey = "TZ"
	EnvNoColor                 SandboxEnvKey = "NO_COLOR"
	EnvForceColor              SandboxEnvKey = "FORCE_COLOR"
	EnvNodeEnv                 SandboxEnvKey = "NODE_ENV"
	EnvPythonDontWriteBytecode SandboxEnvKey = "PYTHONDONTWRITEBYTECODE"
	EnvPythonHashSeed          SandboxEnvKey = "PYTHONHASHSEED"
	EnvGoFlags                 SandboxEnvKey = "GOFLAGS"
	EnvCGOEnabled              SandboxEnvKey = "CGO_ENABLED"
)

var envKeys = []SandboxEnvKey{
	EnvCI, EnvLang, EnvLcAll, EnvTZ, EnvNoColor, EnvForceColor, EnvNodeEnv,
	EnvPythonDontWriteBytecode, EnvPythonHashSeed, EnvGoFlags, EnvCGOEnabled,
}

// Valid reports whether k is in the closed set.
func (k SandboxEnvKey) Valid() bool { return slices.Contains(envKeys, k) }

// SnapshotRef names an encrypted snapshot blob and binds it to a tenant, a
// key and the SHA-256 and size of the compressed plaintext.
type SnapshotRef struct {
	TenantID string `json:"tenantId"`
	BlobID   string `json:"blobId"`
	KeyID    string `json:"keyId"`
	SHA256   string `json:"sha256"`
	Bytes    int64  `json:"bytes"`
}

// Egress is the network policy of the setup step.
type Egress struct {
	Mode  EgressMode `json:"mode"`
	Hosts []string   `json:"hosts,omitempty"`
}

// Limits bound one job. All are required; the runner clamps them to its
// ceiling.
type Limits struct {
	CPUMillis        int64 `json:"cpuMillis"`
	MemoryBytes      int64 `json:"memoryBytes"`
	Pids             int64 `json:"pids"`
	WallClockSeconds int64 `json:"wallClockSeconds"`
	SetupSeconds     int64 `json:"setupSeconds"`
	WorkBytes        int64 `json:"workBytes"`
	TmpBytes         int64 `json:"tmpBytes"`
	OutputBytes      int64 `json:"outputBytes"`
	NoFile           int64 `json:"noFile"`
	FileSizeBytes    int64 `json:"fileSizeBytes"`
}

// SandboxJob is what the worker asks a runner to do. Every field is covered
// by the signature.
type SandboxJob struct {
	ID           string                   `json:"id"`
	Pool         string                   `json:"pool"`
	TenantID     string                   `json:"tenantId"`
	Purpose      Purpose                  `json:"purpose"`
	ImageClass   string                   `json:"imageClass"`
	Base         SnapshotRef              `json:"base"`
	Overlay      *SnapshotRef             `json:"overlay,omitempty"`
	SetupCommand string                   `json:"setupCommand,omitempty"`
	RunCommand   string                   `json:"runCommand"`
	Egress       Egress                   `json:"egress"`
	Env          map[SandboxEnvKey]string `json:"env,omitempty"`
	Limits       Limits                   `json:"limits"`
	Artefacts    []string                 `json:"artefacts,omitempty"`
	IssuedAt     time.Time                `json:"issuedAt"`
	NotAfter     time.Time                `json:"notAfter"`
}

var (
	idRE       = regexp.MustCompile(`^[A-Za-z0-9_-]{8,64}$`)
	tenantRE   = regexp.MustCompile(`^[A-Za-z0-9_-]{1,64}$`)
	blobIDRE   = regexp.MustCompile(`^[0-9a-f]{32}$`)
	keyIDRE    = regexp.MustCompile(`^[0-9a-f]{16}$`)
	sha256RE   = regexp.MustCompile(`^[0-9a-f]{64}$`)
	byoRE      = regexp.MustCompile(`^byo:[a-z0-9][a-z0-9._-]{0,62}$`)
	artefactRE = regexp.MustCompile(`^[A-Za-z0-9_-][A-Za-z0-9._-]*$`)
)

// ImageClasses are the built-in image classes; byo:<name> classes come from
// the instance admin's lockfile.
var ImageClasses = []string{"scanners", "node", "python", "go"}

// reservedArtefacts are written by the entry program itself.
var reservedArtefacts = []string{"exit.json", "stdout.log", "stderr.log", "setup.json"}

// Validate checks everything about a job that does not depend on the clock.
func (j *SandboxJob) Validate() error {
	var errs []error
	bad := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }

	if !idRE.MatchString(j.ID) {
		bad("id: want 8-64 of [A-Za-z0-9_-]")
	}
	if !poolRE.MatchString(j.Pool) {
		bad("pool: want 1-32 of [a-z0-9-]")
	}
	if !tenantRE.MatchString(j.TenantID) {
		bad("tenantId: want 1-64 of [A-Za-z0-9_-]")
	}
	switch j.Purpose {
	case PurposeSAST, PurposeFixTest, PurposeFixLint:
	default:
		bad("purpose %q: unknown", clip(string(j.Purpose)))
	}
	if !slices.Contains(ImageClasses, j.ImageClass) && !byoRE.MatchString(j.ImageClass) {
		bad("imageClass %q: want one of %s or byo:<name>", clip(j.ImageClass), strings.Join(ImageClasses, ", "))
	}
	if err := j.Base.Validate(j.TenantID); err != nil {
		bad("base: %w", err)
	}
	if j.Overlay != nil {
		if err := j.Overlay.Validate(j.TenantID); err != nil {
			bad("overlay: %w", err)
		}
		if j.Overlay.BlobID == j.Base.BlobID {
			bad("overlay: same blob as base")
		}
	}
	if err := validateCommand(j.RunCommand); err != nil {
		bad("runCommand: %w", err)
	}
	if j.SetupCommand != "" {
		if err := validateCommand(j.SetupCommand); err != nil {
			bad("setupCommand: %w", err)
		}
	}
	switch j.Egress.Mode {
	case EgressNone:
		if len(j.Egress.Hosts) != 0 {
			bad("egress: mode none takes no hosts")
		}
	case EgressRegistries:
		if j.SetupCommand == "" {
			bad("egress: registries applies to the setup step, and there is none")
		}
		if len(j.Egress.Hosts) == 0 || len(j.Egress.Hosts) > maxHosts {
			bad("egress: want 1-%d hosts", maxHosts)
		}
		for i, h := range j.Egress.Hosts {
			if err := hostname.Validate(h); err != nil {
				bad("egress.hosts[%d]: %w", i, err)
			} else if slices.Contains(j.Egress.Hosts[:i], h) {
				bad("egress.hosts[%d]: duplicate %q", i, h)
			}
		}
	default:
		bad("egress.mode %q: want none or registries", clip(string(j.Egress.Mode)))
	}
	for k, v := range j.Env {
		if !k.Valid() {
			bad("env: key %q is not allowed", clip(string(k)))
			continue
		}
		if len(v) > maxEnvValueBytes || !printable(v) {
			bad("env %s: want at most %d printable bytes", k, maxEnvValueBytes)
			continue
		}
		if secret.Contains(v) {
			// Never echo the value: it may be a live credential.
			bad("env %s: value looks like a secret", k)
		}
	}
	if err := j.Limits.Validate(); err != nil {
		bad("limits: %w", err)
	}
	if len(j.Artefacts) > maxArtefacts {
		bad("artefacts: at most %d", maxArtefacts)
	}
	for i, a := range j.Artefacts {
		switch {
		case len(a) > maxArtefactName || !artefactRE.MatchString(a):
			bad("artefacts[%d]: want a file name of [A-Za-z0-9._-], at most %d bytes", i, maxArtefactName)
		case slices.Contains(reservedArtefacts, a):
			bad("artefacts[%d]: %s is written by the entry program", i, a)
		case slices.Contains(j.Artefacts[:i], a):
			bad("artefacts[%d]: duplicate %q", i, a)
		}
	}
	if j.IssuedAt.IsZero() || j.NotAfter.IsZero() {
		bad("issuedAt and notAfter are required")
	} else {
		if j.IssuedAt.Location() != time.UTC || j.NotAfter.Location() != time.UTC {
			bad("issuedAt and notAfter must be UTC")
		}
		if !j.NotAfter.After(j.IssuedAt) {
			bad("notAfter must be after issuedAt")
		}
		if j.NotAfter.Sub(j.IssuedAt) > MaxJobTTL {
			bad("notAfter more than %s after issuedAt", MaxJobTTL)
		}
	}
	return errors.Join(errs...)
}

// Validate checks r's form and that it belongs to tenantID.
func (r *SnapshotRef) Validate(tenantID string) error {
	switch {
	case r.TenantID != tenantID:
		return errors.New("tenantId differs from the job's tenant")
	case !blobIDRE.MatchString(r.BlobID):
		return errors.New("blobId: want 32 lowercase hex")
	case !keyIDRE.MatchString(r.KeyID):
		return errors.New("keyId: want 16 lowercase hex")
	case !sha256RE.MatchString(r.SHA256):
		return errors.New("sha256: want 64 lowercase hex")
	case r.Bytes <= 0 || r.Bytes > HardMaxSnapshotBytes:
		return fmt.Errorf("bytes: want 1..%d", HardMaxSnapshotBytes)
	}
	return nil
}

func validateCommand(c string) error {
	if c == "" {
		return errors.New("empty")
	}
	if len(c) > maxCommandBytes {
		return fmt.Errorf("longer than %d bytes", maxCommandBytes)
	}
	if !utf8.ValidString(c) || strings.ContainsRune(c, 0) {
		return errors.New("want UTF-8 without NUL")
	}
	return nil
}

// hardMaxLimits are sanity bounds far above any real ceiling.
var hardMaxLimits = Limits{
	CPUMillis:        64_000,
	MemoryBytes:      64 << 30,
	Pids:             65_536,
	WallClockSeconds: int64(time.Hour / time.Second),
	SetupSeconds:     int64(time.Hour / time.Second),
	WorkBytes:        64 << 30,
	TmpBytes:         64 << 30,
	OutputBytes:      64 << 20,
	NoFile:           1 << 20,
	FileSizeBytes:    64 << 30,
}

func (l *Limits) fields() []struct {
	name string
	v    *int64
} {
	return []struct {
		name string
		v    *int64
	}{
		{"cpuMillis", &l.CPUMillis}, {"memoryBytes", &l.MemoryBytes}, {"pids", &l.Pids},
		{"wallClockSeconds", &l.WallClockSeconds}, {"setupSeconds", &l.SetupSeconds},
		{"workBytes", &l.WorkBytes}, {"tmpBytes", &l.TmpBytes}, {"outputBytes", &l.OutputBytes},
		{"noFile", &l.NoFile}, {"fileSizeBytes", &l.FileSizeBytes},
	}
}

// Validate checks that every limit is positive and within the hard bounds.
// DefaultLimitCeiling is SANDBOX_LIMIT_CEILING unless configured: every
// job's limits are clamped to it.
var DefaultLimitCeiling = Limits{
	CPUMillis: 2000, MemoryBytes: 4 << 30, Pids: 1024, WallClockSeconds: 1800, SetupSeconds: 900,
	WorkBytes: 4 << 30, TmpBytes: 1 << 30, OutputBytes: 8 << 20, NoFile: 4096, FileSizeBytes: 2 << 30,
}

// ParseLimitCeiling decodes a QUAVON_SANDBOX_LIMIT_CEILING value: a JSON
// object naming every limit, strictly; empty means DefaultLimitCeiling.
func ParseLimitCeiling(v string) (Limits, error) {
	if v == "" {
		return DefaultLimitCeiling, nil
	}
	dec := json.NewDecoder(strings.NewReader(v))
	dec.DisallowUnknownFields()
	var l Limits
	if err := dec.Decode(&l); err != nil {
		return Limits{}, fmt.Errorf("QUAVON_SANDBOX_LIMIT_CEILING: want a JSON object of every limit: %w", err)
	}
	if err := l.Validate(); err != nil {
		return Limits{}, fmt.Errorf("QUAVON_SANDBOX_LIMIT_CEILING: %w", err)
	}
	return l, nil
}

func (l Limits) Validate() error {
	max := hardMaxLimits.fields()
	var errs []error
	for i, f := range l.fields() {
		if *f.v <= 0 || *f.v > *max[i].v {
			errs = append(errs, fmt.Errorf("%s: want 1..%d", f.name, *max[i].v))
		}
	}
	if l.SetupSeconds > l.WallClockSeconds {
		errs = append(errs, errors.New("setupSeconds exceeds wallClockSeconds"))
	}
	return errors.Join(errs...)
}

// Clamp returns l with every limit lowered to at most ceiling's.
func (l Limits) Clamp(ceiling Limits) Limits {
	out := l
	cf := ceiling.fields()
	for i, f := range out.fields() {
		*f.v = min(*f.v, *cf[i].v)
	}
	return out
}

func printable(s string) bool {
	if !utf8.ValidString(s) {
		return false
	}
	for _, r := range s {
		if !unicode.IsPrint(r) {
			return false
		}
	}
	return true
}

// clip shortens hostile strings before they reach an error message.
func clip(s string) string {
	const n = 40
	if len(s) <= n {
		return s
	}
	cut := n
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "…"
}

// ValidJobID, ValidTenantID, ValidBlobID and ValidRunnerID report whether s
// has the form the contract gives that id.
func ValidJobID(s string) bool    { return idRE.MatchString(s) }
func ValidTenantID(s string) bool { return tenantRE.MatchString(s) }
func ValidBlobID(s string) bool   { return blobIDRE.MatchString(s) }
func ValidRunnerID(s string) bool { return runnerIDRE.MatchString(s) }
