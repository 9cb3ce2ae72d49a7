package registry

import (
	"errors"
	"log/slog"
	"net/netip"
	"time"

	"k8s.io/utils/clock"

	"github.com/plinth/plinth/control/apiserver"
	"github.com/plinth/plinth/control/ipalloc"
)

// Defaults of kube-apiserver's --service-cluster-ip-range and --service-node-port-range.
var (
	DefaultServiceClusterIPRange = netip.MustParsePrefix("10.96.0.0/12")
	DefaultServiceNodePortRange  = ipalloc.PortRange{Base: 30000, Size: 2768}
)

// Config is what the resources need beyond their own code.
type Config struct {
	// Store keeps the cluster IP and node port claims: the API's own store, so that
	// replicas sharing etcd share the claims.
	Store ipalloc.Store
	// ServiceClusterIPRange is where cluster IPs come from; zero means
	// DefaultServiceClusterIPRange.
	ServiceClusterIPRange netip.Prefix
	// ServiceNodePortRange is where node ports come from; zero means
	// DefaultServiceNodePortRange.
	ServiceNodePortRange ipalloc.PortRange
	// EventTTL is how long events live; zero means DefaultEventTTL.
	EventTTL time.Duration
	// Clock stamps conditions and claims; nil is the real clock.
	Clock clock.PassiveClock
	// Logger receives claims that could not be released; nil discards.
	Logger *slog.Logger
	// AllocationSeed makes dynamic allocation reproducible in tests; 0 is random.
	AllocationSeed uint64
	// NodeLogs serves pods/log by asking the pod's node; nil leaves pods/log unserved.
	NodeLogs NodeLogProxy
}

func (cfg Config) withDefaults() (Config, error) {
	if cfg.Store == nil {
		return cfg, errors.New("registry: Config.Store is required for cluster IP and node port claims")
	}
	if !cfg.ServiceClusterIPRange.IsValid() {
		cfg.ServiceClusterIPRange = DefaultServiceClusterIPRange
	}
	if cfg.ServiceNodePortRange.Size == 0 {
		cfg.ServiceNodePortRange = DefaultServiceNodePortRange
	}
	if cfg.Clock == nil {
		cfg.Clock = clock.RealClock{}
	}
	return cfg, nil
}

// Resources returns every resource the control service serves.
func Resources(cfg Config) ([]*apiserver.Resource, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	opts := ipalloc.Options{Clock: cfg.Clock, Seed: cfg.AllocationSeed}
	ips, err := ipalloc.NewServiceIPs(cfg.Store, cfg.ServiceClusterIPRange, opts)
	if err != nil {
		return nil, err
	}
	ports, err := ipalloc.NewNodePorts(cfg.Store, cfg.ServiceNodePortRange, opts)
	if err != nil {
		return nil, err
	}
	return []*apiserver.Resource{
		Namespaces(),
		Nodes(),
		withPodLogs(Pods(cfg.Clock), cfg.NodeLogs),
		Services(NewServiceClaims(ips, ports, cfg.Logger)),
		Events(cfg.EventTTL),
		Leases(),
		EndpointSlices(),
		Secrets(),
		ConfigMaps(),
	}, nil
}

// All returns the resources that need no dependencies (nodes and leases). It predates
// Resources, which the control service uses; tests of the generic REST layer use All
// because it serves no namespaces and so skips the namespace lifecycle check.
func All() []*apiserver.Resource {
	return []*apiserver.Resource{Nodes(), Leases()}
}
