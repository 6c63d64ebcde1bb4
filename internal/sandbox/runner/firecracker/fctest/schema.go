package fctest

import (
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"sort"
)

// The definitions of Firecracker's OpenAPI description
// (src/firecracker/swagger/firecracker.yaml) for the requests the runner
// sends. Firecracker decodes with serde and deny_unknown_fields: unknown
// properties, missing required ones and wrong types are all 400s.

type prop struct {
	kind     string // string, boolean, integer, object
	enum     []string
	min, max int64 // integers; max 0 = none
}

// Schema is one definition.
type Schema struct {
	Name     string
	required []string
	props    map[string]prop
}

var (
	str     = prop{kind: "string"}
	boolean = prop{kind: "boolean"}
	object  = prop{kind: "object"}
)

// The definitions.
var (
	BootSourceSchema = Schema{"BootSource", []string{"kernel_image_path"}, map[string]prop{
		"boot_args": str, "initrd_path": str, "kernel_image_path": str}}
	DriveSchema = Schema{"Drive", []string{"drive_id", "is_root_device"}, map[string]prop{
		"drive_id": str, "partuuid": str, "is_root_device": boolean,
		"cache_type":   {kind: "string", enum: []string{"Unsafe", "Writeback"}},
		"is_read_only": boolean, "path_on_host": str, "rate_limiter": object,
		"io_engine": {kind: "string", enum: []string{"Sync", "Async"}}, "socket": str}}
	MachineConfigurationSchema = Schema{"MachineConfiguration", []string{"mem_size_mib", "vcpu_count"}, map[string]prop{
		"cpu_template": {kind: "string", enum: []string{"C3", "T2", "T2S", "T2CL", "T2A", "V1N1", "None"}},
		"smt":          boolean, "mem_size_mib": {kind: "integer", min: 1}, "track_dirty_pages": boolean,
		"vcpu_count": {kind: "integer", min: 1, max: 32},
		"huge_pages": {kind: "string", enum: []string{"None", "Transparent", "2M"}}}}
	VsockSchema = Schema{"Vsock", []string{"guest_cid", "uds_path"}, map[string]prop{
		"guest_cid": {kind: "integer", min: 3}, "uds_path": str, "vsock_id": str}}
	EntropyDeviceSchema    = Schema{"EntropyDevice", nil, map[string]prop{"rate_limiter": object}}
	NetworkInterfaceSchema = Schema{"NetworkInterface", []string{"host_dev_name", "iface_id"}, map[string]prop{
		"guest_mac": str, "host_dev_name": str, "iface_id": str, "mtu": {kind: "integer", min: 68, max: 65535},
		"rx_rate_limiter": object, "tx_rate_limiter": object}}
	InstanceActionInfoSchema = Schema{"InstanceActionInfo", []string{"action_type"}, map[string]prop{
		"action_type": {kind: "string", enum: []string{"FlushMetrics", "InstanceStart", "SendCtrlAltDel"}}}}
)

// check returns why body does not match s, or "".
func check(s Schema, body map[string]any) string {
	if body == nil {
		return s.Name + ": a JSON object is required"
	}
	keys := make([]string, 0, len(body))
	for k := range body {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		p, ok := s.props[k]
		if !ok {
			return fmt.Sprintf("%s: unknown field `%s`", s.Name, k)
		}
		if msg := p.check(body[k]); msg != "" {
			return fmt.Sprintf("%s.%s: %s", s.Name, k, msg)
		}
	}
	for _, k := range s.required {
		if _, ok := body[k]; !ok {
			return fmt.Sprintf("%s: missing field `%s`", s.Name, k)
		}
	}
	return ""
}

func (p prop) check(v any) string {
	switch p.kind {
	case "string":
		s, ok := v.(string)
		if !ok {
			return "invalid type: want a string"
		}
		if p.enum != nil && !slices.Contains(p.enum, s) {
			return fmt.Sprintf("unknown variant `%s`", s)
		}
	case "boolean":
		if _, ok := v.(bool); !ok {
			return "invalid type: want a boolean"
		}
	case "integer":
		n, ok := v.(json.Number)
		i, err := n.Int64()
		if !ok || err != nil {
			return "invalid type: want an integer"
		}
		if i < p.min || p.max != 0 && i > p.max {
			return fmt.Sprintf("%d out of range", i)
		}
	case "object":
		if _, ok := v.(map[string]any); !ok {
			return "invalid type: want an object"
		}
	}
	return ""
}

// Check exposes the validator to tests of the fake itself.
func Check(s Schema, body map[string]any) string { return check(s, body) }

// Handle runs one request against a fresh fake's state machine (tests of
// the fake itself); it never starts a guest.
type Machine struct{ s *fc }

// NewMachine returns a fake's API state machine without a chroot.
func NewMachine() *Machine {
	return &Machine{s: &fc{drives: map[string]map[string]any{}, cfg: &Config{}}}
}

// Do applies a request given as JSON; booted skips the guest at start.
func (m *Machine) Do(method, path, body string) (int, string) {
	var b map[string]any
	if body != "" {
		d := json.NewDecoder(stringReader(body))
		d.UseNumber()
		if err := d.Decode(&b); err != nil {
			return 400, err.Error()
		}
	}
	if path == "/actions" && b != nil && b["action_type"] == "InstanceStart" && m.s.boot != nil && !m.s.started {
		m.s.started = true // no guest in this mode
		return 204, ""
	}
	return m.s.handle(method, path, b)
}

type sr struct {
	s string
	i int
}

func (r *sr) Read(p []byte) (int, error) {
	if r.i >= len(r.s) {
		return 0, io.EOF
	}
	n := copy(p, r.s[r.i:])
	r.i += n
	return n, nil
}

func stringReader(s string) *sr { return &sr{s: s} }
