package nodeapi

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
)

// PodSource lists the pods this node runs.
type PodSource interface {
	Pods() []corev1.Pod
}

// LogLocator finds a container's log file; daemon/podlogs.Locator is the real one.
// Errors wrapping podlogs.ErrNotFound answer 404.
type LogLocator interface {
	Locate(namespace, pod, uid, container string, previous bool) (string, error)
}

// ResourceStats gives the CPU and memory figures of /metrics/resource.
type ResourceStats interface {
	NodeStats() (Usage, error)
	// PodStats returns the pods' and their containers' usage; the node without a pod
	// runtime returns none.
	PodStats() ([]PodUsage, error)
}

// Usage is one cgroup's cumulative CPU time and memory working set at a time.
type Usage struct {
	CPU             time.Duration
	WorkingSetBytes uint64
	Time            time.Time
}

// PodUsage is a pod's usage and its containers'.
type PodUsage struct {
	Namespace, Name string
	Usage
	Containers []ContainerUsage
}

// ContainerUsage is one container's usage and start time.
type ContainerUsage struct {
	Name string
	Usage
	StartTime time.Time
}

// Checkpointer checkpoints a running container (runc checkpoint with CRIU) and returns
// the archive's path. It returns an error wrapping ErrCheckpointUnavailable when the
// node cannot checkpoint at all.
type Checkpointer interface {
	Checkpoint(ctx context.Context, namespace, pod, container string) (string, error)
}

// ErrCheckpointUnavailable is wrapped by Checkpointers that cannot checkpoint on this
// node; the node API answers it with 500 and the reason.
var ErrCheckpointUnavailable = errors.New("checkpointing is not available on this node")

// CertificateSource gives the current serving certificate.
type CertificateSource interface {
	GetCertificate(*tls.ClientHelloInfo) (*tls.Certificate, error)
}

// NoPods is the PodSource of a node without a pod runtime.
type NoPods struct{}

// Pods returns none.
func (NoPods) Pods() []corev1.Pod { return nil }

// UnavailableCheckpointer refuses every checkpoint with its reason.
type UnavailableCheckpointer struct{ Reason string }

// Checkpoint implements Checkpointer.
func (u UnavailableCheckpointer) Checkpoint(context.Context, string, string, string) (string, error) {
	return "", fmt.Errorf("%w: %s", ErrCheckpointUnavailable, u.Reason)
}

// ProbeCheckpointing says why this node cannot checkpoint containers, or "" when it
// could: runc checkpoints through the criu binary, which must be on PATH, and a pod
// runtime must implement Checkpointer.
func ProbeCheckpointing(lookPath func(string) (string, error), haveRuntime bool) string {
	if lookPath == nil {
		lookPath = exec.LookPath
	}
	if _, err := lookPath("criu"); err != nil {
		return "criu is not installed (runc checkpoints containers with it)"
	}
	if _, err := lookPath("runc"); err != nil {
		return "runc is not installed"
	}
	if !haveRuntime {
		return "this plinthd has no pod runtime that can checkpoint containers"
	}
	return ""
}

// FileCertificate serves the certificate and key in one PEM file, reread when the file
// changes (the renewer replaces it atomically), so renewal needs no restart.
type FileCertificate struct {
	Path string

	mu      sync.Mutex
	modTime time.Time
	size    int64
	cert    *tls.Certificate
}

// GetCertificate implements CertificateSource.
func (f *FileCertificate) GetCertificate(*tls.ClientHelloInfo) (*tls.Certificate, error) {
	fi, err := os.Stat(f.Path)
	if err != nil {
		return nil, fmt.Errorf("serving certificate: %w", err)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.cert != nil && fi.ModTime().Equal(f.modTime) && fi.Size() == f.size {
		return f.cert, nil
	}
	pair, err := tls.LoadX509KeyPair(f.Path, f.Path)
	if err != nil {
		return nil, fmt.Errorf("serving certificate %s: %w", f.Path, err)
	}
	f.cert, f.modTime, f.size = &pair, fi.ModTime(), fi.Size()
	return f.cert, nil
}
