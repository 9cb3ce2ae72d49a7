package config

import (
	"path/filepath"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/plinth/plinth/daemon/containergc"
	"github.com/plinth/plinth/daemon/pressure"
)

// Where plinthd looks for its configuration when no flag says otherwise.
const (
	DefaultConfigFile = "/etc/plinth/plinthd.yaml"
	DefaultConfigDir  = "/etc/plinth/plinthd.d"
	// DefaultStaticPodPath is the directory of static pod manifests.
	DefaultStaticPodPath = "/etc/plinth/manifests"
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
	// KubeAPIQPS and KubeAPIBurst rate-limit plinthd's requests to the control
	// service (kubelet's fields, with its defaults 50 and 100): every pod's status
	// writes, deletion confirmations and admission reads share them, so client-go's
	// own defaults (5 and 10) made a node starting 100 pods wait tens of seconds to
	// report them Running.
	KubeAPIQPS   int32 `json:"kubeAPIQPS"`
	KubeAPIBurst int32 `json:"kubeAPIBurst"`
	// ProfilingAddress, when set, is the host:port where Go's pprof profiles are
	// served under /debug/pprof/, without authentication (keep it on loopback); empty
	// serves none. Kubelet serves them on its API (enableProfilingHandler); plinthd
	// keeps them apart, as plinth-control's --profiling-address.
	ProfilingAddress string `json:"profilingAddress"`
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

	// EvictionHard maps eviction signals to hard thresholds ("100Mi", "10%"). It is
	// merged key by key over the defaults, like every map here, so a file names only
	// the thresholds it changes; "0%" turns one off.
	EvictionHard map[string]string `json:"evictionHard"`
	// EvictionSoft maps signals to soft thresholds; each needs a grace period.
	EvictionSoft map[string]string `json:"evictionSoft"`
	// EvictionSoftGracePeriod maps signals to how long their soft threshold must stay
	// crossed before pods are evicted.
	EvictionSoftGracePeriod map[string]metav1.Duration `json:"evictionSoftGracePeriod"`
	// EvictionMinimumReclaim maps signals to how far above the threshold eviction
	// brings the signal before it stops.
	EvictionMinimumReclaim map[string]string `json:"evictionMinimumReclaim"`
	// EvictionMaxPodGracePeriod caps, in seconds, the grace period of a pod evicted
	// for a soft threshold (kubelet's field); 0, the default, leaves the pod's own
	// terminationGracePeriodSeconds, where kubelet would stop the pod at once.
	EvictionMaxPodGracePeriod int32 `json:"evictionMaxPodGracePeriod"`
	// EvictionPressureTransitionPeriod is how long a pressure condition stays True
	// after the last crossing.
	EvictionPressureTransitionPeriod metav1.Duration `json:"evictionPressureTransitionPeriod"`
	// EvictionEvaluationInterval is the longest time between two pressure
	// evaluations; events (PSI triggers, OOM kills, ...) evaluate at once.
	EvictionEvaluationInterval metav1.Duration `json:"evictionEvaluationInterval"`
	// NodefsPath is a directory on the filesystem the nodefs signals measure; empty
	// means stateDir (see NodefsDir).
	NodefsPath string `json:"nodefsPath"`
	// ImagefsPath is a directory on the filesystem the imagefs signals measure; empty
	// means stateDir/images (see ImagefsDir).
	ImagefsPath string `json:"imagefsPath"`
	// PodsCgroup is the cgroup holding every pod, as /proc/<pid>/cgroup prints it
	// (such as /plinth-pods). When set, allocatableMemory.available is measured on it:
	// its memory limit (or node allocatable memory when it has none) minus its working
	// set, and its memory.pressure arms a PSI trigger. On hybrid hosts the memory
	// figures come from the v1 memory hierarchy and the PSI from the unified tree, both
	// under this path. Empty leaves allocatableMemory.available unobserved.
	PodsCgroup string `json:"podsCgroup"`

	// NodeAPIBindAddress is host:port of the node API (kubelet's address and port,
	// 10250): logs, pods, resource metrics for the control service and
	// administrators. Empty turns it off.
	NodeAPIBindAddress string `json:"nodeAPIBindAddress"`
	// TLSCertFile holds the node API's serving certificate and its key in one PEM
	// file, reread when replaced; empty means stateDir/pki/plinthd-serving.pem.
	TLSCertFile string `json:"tlsCertFile"`
	// PodLogsDir is where container logs are written and read (kubelet's podLogsDir).
	PodLogsDir string `json:"podLogsDir"`
	// MinimumContainerTTLDuration is how long a dead container is kept at least before
	// container garbage collection may remove it (kubelet's
	// --minimum-container-ttl-duration); 0 means no minimum.
	MinimumContainerTTLDuration metav1.Duration `json:"minimumContainerTTLDuration"`
	// MaximumDeadContainersPerContainer is how many dead containers are kept per pod
	// and container name (--maximum-dead-containers-per-container); -1 keeps all.
	MaximumDeadContainersPerContainer int32 `json:"maximumDeadContainersPerContainer"`
	// MaximumDeadContainers is how many dead containers are kept on the node in all
	// (--maximum-dead-containers); -1 means no limit.
	MaximumDeadContainers int32 `json:"maximumDeadContainers"`
	// ImageGCHighThresholdPercent is the image filesystem usage at or above which image
	// garbage collection deletes unused images; 100 turns it off.
	ImageGCHighThresholdPercent int32 `json:"imageGCHighThresholdPercent"`
	// ImageGCLowThresholdPercent is the usage image garbage collection brings the image
	// filesystem under once it starts.
	ImageGCLowThresholdPercent int32 `json:"imageGCLowThresholdPercent"`
	// ImageMinimumGCAge protects images pulled less than this long ago.
	ImageMinimumGCAge metav1.Duration `json:"imageMinimumGCAge"`
	// ImageMaximumGCAge deletes unused images not used for this long whatever the disk
	// usage; 0 turns it off.
	ImageMaximumGCAge metav1.Duration `json:"imageMaximumGCAge"`

	// StaticPodPath is the directory whose regular files each hold one static pod
	// manifest (YAML or JSON), run by plinthd without the control service, as kubelet's
	// staticPodPath. Empty turns static pods off; a directory that does not exist
	// holds no pods until it is created.
	StaticPodPath string `json:"staticPodPath"`
	// FileCheckFrequency is how often the static pod directory is read again even
	// when no file-change notification came (kubelet's fileCheckFrequency).
	FileCheckFrequency metav1.Duration `json:"fileCheckFrequency"`

	// ShutdownGracePeriod is how long graceful node shutdown delays the machine's
	// shutdown (a systemd-logind delay inhibitor lock) to stop the pods, critical pods
	// included; 0 (the default) turns graceful node shutdown off, as kubelet's.
	ShutdownGracePeriod metav1.Duration `json:"shutdownGracePeriod"`
	// ShutdownGracePeriodCriticalPods is the part of shutdownGracePeriod kept for the
	// critical pods (priority system-cluster-critical or above), stopped after the
	// others.
	ShutdownGracePeriodCriticalPods metav1.Duration `json:"shutdownGracePeriodCriticalPods"`
	// ShutdownGracePeriodByPodPriority replaces the two fields above with priority
	// bands, each with its own time, stopped lowest priority first.
	ShutdownGracePeriodByPodPriority []ShutdownGracePeriodByPodPriority `json:"shutdownGracePeriodByPodPriority"`

	// FailSwapOn makes plinthd refuse to start while swap is on (kubelet's
	// failSwapOn); with false, memorySwap says how much of it containers may use.
	FailSwapOn bool `json:"failSwapOn"`
	// MemorySwap configures containers' swap when swap is on and failSwapOn is false.
	MemorySwap MemorySwapConfig `json:"memorySwap"`

	// Proxy configures the Service proxy.
	Proxy ProxyConfig `json:"proxy"`
	// Pods configures the pod runtime.
	Pods PodsConfig `json:"pods"`
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
		KubeAPIQPS:                50,
		KubeAPIBurst:              100,
		NodeAPIBindAddress:        "0.0.0.0:10250",
		PodLogsDir:                "/var/log/pods",

		EvictionHard:                     pressure.DefaultEvictionHard(),
		EvictionPressureTransitionPeriod: metav1.Duration{Duration: pressure.DefaultPressureTransitionPeriod},
		EvictionEvaluationInterval:       metav1.Duration{Duration: pressure.DefaultEvaluationInterval},

		MinimumContainerTTLDuration:       metav1.Duration{Duration: containergc.DefaultPolicy().MinAge},
		MaximumDeadContainersPerContainer: int32(containergc.DefaultPolicy().MaxPerPodContainer),
		MaximumDeadContainers:             int32(containergc.DefaultPolicy().MaxContainers),
		// The image GC defaults are daemon/images' DefaultGCPolicy (kubelet's); config
		// does not import that package, which would link the image store into every
		// user of the configuration; a test keeps the two equal.
		ImageGCHighThresholdPercent: 85,
		ImageGCLowThresholdPercent:  80,
		ImageMinimumGCAge:           metav1.Duration{Duration: 2 * time.Minute},

		StaticPodPath:      DefaultStaticPodPath,
		FileCheckFrequency: metav1.Duration{Duration: 20 * time.Second},

		FailSwapOn: true,
		MemorySwap: defaultMemorySwap(),

		Proxy: defaultProxyConfig(),
		Pods:  defaultPodsConfig(),
	}
}

// NodefsDir is the directory whose filesystem is nodefs: nodefsPath, or stateDir
// when that is empty, so moving stateDir moves nodefs with it.
func (c Config) NodefsDir() string {
	if c.NodefsPath != "" {
		return c.NodefsPath
	}
	return c.StateDir
}

// ServingCertFile is the node API's certificate-and-key file: tlsCertFile, or
// pki/plinthd-serving.pem under stateDir.
func (c Config) ServingCertFile() string {
	if c.TLSCertFile != "" {
		return c.TLSCertFile
	}
	return filepath.Join(c.StateDir, "pki", "plinthd-serving.pem")
}

// ImagefsDir is the directory whose filesystem is imagefs: imagefsPath, or the
// images directory under stateDir when that is empty.
func (c Config) ImagefsDir() string {
	if c.ImagefsPath != "" {
		return c.ImagefsPath
	}
	return filepath.Join(c.StateDir, "images")
}

// PressureConfig is the pressure manager's configuration: the parsed thresholds and
// the periods. The configuration must have passed Validate.
func (c Config) PressureConfig() (pressure.Config, error) {
	thresholds, err := pressure.ParseThresholds(c.thresholdSpec())
	if err != nil {
		return pressure.Config{}, err
	}
	return pressure.Config{
		Thresholds:               thresholds,
		PressureTransitionPeriod: c.EvictionPressureTransitionPeriod.Duration,
		EvaluationInterval:       c.EvictionEvaluationInterval.Duration,
		PodGoneTimeout:           pressure.DefaultPodGoneTimeout,
		MaxPodGracePeriod:        time.Duration(c.EvictionMaxPodGracePeriod) * time.Second,
	}, nil
}

func (c Config) thresholdSpec() pressure.ThresholdSpec {
	return pressure.ThresholdSpec{
		Hard:            c.EvictionHard,
		Soft:            c.EvictionSoft,
		SoftGracePeriod: durations(c.EvictionSoftGracePeriod),
		MinimumReclaim:  c.EvictionMinimumReclaim,
	}
}

func durations(m map[string]metav1.Duration) map[string]time.Duration {
	if m == nil {
		return nil
	}
	out := make(map[string]time.Duration, len(m))
	for k, v := range m {
		out[k] = v.Duration
	}
	return out
}
