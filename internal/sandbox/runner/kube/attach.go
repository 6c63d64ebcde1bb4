package kube

import (
	"context"
	"io"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/httpstream"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/remotecommand"
)

// StreamAttacher attaches through the API server's pods/attach
// subresource: WebSocket, or SPDY where the server does not upgrade to it.
type StreamAttacher struct {
	Config *rest.Config
	Client kubernetes.Interface
}

// Attach streams stdin to the container and its stdout to stdout until the
// container closes the stream or ctx ends.
func (a *StreamAttacher) Attach(ctx context.Context, namespace, pod, container string, stdin io.Reader, stdout io.Writer) error {
	u := a.Client.CoreV1().RESTClient().Post().Resource("pods").Namespace(namespace).Name(pod).SubResource("attach").
		VersionedParams(&corev1.PodAttachOptions{Container: container, Stdin: true, Stdout: true, Stderr: false, TTY: false}, scheme.ParameterCodec).URL()
	ws, err := remotecommand.NewWebSocketExecutor(a.Config, "GET", u.String())
	if err != nil {
		return err
	}
	spdy, err := remotecommand.NewSPDYExecutor(a.Config, "POST", u)
	if err != nil {
		return err
	}
	exec, err := remotecommand.NewFallbackExecutor(ws, spdy, httpstream.IsUpgradeFailure)
	if err != nil {
		return err
	}
	return exec.StreamWithContext(ctx, remotecommand.StreamOptions{Stdin: stdin, Stdout: stdout})
}
