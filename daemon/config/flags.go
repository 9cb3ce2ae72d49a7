package config

import (
	"errors"
	"flag"
	"fmt"
	"maps"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
)

// Flags holds plinthd's configuration flags after BindFlags registered them.
type Flags struct {
	fs *flag.FlagSet

	configFile string
	configDir  string

	kubeconfig         string
	hostnameOverride   string
	nodeIP             string
	registerNode       bool
	nodeLabels         labelsValue
	taints             taintsValue
	lockFile           string
	healthzBindAddress string
	stateDir           string
	nodePortAddresses  listValue
	nodeAPIBindAddress string
	podLogsDir         string
	profilingAddress   string
	failSwapOn         bool
}

// Flag names, and the Config field (JSON name) each one sets.
const (
	flagConfig             = "config"
	flagConfigDir          = "config-dir"
	flagKubeconfig         = "kubeconfig"
	flagHostnameOverride   = "hostname-override"
	flagNodeIP             = "node-ip"
	flagRegisterNode       = "register-node"
	flagNodeLabels         = "node-labels"
	flagRegisterWithTaints = "register-with-taints"
	flagLockFile           = "lock-file"
	flagHealthzBindAddress = "healthz-bind-address"
	flagStateDir           = "state-dir"
	flagNodePortAddresses  = "nodeport-addresses"
	flagNodeAPIBindAddress = "node-api-bind-address"
	flagPodLogsDir         = "pod-logs-dir"
	flagProfilingAddress   = "profiling-address"
	flagFailSwapOn         = "fail-swap-on"
)

var fieldOfFlag = map[string]string{
	flagKubeconfig:         "kubeconfig",
	flagHostnameOverride:   "hostnameOverride",
	flagNodeIP:             "nodeIP",
	flagRegisterNode:       "registerNode",
	flagNodeLabels:         "nodeLabels",
	flagRegisterWithTaints: "registerWithTaints",
	flagLockFile:           "lockFile",
	flagHealthzBindAddress: "healthzBindAddress",
	flagStateDir:           "stateDir",
	flagNodePortAddresses:  "proxy.nodePortAddresses",
	flagNodeAPIBindAddress: "nodeAPIBindAddress",
	flagPodLogsDir:         "podLogsDir",
	flagProfilingAddress:   "profilingAddress",
	flagFailSwapOn:         "failSwapOn",
}

// BindFlags registers plinthd's configuration flags on fs. The defaults shown in help
// are Defaults(); a flag overrides the configuration files only when it is given.
func BindFlags(fs *flag.FlagSet) *Flags {
	d := Defaults()
	f := &Flags{fs: fs}
	fs.StringVar(&f.configFile, flagConfig, DefaultConfigFile,
		"configuration file; may be absent at the default path; empty for none")
	fs.StringVar(&f.configDir, flagConfigDir, DefaultConfigDir,
		"drop-in directory whose *.yaml and *.yml files are merged over --config in lexical order; may be absent; empty for none")
	fs.StringVar(&f.kubeconfig, flagKubeconfig, d.Kubeconfig,
		"kubeconfig for the control service; empty runs standalone (config: kubeconfig)")
	fs.StringVar(&f.hostnameOverride, flagHostnameOverride, d.HostnameOverride,
		"node name to use instead of the hostname (config: hostnameOverride)")
	fs.StringVar(&f.nodeIP, flagNodeIP, d.NodeIP,
		"IP address reported for the node; empty detects it (config: nodeIP)")
	fs.BoolVar(&f.failSwapOn, flagFailSwapOn, d.FailSwapOn,
		"refuse to start while swap is on (config: failSwapOn)")
	fs.BoolVar(&f.registerNode, flagRegisterNode, d.RegisterNode,
		"register the Node object with the control service (config: registerNode)")
	fs.Var(&f.nodeLabels, flagNodeLabels,
		"labels to register the node with, key=value,key2=value2; merged key by key over the files' nodeLabels; may be repeated")
	fs.Var(&f.taints, flagRegisterWithTaints,
		"taints to register the node with, key=value:Effect,key2:Effect; replaces the files' registerWithTaints (an empty value clears them); may be repeated")
	fs.StringVar(&f.lockFile, flagLockFile, d.LockFile,
		"lock file that keeps a second plinthd from starting on this node (config: lockFile)")
	fs.StringVar(&f.healthzBindAddress, flagHealthzBindAddress, d.HealthzBindAddress,
		"host:port of the /healthz endpoint (config: healthzBindAddress)")
	fs.StringVar(&f.stateDir, flagStateDir, d.StateDir,
		"directory for plinthd's state (config: stateDir)")
	fs.Var(&f.nodePortAddresses, flagNodePortAddresses,
		"where the Service proxy's NodePorts listen: primary (the Node's InternalIPs) or comma-separated CIDRs; replaces the files' list (config: proxy.nodePortAddresses)")
	fs.StringVar(&f.nodeAPIBindAddress, flagNodeAPIBindAddress, d.NodeAPIBindAddress,
		"host:port of the node API (logs, pods, resource metrics); empty turns it off (config: nodeAPIBindAddress)")
	fs.StringVar(&f.podLogsDir, flagPodLogsDir, d.PodLogsDir,
		"directory of the pods' container logs (config: podLogsDir)")
	fs.StringVar(&f.profilingAddress, flagProfilingAddress, d.ProfilingAddress,
		"host:port to serve Go's pprof profiles on under /debug/pprof/, without authentication (keep it on loopback); empty serves none (config: profilingAddress)")
	return f
}

// Load builds the configuration: Defaults(), then --config, then the drop-ins of
// --config-dir, then the flags that were set on the command line; then validates it.
// It returns the files read in the order they were applied. The FlagSet must have
// been parsed.
func (f *Flags) Load() (Config, []string, error) {
	if !f.fs.Parsed() {
		return Config{}, nil, errors.New("config: Flags.Load called before the flag set was parsed")
	}
	set := map[string]bool{}
	f.fs.Visit(func(fl *flag.Flag) { set[fl.Name] = true })

	// Flags are checked on their own first, so a bad value is reported under the
	// flag's name rather than as part of the merged configuration.
	onlyFlags := Defaults()
	f.apply(&onlyFlags, set)
	var flagErrs []error
	for _, e := range onlyFlags.validate() {
		flagErrs = append(flagErrs, fmt.Errorf("flag --%s: %w", flagOfField(e.Field), e))
	}
	if len(flagErrs) > 0 {
		return Config{}, nil, errors.Join(flagErrs...)
	}

	c, files, err := loadFiles(f.configFile, set[flagConfig], f.configDir)
	if err != nil {
		return Config{}, files, err
	}
	f.apply(&c, set)
	if err := c.Validate(); err != nil {
		return Config{}, files, fmt.Errorf("configuration merged from %s and the command line: %w", describeSources(files), err)
	}
	return c, files, nil
}

// apply copies the flags named in set onto c.
func (f *Flags) apply(c *Config, set map[string]bool) {
	for name := range set {
		switch name {
		case flagKubeconfig:
			c.Kubeconfig = f.kubeconfig
		case flagHostnameOverride:
			c.HostnameOverride = f.hostnameOverride
		case flagNodeIP:
			c.NodeIP = f.nodeIP
		case flagRegisterNode:
			c.RegisterNode = f.registerNode
		case flagNodeLabels:
			merged := maps.Clone(c.NodeLabels)
			if merged == nil {
				merged = map[string]string{}
			}
			maps.Copy(merged, f.nodeLabels.labels)
			c.NodeLabels = merged
		case flagRegisterWithTaints:
			c.RegisterWithTaints = append([]corev1.Taint{}, f.taints.taints...)
		case flagLockFile:
			c.LockFile = f.lockFile
		case flagHealthzBindAddress:
			c.HealthzBindAddress = f.healthzBindAddress
		case flagStateDir:
			c.StateDir = f.stateDir
		case flagNodePortAddresses:
			c.Proxy.NodePortAddresses = append([]string{}, f.nodePortAddresses.items...)
		case flagNodeAPIBindAddress:
			c.NodeAPIBindAddress = f.nodeAPIBindAddress
		case flagPodLogsDir:
			c.PodLogsDir = f.podLogsDir
		case flagProfilingAddress:
			c.ProfilingAddress = f.profilingAddress
		case flagFailSwapOn:
			c.FailSwapOn = f.failSwapOn
		}
	}
}

// flagOfField finds the flag that sets the field a validation error names, such as
// "nodeLabels[foo]" -> "node-labels" or "proxy.nodePortAddresses" ->
// "nodeport-addresses".
func flagOfField(path string) string {
	for fl, fieldName := range fieldOfFlag {
		if path == fieldName || strings.HasPrefix(path, fieldName+".") || strings.HasPrefix(path, fieldName+"[") {
			return fl
		}
	}
	top := path
	if i := strings.IndexAny(path, ".["); i >= 0 {
		top = path[:i]
	}
	return top
}

// listValue is a comma-separated list flag; the last use wins whole, and an empty
// value means an empty list.
type listValue struct {
	items []string
}

func (v *listValue) String() string { return strings.Join(v.items, ",") }

func (v *listValue) Set(s string) error {
	v.items = []string{}
	for _, item := range strings.Split(s, ",") {
		if item = strings.TrimSpace(item); item != "" {
			v.items = append(v.items, item)
		}
	}
	return nil
}

// labelsValue is the flag.Value of --node-labels: key=value pairs separated by commas,
// accumulated over repeated flags. A key given twice is refused.
type labelsValue struct {
	labels map[string]string
}

func (v *labelsValue) String() string {
	var parts []string
	for _, k := range sortedKeys(v.labels) {
		parts = append(parts, k+"="+v.labels[k])
	}
	return strings.Join(parts, ",")
}

func (v *labelsValue) Set(s string) error {
	parsed, err := parseLabels(s)
	if err != nil {
		return err
	}
	if v.labels == nil {
		v.labels = map[string]string{}
	}
	for _, k := range sortedKeys(parsed) {
		if _, dup := v.labels[k]; dup {
			return fmt.Errorf("label %q given twice", k)
		}
		v.labels[k] = parsed[k]
	}
	return nil
}

// parseLabels parses "k=v,k2=v2". Only the syntax is checked here; keys and values are
// validated with the rest of the configuration.
func parseLabels(s string) (map[string]string, error) {
	out := map[string]string{}
	if strings.TrimSpace(s) == "" {
		return out, nil
	}
	for _, item := range strings.Split(s, ",") {
		item = strings.TrimSpace(item)
		k, val, ok := strings.Cut(item, "=")
		if !ok || k == "" {
			return nil, fmt.Errorf("%q is not key=value (want key=value,key2=value2)", item)
		}
		if _, dup := out[k]; dup {
			return nil, fmt.Errorf("label %q given twice", k)
		}
		out[k] = val
	}
	return out, nil
}

// taintsValue is the flag.Value of --register-with-taints: key=value:Effect or
// key:Effect items separated by commas, accumulated over repeated flags.
type taintsValue struct {
	taints []corev1.Taint
}

func (v *taintsValue) String() string {
	parts := make([]string, 0, len(v.taints))
	for _, t := range v.taints {
		if t.Value == "" {
			parts = append(parts, fmt.Sprintf("%s:%s", t.Key, t.Effect))
		} else {
			parts = append(parts, fmt.Sprintf("%s=%s:%s", t.Key, t.Value, t.Effect))
		}
	}
	return strings.Join(parts, ",")
}

func (v *taintsValue) Set(s string) error {
	parsed, err := parseTaints(s)
	if err != nil {
		return err
	}
	v.taints = append(v.taints, parsed...)
	return nil
}

// parseTaints parses "key=value:Effect,key2:Effect". The effect must be one
// Kubernetes knows; keys and values are validated with the rest of the configuration.
func parseTaints(s string) ([]corev1.Taint, error) {
	var out []corev1.Taint
	if strings.TrimSpace(s) == "" {
		return out, nil
	}
	for _, item := range strings.Split(s, ",") {
		item = strings.TrimSpace(item)
		i := strings.LastIndex(item, ":")
		if i < 0 {
			return nil, fmt.Errorf("%q is not key=value:Effect or key:Effect", item)
		}
		effect := corev1.TaintEffect(item[i+1:])
		if !slices.Contains(supportedTaintEffects, effect) {
			return nil, fmt.Errorf("taint %q: effect %q is not one of %s", item, effect, joinEffects())
		}
		key, value, _ := strings.Cut(item[:i], "=")
		if key == "" {
			return nil, fmt.Errorf("taint %q has no key (want key=value:Effect or key:Effect)", item)
		}
		out = append(out, corev1.Taint{Key: key, Value: value, Effect: effect})
	}
	return out, nil
}

func joinEffects() string {
	names := make([]string, len(supportedTaintEffects))
	for i, e := range supportedTaintEffects {
		names[i] = string(e)
	}
	return strings.Join(names, ", ")
}
