package firecracker

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"time"
	"unicode/utf8"
)

// Request bodies of Firecracker's API, as its OpenAPI description
// (src/firecracker/swagger/firecracker.yaml) defines them; only the
// properties Quavon sets are listed, and Firecracker refuses unknown ones.

// BootSource is PUT /boot-source.
type BootSource struct {
	KernelImagePath string `json:"kernel_image_path"`
	BootArgs        string `json:"boot_args,omitempty"`
}

// Drive is PUT /drives/{drive_id} (a virtio-block drive: path_on_host and
// is_read_only are required for it).
type Drive struct {
	DriveID      string `json:"drive_id"`
	IsRootDevice bool   `json:"is_root_device"`
	IsReadOnly   bool   `json:"is_read_only"`
	PathOnHost   string `json:"path_on_host"`
}

// MachineConfiguration is PUT /machine-config.
type MachineConfiguration struct {
	VCPUCount  int64 `json:"vcpu_count"`
	MemSizeMiB int64 `json:"mem_size_mib"`
	SMT        bool  `json:"smt"`
}

// Vsock is PUT /vsock.
type Vsock struct {
	GuestCID int64  `json:"guest_cid"`
	UDSPath  string `json:"uds_path"`
}

// EntropyDevice is PUT /entropy (a virtio-rng device).
type EntropyDevice struct{}

// NetworkInterface is PUT /network-interfaces/{iface_id}.
type NetworkInterface struct {
	IfaceID     string `json:"iface_id"`
	HostDevName string `json:"host_dev_name"`
	GuestMAC    string `json:"guest_mac,omitempty"`
}

// InstanceActionInfo is PUT /actions.
type InstanceActionInfo struct {
	ActionType string `json:"action_type"` // FlushMetrics, InstanceStart, SendCtrlAltDel
}

// FirecrackerVersion is GET /version's answer.
type FirecrackerVersion struct {
	FirecrackerVersion string `json:"firecracker_version"`
}

// APIError is Firecracker's error body.
type APIError struct {
	FaultMessage string `json:"fault_message"`
}

// apiClient talks to one Firecracker process over its API socket.
type apiClient struct {
	http *http.Client
}

func newAPIClient(socket string) *apiClient {
	tr := &http.Transport{
		DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			var d net.Dialer
			return d.DialContext(ctx, "unix", socket)
		},
		DisableKeepAlives:     true,
		ResponseHeaderTimeout: 10 * time.Second,
	}
	return &apiClient{http: &http.Client{Transport: tr, Timeout: 15 * time.Second}}
}

// maxAnswer caps what is read of an answer: the process is the VM's and
// not to be trusted with the runner's memory.
const maxAnswer = 16 << 10

func (c *apiClient) do(ctx context.Context, method, path string, body, answer any) error {
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return err
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, "http://localhost"+path, rd)
	if err != nil {
		return err
	}
	req.Header.Set("Accept", "application/json")
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return fmt.Errorf("firecracker API %s %s: %w", method, path, err)
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(io.LimitReader(resp.Body, maxAnswer))
	switch {
	case answer == nil && resp.StatusCode == http.StatusNoContent:
		return nil
	case answer != nil && resp.StatusCode == http.StatusOK:
		if err := json.Unmarshal(data, answer); err != nil {
			return fmt.Errorf("firecracker API %s %s: %w", method, path, err)
		}
		return nil
	}
	var e APIError
	json.Unmarshal(data, &e)
	msg := e.FaultMessage
	if len(msg) > 200 || !utf8.ValidString(msg) {
		msg = strings.ToValidUTF8(msg[:min(len(msg), 200)], "?")
	}
	return fmt.Errorf("firecracker API %s %s: %d %s", method, path, resp.StatusCode, msg)
}

func (c *apiClient) put(ctx context.Context, path string, body any) error {
	return c.do(ctx, http.MethodPut, path, body, nil)
}

// version returns Firecracker's build version.
func (c *apiClient) version(ctx context.Context) (string, error) {
	var v FirecrackerVersion
	if err := c.do(ctx, http.MethodGet, "/version", nil, &v); err != nil {
		return "", err
	}
	return v.FirecrackerVersion, nil
}

// vmConfig is everything one VM is configured with before it starts.
type vmConfig struct {
	Boot    BootSource
	Drives  []Drive
	Machine MachineConfiguration
	Vsock   Vsock
	Net     *NetworkInterface
}

// configure sends the pre-boot configuration and starts the instance, in
// the order of Firecracker's getting-started guide: boot source, drives,
// machine, vsock, entropy, network, InstanceStart.
func (c *apiClient) configure(ctx context.Context, vc vmConfig) error {
	if err := c.put(ctx, "/boot-source", vc.Boot); err != nil {
		return err
	}
	for _, d := range vc.Drives {
		if err := c.put(ctx, "/drives/"+d.DriveID, d); err != nil {
			return err
		}
	}
	if err := c.put(ctx, "/machine-config", vc.Machine); err != nil {
		return err
	}
	if err := c.put(ctx, "/vsock", vc.Vsock); err != nil {
		return err
	}
	if err := c.put(ctx, "/entropy", EntropyDevice{}); err != nil {
		return err
	}
	if vc.Net != nil {
		if err := c.put(ctx, "/network-interfaces/"+vc.Net.IfaceID, vc.Net); err != nil {
			return err
		}
	}
	return c.put(ctx, "/actions", InstanceActionInfo{ActionType: "InstanceStart"})
}
