package service

import (
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"net"
	"net/netip"
	"path/filepath"
	"strings"
	"time"

	"github.com/plinth/plinth/control/apiserver"
	"github.com/plinth/plinth/control/auth"
	"github.com/plinth/plinth/control/controllers/nodeipam"
	"github.com/plinth/plinth/control/controllers/nodelifecycle"
	"github.com/plinth/plinth/control/controllers/podgc"
	"github.com/plinth/plinth/control/ipalloc"
	"github.com/plinth/plinth/control/storage"
)

// Options are plinth-control's settings, one flag each.
type Options struct {
	DataDir            string
	BindAddress        string
	SecurePort         int
	EtcdServers        []string
	EtcdPrefix         string
	TLSSANs            []string
	Server             string // URL written into kubeconfigs
	AdminKubeconfig    string
	CompactionInterval time.Duration
	NodeLifecycle      nodelifecycle.Options
	PodGC              podgc.Options
	LeaderElection     LeaderElection
	LogLevel           string
	// EtcdCAFile, EtcdCertFile and EtcdKeyFile secure the connection to an external
	// etcd, as kube-apiserver's flags of the same names.
	EtcdCAFile, EtcdCertFile, EtcdKeyFile string
	// Inflight caps the API requests served at once (--max-requests-inflight,
	// --max-mutating-requests-inflight); requests beyond get 429 and Retry-After.
	Inflight apiserver.InflightLimits
	// ObjectCacheMiB bounds the API's cache of decoded objects by their stored size
	// (--object-cache-size); 0 turns it off.
	ObjectCacheMiB int
	// ProfilingAddress, when set, serves Go's pprof profiles there, unauthenticated.
	ProfilingAddress string

	// NodeCertValidity is the lifetime of node client certificates signed at join and
	// renewal.
	NodeCertValidity time.Duration

	// ServiceClusterIPRange and ServiceNodePortRange are where Services get cluster IPs
	// and node ports, as kube-apiserver's flags of the same names.
	ServiceClusterIPRange string
	ServiceNodePortRange  string

	// ClusterCIDR is where Nodes get spec.podCIDRs (--cluster-cidr, as
	// kube-controller-manager's); empty leaves node IPAM off. Complete parses it
	// into NodeIPAM.ClusterCIDRs.
	ClusterCIDR string
	NodeIPAM    nodeipam.Options
}

// DefaultOptions are the reference defaults.
func DefaultOptions() Options {
	return Options{
		DataDir:            "/var/lib/plinth-control",
		BindAddress:        "0.0.0.0",
		SecurePort:         6443,
		EtcdPrefix:         "/registry",
		CompactionInterval: 5 * time.Minute,
		NodeLifecycle:      nodelifecycle.DefaultOptions(),
		PodGC:              podgc.DefaultOptions(),
		LeaderElection:     DefaultLeaderElection(),
		LogLevel:           "info",
		Inflight:           apiserver.DefaultInflightLimits(),
		ObjectCacheMiB:     apiserver.DefaultObjectCacheBytes >> 20,
		NodeCertValidity:   auth.DefaultNodeCertValidity,

		ServiceClusterIPRange: "10.96.0.0/12",
		ServiceNodePortRange:  "30000-32767",
		NodeIPAM:              nodeipam.DefaultOptions(),
	}
}

type stringList struct{ list *[]string }

func (s stringList) String() string {
	if s.list == nil {
		return ""
	}
	return strings.Join(*s.list, ",")
}

func (s stringList) Set(v string) error {
	for _, item := range strings.Split(v, ",") {
		if item = strings.TrimSpace(item); item != "" {
			*s.list = append(*s.list, item)
		}
	}
	return nil
}

// BindFlags registers the flags on fs, with o's values as defaults.
func (o *Options) BindFlags(fs *flag.FlagSet) {
	fs.StringVar(&o.DataDir, "data-dir", o.DataDir, "directory for the PKI, the embedded etcd and the admin kubeconfig")
	fs.StringVar(&o.BindAddress, "bind-address", o.BindAddress, "address to serve the API on")
	fs.IntVar(&o.SecurePort, "secure-port", o.SecurePort, "HTTPS port of the API (0 picks a free port)")
	fs.Var(stringList{&o.EtcdServers}, "etcd-servers", "comma-separated external etcd endpoints, URLs such as https://10.0.0.1:2379 (http://, https://, unix:// or unixs://); empty runs an embedded single-member etcd in --data-dir")
	fs.StringVar(&o.EtcdCAFile, "etcd-cafile", o.EtcdCAFile, "PEM file of the CA certificates that sign the external etcd members' serving certificates (https:// or unixs:// --etcd-servers); empty trusts the system's roots")
	fs.StringVar(&o.EtcdCertFile, "etcd-certfile", o.EtcdCertFile, "PEM client certificate for an external etcd that requires one (--client-cert-auth); read again at each connection, so it can be rotated in place")
	fs.StringVar(&o.EtcdKeyFile, "etcd-keyfile", o.EtcdKeyFile, "PEM private key of --etcd-certfile")
	fs.StringVar(&o.EtcdPrefix, "etcd-prefix", o.EtcdPrefix, "etcd key prefix for all objects")
	fs.Var(stringList{&o.TLSSANs}, "tls-san", "extra DNS names or IPs for the serving certificate (repeatable, comma-separated)")
	fs.StringVar(&o.Server, "server", o.Server, "API URL written into kubeconfigs (default https://127.0.0.1:<secure-port>)")
	fs.StringVar(&o.AdminKubeconfig, "admin-kubeconfig", o.AdminKubeconfig, "where to write the admin kubeconfig (default <data-dir>/admin.kubeconfig)")
	fs.DurationVar(&o.CompactionInterval, "etcd-compaction-interval", o.CompactionInterval, "how often etcd history older than one interval is compacted")
	fs.DurationVar(&o.NodeLifecycle.MonitorPeriod, "node-monitor-period", o.NodeLifecycle.MonitorPeriod, "how often node health is checked")
	fs.DurationVar(&o.NodeLifecycle.GracePeriod, "node-monitor-grace-period", o.NodeLifecycle.GracePeriod, "how long a node may be silent before it is marked Unknown")
	fs.DurationVar(&o.NodeLifecycle.StartupGracePeriod, "node-startup-grace-period", o.NodeLifecycle.StartupGracePeriod, "grace for a node that has never posted status")
	fs.Float64Var(&o.NodeLifecycle.EvictionRate, "node-eviction-rate", o.NodeLifecycle.EvictionRate, "nodes per second of a zone that get a NoExecute taint (which evicts their pods) while the zone is healthy or entirely down")
	fs.Float64Var(&o.NodeLifecycle.SecondaryEvictionRate, "secondary-node-eviction-rate", o.NodeLifecycle.SecondaryEvictionRate, "the rate instead in a partially disrupted zone larger than --large-cluster-size-threshold (smaller ones stop)")
	fs.Float64Var(&o.NodeLifecycle.UnhealthyZoneThreshold, "unhealthy-zone-threshold", o.NodeLifecycle.UnhealthyZoneThreshold, "share of a zone's nodes not Ready (with more than two of them) at which it is partially disrupted")
	fs.IntVar(&o.NodeLifecycle.LargeClusterSizeThreshold, "large-cluster-size-threshold", o.NodeLifecycle.LargeClusterSizeThreshold, "zone size above which a partially disrupted zone keeps evicting at --secondary-node-eviction-rate")
	fs.IntVar(&o.PodGC.TerminatedPodThreshold, "terminated-pod-gc-threshold", o.PodGC.TerminatedPodThreshold, "number of terminated pods (Succeeded or Failed) kept before the oldest are deleted; 0 keeps them all")
	fs.BoolVar(&o.LeaderElection.Enabled, "leader-elect", o.LeaderElection.Enabled, "elect one replica among those sharing etcd to run the control loops (every replica serves the API)")
	fs.DurationVar(&o.LeaderElection.LeaseDuration, "leader-elect-lease-duration", o.LeaderElection.LeaseDuration, "how long a leader's Lease lasts without renewal")
	fs.DurationVar(&o.LeaderElection.RenewDeadline, "leader-elect-renew-deadline", o.LeaderElection.RenewDeadline, "how long the leader retries renewing before it gives up the loops")
	fs.DurationVar(&o.LeaderElection.RetryPeriod, "leader-elect-retry-period", o.LeaderElection.RetryPeriod, "how often candidates try to acquire or renew")
	fs.IntVar(&o.Inflight.ReadOnly, "max-requests-inflight", o.Inflight.ReadOnly, "most non-mutating API requests (get, list) served at once; more are answered 429 with Retry-After. Watches and system:masters (this service's own control loops and leader election, administrators) are never limited. 0 means no limit")
	fs.IntVar(&o.Inflight.Mutating, "max-mutating-requests-inflight", o.Inflight.Mutating, "most mutating API requests (create, update, patch, delete) served at once; more are answered 429 with Retry-After, with the same exemptions as --max-requests-inflight. 0 means no limit")
	fs.IntVar(&o.ObjectCacheMiB, "object-cache-size", o.ObjectCacheMiB, "MiB of stored objects the API keeps decoded, each valid for exactly one etcd revision, so hot reads, watch events and updates naming the cached resourceVersion skip decoding and the read before the write (decoded objects take about three times their stored size); 0 turns the cache off")
	fs.StringVar(&o.LogLevel, "log-level", o.LogLevel, "debug, info, warn or error")
	fs.StringVar(&o.ProfilingAddress, "profiling-address", o.ProfilingAddress, "HOST:PORT to serve Go's pprof profiles on under /debug/pprof/, without authentication (keep it on loopback); empty serves none")
	fs.StringVar(&o.ServiceClusterIPRange, "service-cluster-ip-range", o.ServiceClusterIPRange, "CIDR Services get cluster IPs from (dynamic ones from above the first min(max(16, size/16), 256) addresses, which static ones prefer); at most 20 host bits")
	fs.StringVar(&o.ServiceNodePortRange, "service-node-port-range", o.ServiceNodePortRange, "ports NodePort and LoadBalancer Services get node ports from, FIRST-LAST or FIRST+OFFSET")
	fs.StringVar(&o.ClusterCIDR, "cluster-cidr", o.ClusterCIDR, "CIDRs (comma-separated, at most one IPv4 and one IPv6) Nodes get their spec.podCIDRs from; empty turns node IPAM off")
	fs.IntVar(&o.NodeIPAM.NodeMaskSizeIPv4, "node-cidr-mask-size", o.NodeIPAM.NodeMaskSizeIPv4, "prefix length of each Node's IPv4 pod CIDR out of --cluster-cidr")
	fs.IntVar(&o.NodeIPAM.NodeMaskSizeIPv6, "node-cidr-mask-size-ipv6", o.NodeIPAM.NodeMaskSizeIPv6, "prefix length of each Node's IPv6 pod CIDR out of --cluster-cidr")
	fs.DurationVar(&o.NodeCertValidity, "node-cert-validity", o.NodeCertValidity, "lifetime of the client certificates signed for nodes at join and renewal (nodes renew at 70-90% of it)")
}

// Complete fills derived defaults and checks every option, naming the flag and value.
func (o *Options) Complete() error {
	var errs []error
	if o.DataDir == "" {
		errs = append(errs, errors.New("--data-dir: must not be empty"))
	}
	if o.SecurePort < 0 || o.SecurePort > 65535 {
		errs = append(errs, fmt.Errorf("--secure-port: %d is not a port number (0-65535)", o.SecurePort))
	}
	if net.ParseIP(o.BindAddress) == nil {
		errs = append(errs, fmt.Errorf("--bind-address: %q is not an IP address", o.BindAddress))
	}
	if err := o.externalEtcd(nil).Validate(); err != nil {
		errs = append(errs, err)
	}
	if !strings.HasPrefix(o.EtcdPrefix, "/") {
		errs = append(errs, fmt.Errorf("--etcd-prefix: %q must start with /", o.EtcdPrefix))
	}
	if o.CompactionInterval <= 0 {
		errs = append(errs, fmt.Errorf("--etcd-compaction-interval: %s must be positive", o.CompactionInterval))
	}
	if err := o.NodeLifecycle.Validate(); err != nil {
		errs = append(errs, err)
	}
	if o.PodGC.TerminatedPodThreshold < 0 {
		errs = append(errs, fmt.Errorf("--terminated-pod-gc-threshold: %d is not a pod count (want 0 or more; 0 keeps every terminated pod)", o.PodGC.TerminatedPodThreshold))
	} else if err := o.PodGC.Validate(); err != nil {
		errs = append(errs, err)
	}
	serviceCIDR, _, err := o.serviceRanges()
	if err != nil {
		errs = append(errs, err)
	}
	if cidrs, err := nodeipam.ParseClusterCIDRs(o.ClusterCIDR); err != nil {
		errs = append(errs, err)
	} else if o.NodeIPAM.ClusterCIDRs = cidrs; len(cidrs) > 0 {
		if err := o.NodeIPAM.Validate(); err != nil {
			errs = append(errs, err)
		}
		for _, p := range cidrs {
			// Pods and Service VIPs in one range would route into each other.
			if serviceCIDR.IsValid() && p.Overlaps(serviceCIDR) {
				errs = append(errs, fmt.Errorf("--cluster-cidr: %s overlaps --service-cluster-ip-range %s", p, serviceCIDR))
			}
		}
	}
	if o.NodeCertValidity < 10*time.Second {
		errs = append(errs, fmt.Errorf("--node-cert-validity: %s is too short: want at least 10s", o.NodeCertValidity))
	}
	if o.Inflight.ReadOnly < 0 {
		errs = append(errs, fmt.Errorf("--max-requests-inflight: %d is not a request count (want 0 for no limit, or more)", o.Inflight.ReadOnly))
	}
	if o.Inflight.Mutating < 0 {
		errs = append(errs, fmt.Errorf("--max-mutating-requests-inflight: %d is not a request count (want 0 for no limit, or more)", o.Inflight.Mutating))
	}
	if o.ObjectCacheMiB < 0 {
		errs = append(errs, fmt.Errorf("--object-cache-size: %d is not a size in MiB (want 0 to turn the cache off, or more)", o.ObjectCacheMiB))
	}
	if err := o.LeaderElection.validate(); err != nil {
		errs = append(errs, err)
	}
	if o.ProfilingAddress != "" {
		if _, _, err := net.SplitHostPort(o.ProfilingAddress); err != nil {
			errs = append(errs, fmt.Errorf("--profiling-address: %q is not HOST:PORT: %w", o.ProfilingAddress, err))
		}
	}
	if _, err := parseLogLevel(o.LogLevel); err != nil {
		errs = append(errs, err)
	}
	if o.AdminKubeconfig == "" {
		o.AdminKubeconfig = filepath.Join(o.DataDir, "admin.kubeconfig")
	}
	return errors.Join(errs...)
}

// externalEtcd is how to reach the external etcd of --etcd-servers.
func (o *Options) externalEtcd(logger *slog.Logger) storage.ExternalConfig {
	return storage.ExternalConfig{
		Endpoints: o.EtcdServers,
		CAFile:    o.EtcdCAFile, CertFile: o.EtcdCertFile, KeyFile: o.EtcdKeyFile,
		ReadyTimeout: time.Minute,
		Logger:       logger,
	}
}

func (o *Options) pkiDir() string  { return filepath.Join(o.DataDir, "pki") }
func (o *Options) etcdDir() string { return filepath.Join(o.DataDir, "etcd") }

// serverURL is the URL kubeconfigs point at, once the port is known.
func (o *Options) serverURL(port int) string {
	if o.Server != "" {
		return o.Server
	}
	return fmt.Sprintf("https://127.0.0.1:%d", port)
}

// serviceRanges parses --service-cluster-ip-range and --service-node-port-range.
func (o *Options) serviceRanges() (netip.Prefix, ipalloc.PortRange, error) {
	cidr, err := netip.ParsePrefix(o.ServiceClusterIPRange)
	if err == nil {
		err = ipalloc.CheckServiceIPRange(cidr)
	}
	if err != nil {
		return netip.Prefix{}, ipalloc.PortRange{}, fmt.Errorf("--service-cluster-ip-range: %q: %w", o.ServiceClusterIPRange, err)
	}
	ports, err := ipalloc.ParsePortRange(o.ServiceNodePortRange)
	if err != nil {
		return netip.Prefix{}, ipalloc.PortRange{}, fmt.Errorf("--service-node-port-range: %w", err)
	}
	return cidr, ports, nil
}
