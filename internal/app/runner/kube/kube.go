// Package kube opens the kube-gvisor backend for the runner binary. It is
// a package of its own so that client-go is linked only by
// quavon-sandbox-runner (cmd/quavon-sandbox-runner adds Open to the
// runner's openers), never by the quavon CLI.
package kube

import (
	"context"
	"fmt"
	"log/slog"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	runnerapp "github.com/quavon/quavon/internal/app/runner"
	"github.com/quavon/quavon/internal/config"
	"github.com/quavon/quavon/internal/sandbox/runner"
	"github.com/quavon/quavon/internal/sandbox/runner/kube"
)

var _ runnerapp.Opener = Open

// Open connects to the cluster (QUAVON_SANDBOX_KUBECONFIG, or the pod's
// in-cluster configuration) and opens the backend.
func Open(ctx context.Context, cfg config.RunnerConfig, _ *runner.Lockfile, log *slog.Logger) (runnerapp.Opened, error) {
	k := cfg.Backends.Kube
	if len(cfg.Runner.Registries) > 0 {
		return nil, fmt.Errorf("kube-gvisor: setup-step egress is not offered on this backend: unset QUAVON_SANDBOX_REGISTRIES")
	}
	var rc *rest.Config
	var err error
	if k.Kubeconfig != "" {
		rc, err = clientcmd.BuildConfigFromFlags("", k.Kubeconfig)
	} else {
		rc, err = rest.InClusterConfig()
	}
	if err != nil {
		return nil, fmt.Errorf("kube-gvisor: cluster configuration: %w", err)
	}
	client, err := kubernetes.NewForConfig(rc)
	if err != nil {
		return nil, fmt.Errorf("kube-gvisor: %w", err)
	}
	return kube.New(ctx, kube.Config{Client: client, Attacher: &kube.StreamAttacher{Config: rc, Client: client},
		Namespace: k.Namespace, RuntimeClass: k.RuntimeClass, StartTimeout: k.StartTimeout, SeccompProfile: k.SeccompProfile, Log: log})
}
