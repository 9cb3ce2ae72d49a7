package node

import (
	"fmt"
	"net"
	"os"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/util/validation"
)

// Defaults from the Kubernetes Nodes and Leases documentation and kubelet.
const (
	DefaultLeaseDuration         = 40 * time.Second
	DefaultStatusUpdateFrequency = 10 * time.Second
	DefaultStatusReportFrequency = 5 * time.Minute
	DefaultMaxPods               = 110

	// LeaseNamespace holds one Lease per node, named after the node.
	LeaseNamespace = "kube-node-lease"
)

// Config says what Node to register and how often to heartbeat and report.
type Config struct {
	// NodeName is the Node object's name; see NodeName. It is also the
	// kubernetes.io/hostname label, the Hostname address and the Lease holder.
	NodeName string
	// Labels are added to the Node besides the standard kubernetes.io/arch, os and
	// hostname labels; a configured label overrides a standard one, as in kubelet.
	Labels map[string]string
	// Taints are set when the Node is created, never reconciled afterwards, so an
	// operator's later untaint sticks.
	Taints []corev1.Taint
	// NodeIP is the InternalIP address; nil means the default route's IPv4 source.
	NodeIP net.IP
	// RegisterNode makes Register create or reconcile the Node; when false Register
	// does nothing and the Node is expected to exist.
	RegisterNode bool
	// LeaseDuration is the Lease's leaseDurationSeconds (whole seconds); the Lease is
	// renewed every quarter of it.
	LeaseDuration time.Duration
	// StatusUpdateFrequency is how often status is computed and compared.
	StatusUpdateFrequency time.Duration
	// StatusReportFrequency is how often status is posted even when unchanged.
	StatusReportFrequency time.Duration
	// MaxPods is the Node's pod capacity.
	MaxPods int32
	// SystemReserved and KubeReserved are subtracted from capacity to give
	// allocatable.
	SystemReserved, KubeReserved corev1.ResourceList
	// StateDir's filesystem gives the ephemeral-storage capacity.
	StateDir string
	// APIPort is the node API's port, reported as
	// status.daemonEndpoints.kubeletEndpoint.port (the control service dials it for
	// logs); 0 reports none.
	APIPort int32
}

// DefaultConfig returns the defaults for the node named name: registration on, a 40 s
// lease, status checked every 10 s and reported at least every 5 min, 110 pods,
// state in /var/lib/plinth.
func DefaultConfig(name string) Config {
	return Config{
		NodeName:              name,
		RegisterNode:          true,
		LeaseDuration:         DefaultLeaseDuration,
		StatusUpdateFrequency: DefaultStatusUpdateFrequency,
		StatusReportFrequency: DefaultStatusReportFrequency,
		MaxPods:               DefaultMaxPods,
		StateDir:              "/var/lib/plinth",
	}
}

// withDefaults fills zero durations and MaxPods with the defaults, so a partly filled
// Config behaves like kubelet's.
func (c Config) withDefaults() Config {
	if c.LeaseDuration == 0 {
		c.LeaseDuration = DefaultLeaseDuration
	}
	if c.StatusUpdateFrequency == 0 {
		c.StatusUpdateFrequency = DefaultStatusUpdateFrequency
	}
	if c.StatusReportFrequency == 0 {
		c.StatusReportFrequency = DefaultStatusReportFrequency
	}
	if c.MaxPods == 0 {
		c.MaxPods = DefaultMaxPods
	}
	return c
}

func (c Config) validate() error {
	if errs := validation.IsDNS1123Subdomain(c.NodeName); len(errs) > 0 {
		return fmt.Errorf("node config: NodeName %q: %s", c.NodeName, strings.Join(errs, "; "))
	}
	if c.LeaseDuration < time.Second || c.LeaseDuration%time.Second != 0 {
		return fmt.Errorf("node config: LeaseDuration %s: want a whole number of seconds, at least 1s", c.LeaseDuration)
	}
	if c.StatusUpdateFrequency < 0 {
		return fmt.Errorf("node config: StatusUpdateFrequency %s: want a positive duration", c.StatusUpdateFrequency)
	}
	if c.StatusReportFrequency < 0 {
		return fmt.Errorf("node config: StatusReportFrequency %s: want a positive duration", c.StatusReportFrequency)
	}
	if c.MaxPods < 0 {
		return fmt.Errorf("node config: MaxPods %d: want a positive number", c.MaxPods)
	}
	for field, rl := range map[string]corev1.ResourceList{"SystemReserved": c.SystemReserved, "KubeReserved": c.KubeReserved} {
		for name, q := range rl {
			if q.Sign() < 0 {
				return fmt.Errorf("node config: %s[%s] %s: want a quantity of 0 or more", field, name, q.String())
			}
		}
	}
	return nil
}

// NodeName returns the Node name for this machine: hostnameOverride when set, else the
// kernel's hostname, lowercased as kubelet does, and checked to be a DNS subdomain
// (RFC 1123), which Node names must be.
func NodeName(hostnameOverride string) (string, error) {
	name := strings.TrimSpace(hostnameOverride)
	source := "hostnameOverride"
	if name == "" {
		h, err := os.Hostname()
		if err != nil {
			return "", fmt.Errorf("node name: reading hostname: %w", err)
		}
		name, source = h, "hostname"
	}
	name = strings.ToLower(name)
	if errs := validation.IsDNS1123Subdomain(name); len(errs) > 0 {
		return "", fmt.Errorf("node name from %s %q is not a valid Node name: %s", source, name, strings.Join(errs, "; "))
	}
	return name, nil
}

// ResourceListFromStrings turns a configuration map such as systemReserved
// ({"cpu": "500m", "memory": "1Gi"}) into a ResourceList; field names the setting in
// errors.
func ResourceListFromStrings(field string, in map[string]string) (corev1.ResourceList, error) {
	if len(in) == 0 {
		return nil, nil
	}
	out := make(corev1.ResourceList, len(in))
	for name, v := range in {
		q, err := resource.ParseQuantity(v)
		if err != nil {
			return nil, fmt.Errorf("%s[%s]: %q is not a quantity (for example 500m, 1Gi): %w", field, name, v, err)
		}
		if q.Sign() < 0 {
			return nil, fmt.Errorf("%s[%s]: %q is negative; want 0 or more", field, name, v)
		}
		out[corev1.ResourceName(name)] = q
	}
	return out, nil
}
