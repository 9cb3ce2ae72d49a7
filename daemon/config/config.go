package config

import (
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Where plinthd looks for its configuration when no flag says otherwise.
const (
	DefaultConfigFile = "/etc/plinth/plinthd.yaml"
	DefaultConfigDir  = "/etc/plinth/plinthd.d"
)

// Config is plinthd's configuration as written in YAML (camelCase field names).
//
// To add a field: add it here with a json tag (no omitempty, so a round trip through
// YAML keeps false and zero values), give it a default in Defaults, check it in
// validate. Unknown-field and type checking follow the struct by reflection, so they
// need no change; only types the schema walker knows are allowed (strings, bools,
// numbers, maps with string keys, slices, structs, pointers, and types that implement
// json.Unmarshaler such as metav1.Duration).
type Config struct {
	// Kubeconfig is the path of the kubeconfig used to reach the control service.
	// Empty means standalone mode: no control service at all.
	Kubeconfig string `json:"kubeconfig"`
	// HostnameOverride replaces the machine's hostname as the Node name.
	HostnameOverride string `json:"hostnameOverride"`
	// NodeIP is the address reported in the Node's status; empty means detect it.
	NodeIP string `json:"nodeIP"`
	// RegisterNode makes plinthd create its Node object.
	RegisterNode bool `json:"registerNode"`
	// NodeLabels are added to the Node when it registers.
	NodeLabels map[string]string `json:"nodeLabels"`
	// RegisterWithTaints are put on the Node when it registers.
	RegisterWithTaints []corev1.Taint `json:"registerWithTaints"`
	// NodeLeaseDurationSeconds is the Lease's spec.leaseDurationSeconds.
	NodeLeaseDurationSeconds int32 `json:"nodeLeaseDurationSeconds"`
	// NodeStatusUpdateFrequency is how often plinthd computes node status.
	NodeStatusUpdateFrequency metav1.Duration `json:"nodeStatusUpdateFrequency"`
	// NodeStatusReportFrequency is how often an unchanged status is still posted.
	NodeStatusReportFrequency metav1.Duration `json:"nodeStatusReportFrequency"`
	// HealthzBindAddress is the host:port of the /healthz endpoint.
	HealthzBindAddress string `json:"healthzBindAddress"`
	// LockFile is the file locked so that only one plinthd runs per node.
	LockFile string `json:"lockFile"`
	// StateDir holds plinthd's state (pki, seccomp, images, pods, checkpoints).
	StateDir string `json:"stateDir"`
	// MaxPods is the pod capacity the Node reports.
	MaxPods int32 `json:"maxPods"`
	// SystemReserved is kept back for the operating system: resource name -> quantity.
	SystemReserved map[string]string `json:"systemReserved"`
	// KubeReserved is kept back for plinthd and its helpers: resource name -> quantity.
	KubeReserved map[string]string `json:"kubeReserved"`
}

// Defaults returns the configuration used where neither a file nor a flag says
// otherwise. Every call returns fresh maps and slices, so callers may modify the result.
func Defaults() Config {
	return Config{
		RegisterNode:              true,
		NodeLeaseDurationSeconds:  40,
		NodeStatusUpdateFrequency: metav1.Duration{Duration: 10 * time.Second},
		NodeStatusReportFrequency: metav1.Duration{Duration: 5 * time.Minute},
		HealthzBindAddress:        "127.0.0.1:10248",
		LockFile:                  "/run/plinth/plinthd.lock",
		StateDir:                  "/var/lib/plinth",
		MaxPods:                   110,
	}
}
