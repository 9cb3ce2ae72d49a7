package config

import (
	"errors"
	"fmt"
	"net"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/api/validate/content"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/plinth/plinth/daemon/pressure"
)

// Validate checks every field and returns the errors joined, each a *field.Error naming
// the field (as a JSON path such as registerWithTaints[1].effect) and the value.
func (c Config) Validate() error {
	return joinFieldErrors(append(c.validate(), c.validateAcrossFields()...))
}

// validate holds only per-field rules. Each file is checked on its own over the defaults
// (so its errors can name the file), which is sound only while no rule compares two
// fields: a rule that does belongs in a separate check run on the merged result only.
func (c Config) validate() field.ErrorList {
	var errs field.ErrorList
	if c.HostnameOverride != "" {
		for _, msg := range content.IsDNS1123Subdomain(c.HostnameOverride) {
			errs = append(errs, field.Invalid(field.NewPath("hostnameOverride"), c.HostnameOverride,
				"a node name must be a lowercase DNS subdomain: "+msg))
		}
	}
	if c.NodeIP != "" && net.ParseIP(c.NodeIP) == nil {
		errs = append(errs, field.Invalid(field.NewPath("nodeIP"), c.NodeIP,
			"must be an IPv4 or IPv6 address such as 192.0.2.10 or 2001:db8::10, or empty to detect it"))
	}
	errs = append(errs, validateNodeLabels(field.NewPath("nodeLabels"), c.NodeLabels)...)
	errs = append(errs, validateTaints(field.NewPath("registerWithTaints"), c.RegisterWithTaints)...)
	if c.NodeLeaseDurationSeconds <= 0 {
		errs = append(errs, field.Invalid(field.NewPath("nodeLeaseDurationSeconds"), c.NodeLeaseDurationSeconds,
			"must be a positive number of seconds"))
	}
	if d := c.NodeStatusUpdateFrequency.Duration; d <= 0 {
		errs = append(errs, field.Invalid(field.NewPath("nodeStatusUpdateFrequency"), d.String(),
			`must be a positive duration such as "10s"`))
	}
	if d := c.NodeStatusReportFrequency.Duration; d <= 0 {
		errs = append(errs, field.Invalid(field.NewPath("nodeStatusReportFrequency"), d.String(),
			`must be a positive duration such as "5m"`))
	}
	errs = append(errs, validateHostPort(field.NewPath("healthzBindAddress"), c.HealthzBindAddress)...)
	if c.NodeAPIBindAddress != "" {
		errs = append(errs, validateHostPort(field.NewPath("nodeAPIBindAddress"), c.NodeAPIBindAddress)...)
	}
	if c.KubeAPIQPS <= 0 {
		errs = append(errs, field.Invalid(field.NewPath("kubeAPIQPS"), c.KubeAPIQPS, "must be a positive number of requests per second"))
	}
	if c.KubeAPIBurst <= 0 {
		errs = append(errs, field.Invalid(field.NewPath("kubeAPIBurst"), c.KubeAPIBurst, "must be a positive number of requests"))
	}
	if c.ProfilingAddress != "" {
		errs = append(errs, validateHostPort(field.NewPath("profilingAddress"), c.ProfilingAddress)...)
	}
	if c.TLSCertFile != "" {
		errs = append(errs, validateAbsPath(field.NewPath("tlsCertFile"), c.TLSCertFile)...)
	}
	errs = append(errs, validateAbsPath(field.NewPath("podLogsDir"), c.PodLogsDir)...)
	errs = append(errs, validateAbsPath(field.NewPath("lockFile"), c.LockFile)...)
	errs = append(errs, validateAbsPath(field.NewPath("stateDir"), c.StateDir)...)
	if c.MaxPods <= 0 {
		errs = append(errs, field.Invalid(field.NewPath("maxPods"), c.MaxPods, "must be a positive number"))
	}
	errs = append(errs, validateReserved(field.NewPath("systemReserved"), c.SystemReserved)...)
	errs = append(errs, validateReserved(field.NewPath("kubeReserved"), c.KubeReserved)...)
	errs = append(errs, c.validateEviction()...)
	errs = append(errs, c.validateGC()...)
	errs = append(errs, c.validateShutdown()...)
	if c.StaticPodPath != "" {
		errs = append(errs, validateAbsPath(field.NewPath("staticPodPath"), c.StaticPodPath)...)
	}
	if d := c.FileCheckFrequency.Duration; d < minFileCheckFrequency {
		errs = append(errs, field.Invalid(field.NewPath("fileCheckFrequency"), d.String(),
			fmt.Sprintf(`must be at least %s, such as "20s"`, minFileCheckFrequency)))
	}
	errs = append(errs, c.Proxy.validate(field.NewPath("proxy"))...)
	errs = append(errs, c.Pods.validate(field.NewPath("pods"))...)
	errs = append(errs, c.MemorySwap.validate(field.NewPath("memorySwap"))...)
	return errs
}

// minFileCheckFrequency keeps a mistyped fileCheckFrequency ("1ms") from re-reading
// the static pod directory in a busy loop.
const minFileCheckFrequency = 100 * time.Millisecond

// minEvaluationInterval keeps a mistyped evictionEvaluationInterval ("1ms") from
// turning the pressure manager into a busy loop.
const minEvaluationInterval = 10 * time.Millisecond

// validateEviction checks the eviction fields one by one; the thresholds' own rules
// are the pressure package's, so they cannot drift from what the manager accepts.
func (c Config) validateEviction() field.ErrorList {
	var errs field.ErrorList
	errs = append(errs, pressure.ValidateThresholdValues(field.NewPath(pressure.FieldEvictionHard), c.EvictionHard)...)
	errs = append(errs, pressure.ValidateThresholdValues(field.NewPath(pressure.FieldEvictionSoft), c.EvictionSoft)...)
	errs = append(errs, pressure.ValidateGracePeriods(field.NewPath(pressure.FieldEvictionSoftGracePeriod),
		durations(c.EvictionSoftGracePeriod))...)
	errs = append(errs, pressure.ValidateMinimumReclaim(field.NewPath(pressure.FieldEvictionMinimumReclaim),
		c.EvictionMinimumReclaim)...)
	if c.EvictionMaxPodGracePeriod < 0 {
		errs = append(errs, field.Invalid(field.NewPath("evictionMaxPodGracePeriod"), c.EvictionMaxPodGracePeriod,
			"must be 0 (the pod's own grace period) or a number of seconds"))
	}
	if d := c.EvictionPressureTransitionPeriod.Duration; d < 0 {
		errs = append(errs, field.Invalid(field.NewPath("evictionPressureTransitionPeriod"), d.String(),
			`must be 0 or a positive duration such as "5m"`))
	}
	if d := c.EvictionEvaluationInterval.Duration; d < minEvaluationInterval {
		errs = append(errs, field.Invalid(field.NewPath("evictionEvaluationInterval"), d.String(),
			fmt.Sprintf(`must be at least %s, such as "1s"`, minEvaluationInterval)))
	}
	if c.NodefsPath != "" {
		errs = append(errs, validateAbsPath(field.NewPath("nodefsPath"), c.NodefsPath)...)
	}
	if c.ImagefsPath != "" {
		errs = append(errs, validateAbsPath(field.NewPath("imagefsPath"), c.ImagefsPath)...)
	}
	if c.PodsCgroup != "" {
		errs = append(errs, validateCgroupPath(field.NewPath("podsCgroup"), c.PodsCgroup)...)
	}
	return errs
}

// validateCgroupPath accepts a cgroup path below the root as /proc/<pid>/cgroup prints
// it: absolute, clean, and not the root itself (whose memory is memory.available's).
func validateCgroupPath(path *field.Path, p string) field.ErrorList {
	if !strings.HasPrefix(p, "/") || filepath.Clean(p) != p || p == "/" {
		return field.ErrorList{field.Invalid(path, p,
			`must be an absolute, clean cgroup path below the root such as "/plinth-pods", or empty`)}
	}
	return nil
}

// validateAcrossFields holds the rules that compare two fields. They run only on the
// merged configuration (Validate), never file by file: a soft threshold in one drop-in
// may get its grace period from another.
func (c Config) validateAcrossFields() field.ErrorList {
	errs := pressure.ValidateSoftGracePairs(field.NewPath(pressure.FieldEvictionSoft),
		field.NewPath(pressure.FieldEvictionSoftGracePeriod), c.EvictionSoft, durations(c.EvictionSoftGracePeriod))
	errs = append(errs, c.validateGCAcrossFields()...)
	errs = append(errs, c.validateShutdownAcrossFields()...)
	return append(errs, c.validateProxyAcrossFields()...)
}

// Label domains under kubernetes.io that an operator may set on a node; everything
// else under kubernetes.io and k8s.io is reserved for Kubernetes and plinthd.
var allowedK8sLabelDomains = []string{"node-role.kubernetes.io", "node.kubernetes.io", "topology.kubernetes.io"}

// Labels plinthd sets itself from what it observes.
var labelsSetByPlinthd = []string{corev1.LabelHostname, corev1.LabelArchStable, corev1.LabelOSStable}

func validateNodeLabels(path *field.Path, labels map[string]string) field.ErrorList {
	var errs field.ErrorList
	for _, k := range sortedKeys(labels) {
		v := labels[k]
		p := path.Key(k)
		keyErrs := content.IsLabelKey(k)
		for _, msg := range keyErrs {
			errs = append(errs, field.Invalid(p, k, "label key: "+msg))
		}
		for _, msg := range content.IsLabelValue(v) {
			errs = append(errs, field.Invalid(p, v, "label value: "+msg))
		}
		if len(keyErrs) > 0 {
			continue
		}
		if slices.Contains(labelsSetByPlinthd, k) {
			errs = append(errs, field.Forbidden(p, fmt.Sprintf("label %q is set by plinthd itself", k)))
			continue
		}
		domain, _, hasDomain := strings.Cut(k, "/")
		if hasDomain && isKubernetesDomain(domain) && !slices.Contains(allowedK8sLabelDomains, domain) {
			errs = append(errs, field.Forbidden(p, fmt.Sprintf(
				"label %q is under a domain reserved for Kubernetes; of kubernetes.io and k8s.io only the prefixes %s may be set",
				k, strings.Join(appendEach(allowedK8sLabelDomains, "/"), ", "))))
		}
	}
	return errs
}

func isKubernetesDomain(domain string) bool {
	for _, d := range []string{"kubernetes.io", "k8s.io"} {
		if domain == d || strings.HasSuffix(domain, "."+d) {
			return true
		}
	}
	return false
}

var supportedTaintEffects = []corev1.TaintEffect{corev1.TaintEffectNoSchedule, corev1.TaintEffectPreferNoSchedule, corev1.TaintEffectNoExecute}

func validateTaints(path *field.Path, taints []corev1.Taint) field.ErrorList {
	var errs field.ErrorList
	type keyEffect struct {
		key    string
		effect corev1.TaintEffect
	}
	seen := map[keyEffect]bool{}
	for i, t := range taints {
		p := path.Index(i)
		if t.Key == "" {
			errs = append(errs, field.Required(p.Child("key"), "a taint needs a key"))
		} else {
			for _, msg := range content.IsLabelKey(t.Key) {
				errs = append(errs, field.Invalid(p.Child("key"), t.Key, msg))
			}
		}
		for _, msg := range content.IsLabelValue(t.Value) {
			errs = append(errs, field.Invalid(p.Child("value"), t.Value, msg))
		}
		if !slices.Contains(supportedTaintEffects, t.Effect) {
			errs = append(errs, field.NotSupported(p.Child("effect"), t.Effect, supportedTaintEffects))
		}
		if t.TimeAdded != nil {
			errs = append(errs, field.Forbidden(p.Child("timeAdded"), "is set by the control plane, not in configuration"))
		}
		ke := keyEffect{t.Key, t.Effect}
		if seen[ke] {
			errs = append(errs, field.Duplicate(p, fmt.Sprintf("%s:%s", t.Key, t.Effect)))
		}
		seen[ke] = true
	}
	return errs
}

func validateHostPort(path *field.Path, addr string) field.ErrorList {
	const want = "must be host:port with an IP address or DNS name and a port 0-65535, for example 127.0.0.1:10248"
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return field.ErrorList{field.Invalid(path, addr, want)}
	}
	if _, err := strconv.ParseUint(port, 10, 16); err != nil {
		return field.ErrorList{field.Invalid(path, addr, want+": bad port "+strconv.Quote(port))}
	}
	if host != "" && net.ParseIP(host) == nil && len(content.IsDNS1123Subdomain(host)) > 0 {
		return field.ErrorList{field.Invalid(path, addr, want+": bad host "+strconv.Quote(host))}
	}
	return nil
}

func validateAbsPath(path *field.Path, p string) field.ErrorList {
	if !filepath.IsAbs(p) {
		return field.ErrorList{field.Invalid(path, p, "must be an absolute path")}
	}
	return nil
}

// reservableResources are the resource names systemReserved and kubeReserved accept.
var reservableResources = []string{"cpu", "ephemeral-storage", "memory", "pid"}

func validateReserved(path *field.Path, m map[string]string) field.ErrorList {
	var errs field.ErrorList
	for _, name := range sortedKeys(m) {
		v := m[name]
		p := path.Key(name)
		if !slices.Contains(reservableResources, name) {
			errs = append(errs, field.NotSupported(p, name, reservableResources))
			continue
		}
		q, err := resource.ParseQuantity(v)
		if err != nil {
			errs = append(errs, field.Invalid(p, v, `must be a quantity such as "100m", "256Mi" or "1"`))
			continue
		}
		if q.Sign() < 0 {
			errs = append(errs, field.Invalid(p, v, "must not be negative"))
		}
		if _, whole := q.AsInt64(); name == "pid" && !whole {
			errs = append(errs, field.Invalid(p, v, "must be a whole number of process IDs"))
		}
	}
	return errs
}

// joinFieldErrors turns a field.ErrorList into one error that errors.As can still
// take apart into the individual *field.Error values.
func joinFieldErrors(list field.ErrorList) error {
	return errors.Join(wrapEach(list, "")...)
}

// wrapEach returns the list as errors, each prefixed with prefix (a file name) when
// prefix is not empty.
func wrapEach(list field.ErrorList, prefix string) []error {
	out := make([]error, 0, len(list))
	for _, e := range list {
		if prefix == "" {
			out = append(out, e)
		} else {
			out = append(out, fmt.Errorf("%s: %w", prefix, e))
		}
	}
	return out
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

func appendEach(list []string, suffix string) []string {
	out := make([]string, len(list))
	for i, s := range list {
		out[i] = s + suffix
	}
	return out
}
