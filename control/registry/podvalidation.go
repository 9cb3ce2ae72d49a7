package registry

import (
	"encoding/json"
	"fmt"
	"net/netip"
	"reflect"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

var (
	restartPolicies   = []string{string(corev1.RestartPolicyAlways), string(corev1.RestartPolicyOnFailure), string(corev1.RestartPolicyNever)}
	dnsPolicies       = []string{string(corev1.DNSClusterFirstWithHostNet), string(corev1.DNSClusterFirst), string(corev1.DNSDefault), string(corev1.DNSNone)}
	pullPolicies      = []string{string(corev1.PullAlways), string(corev1.PullNever), string(corev1.PullIfNotPresent)}
	messagePolicies   = []string{string(corev1.TerminationMessageReadFile), string(corev1.TerminationMessageFallbackToLogsOnError)}
	protocols         = []string{string(corev1.ProtocolTCP), string(corev1.ProtocolUDP), string(corev1.ProtocolSCTP)}
	tolerationEffects = []string{string(corev1.TaintEffectNoSchedule), string(corev1.TaintEffectPreferNoSchedule), string(corev1.TaintEffectNoExecute)}
	podPhases         = []string{string(corev1.PodPending), string(corev1.PodRunning), string(corev1.PodSucceeded), string(corev1.PodFailed), string(corev1.PodUnknown)}
)

func oneOf(v string, allowed []string) bool {
	for _, a := range allowed {
		if v == a {
			return true
		}
	}
	return false
}

func validatePod(p *corev1.Pod) field.ErrorList {
	errs := validatePodSpec(&p.Spec, field.NewPath("spec"))
	return append(errs, validatePodStatus(&p.Status, field.NewPath("status"))...)
}

func validatePodSpec(s *corev1.PodSpec, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	volumes, verrs := validateVolumes(s.Volumes, path.Child("volumes"))
	errs = append(errs, verrs...)
	if len(s.Containers) == 0 {
		errs = append(errs, field.Required(path.Child("containers"), "a pod runs at least one container"))
	}
	names := map[string]bool{}
	for i := range s.InitContainers {
		errs = append(errs, validateContainer(&s.InitContainers[i], path.Child("initContainers").Index(i), names, volumes, true)...)
	}
	for i := range s.Containers {
		errs = append(errs, validateContainer(&s.Containers[i], path.Child("containers").Index(i), names, volumes, false)...)
	}
	if !oneOf(string(s.RestartPolicy), restartPolicies) {
		errs = append(errs, field.NotSupported(path.Child("restartPolicy"), s.RestartPolicy, restartPolicies))
	}
	if !oneOf(string(s.DNSPolicy), dnsPolicies) {
		errs = append(errs, field.NotSupported(path.Child("dnsPolicy"), s.DNSPolicy, dnsPolicies))
	}
	if s.DNSPolicy == corev1.DNSNone && s.DNSConfig == nil {
		errs = append(errs, field.Required(path.Child("dnsConfig"), "must provide `dnsConfig` when `dnsPolicy` is None"))
	}
	if g := s.TerminationGracePeriodSeconds; g != nil && *g < 0 {
		errs = append(errs, field.Invalid(path.Child("terminationGracePeriodSeconds"), *g, "must be greater than or equal to 0"))
	}
	if d := s.ActiveDeadlineSeconds; d != nil && *d <= 0 {
		errs = append(errs, field.Invalid(path.Child("activeDeadlineSeconds"), *d, "must be greater than 0"))
	}
	for name, v := range map[string]string{"nodeName": s.NodeName, "serviceAccountName": s.ServiceAccountName, "schedulerName": s.SchedulerName} {
		if v == "" {
			continue
		}
		for _, msg := range validation.IsDNS1123Subdomain(v) {
			errs = append(errs, field.Invalid(path.Child(name), v, msg))
		}
	}
	for name, v := range map[string]string{"hostname": s.Hostname, "subdomain": s.Subdomain} {
		if v == "" {
			continue
		}
		for _, msg := range validation.IsDNS1123Label(v) {
			errs = append(errs, field.Invalid(path.Child(name), v, msg))
		}
	}
	errs = append(errs, metav1validation.ValidateLabels(s.NodeSelector, path.Child("nodeSelector"))...)
	errs = append(errs, validateTolerations(s.Tolerations, path.Child("tolerations"))...)
	return errs
}

// validateVolumes checks names and that each volume has exactly one source, and returns
// the valid names for the containers' mounts.
func validateVolumes(volumes []corev1.Volume, path *field.Path) (map[string]bool, field.ErrorList) {
	var errs field.ErrorList
	names := map[string]bool{}
	for i, v := range volumes {
		p := path.Index(i)
		switch {
		case v.Name == "":
			errs = append(errs, field.Required(p.Child("name"), ""))
		case names[v.Name]:
			errs = append(errs, field.Duplicate(p.Child("name"), v.Name))
		default:
			for _, msg := range validation.IsDNS1123Label(v.Name) {
				errs = append(errs, field.Invalid(p.Child("name"), v.Name, msg))
			}
		}
		names[v.Name] = true
		// Every source is a pointer field of VolumeSource.
		sources := 0
		src := reflect.ValueOf(v.VolumeSource)
		for f := 0; f < src.NumField(); f++ {
			if src.Field(f).Kind() == reflect.Pointer && !src.Field(f).IsNil() {
				sources++
			}
		}
		switch {
		case sources == 0:
			errs = append(errs, field.Required(p, "must specify a volume type"))
		case sources > 1:
			errs = append(errs, field.Forbidden(p, "may not specify more than 1 volume type"))
		}
	}
	return names, errs
}

func validateContainer(c *corev1.Container, path *field.Path, names, volumes map[string]bool, isInit bool) field.ErrorList {
	var errs field.ErrorList
	switch {
	case c.Name == "":
		errs = append(errs, field.Required(path.Child("name"), ""))
	case names[c.Name]:
		errs = append(errs, field.Duplicate(path.Child("name"), c.Name))
	default:
		for _, msg := range validation.IsDNS1123Label(c.Name) {
			errs = append(errs, field.Invalid(path.Child("name"), c.Name, msg))
		}
	}
	names[c.Name] = true
	switch {
	case c.Image == "":
		errs = append(errs, field.Required(path.Child("image"), ""))
	case strings.TrimSpace(c.Image) != c.Image:
		errs = append(errs, field.Invalid(path.Child("image"), c.Image, "must not have leading or trailing whitespace"))
	}
	if !oneOf(string(c.ImagePullPolicy), pullPolicies) {
		errs = append(errs, field.NotSupported(path.Child("imagePullPolicy"), c.ImagePullPolicy, pullPolicies))
	}
	if !oneOf(string(c.TerminationMessagePolicy), messagePolicies) {
		errs = append(errs, field.NotSupported(path.Child("terminationMessagePolicy"), c.TerminationMessagePolicy, messagePolicies))
	}
	if c.RestartPolicy != nil {
		switch {
		case !isInit:
			errs = append(errs, field.Forbidden(path.Child("restartPolicy"), "may only be set for init containers"))
		case *c.RestartPolicy != corev1.ContainerRestartPolicyAlways:
			errs = append(errs, field.NotSupported(path.Child("restartPolicy"), *c.RestartPolicy, []string{string(corev1.ContainerRestartPolicyAlways)}))
		}
	}
	errs = append(errs, validateContainerPorts(c.Ports, path.Child("ports"))...)
	for i, e := range c.Env {
		p := path.Child("env").Index(i)
		if e.Name == "" {
			errs = append(errs, field.Required(p.Child("name"), ""))
		} else {
			for _, msg := range validation.IsEnvVarName(e.Name) {
				errs = append(errs, field.Invalid(p.Child("name"), e.Name, msg))
			}
		}
		if e.Value != "" && e.ValueFrom != nil {
			errs = append(errs, field.Invalid(p.Child("valueFrom"), "", "may not be specified when `value` is not empty"))
		}
	}
	errs = append(errs, validateResources(&c.Resources, path.Child("resources"))...)
	mounts := map[string]bool{}
	for i, m := range c.VolumeMounts {
		p := path.Child("volumeMounts").Index(i)
		if m.Name == "" {
			errs = append(errs, field.Required(p.Child("name"), ""))
		} else if !volumes[m.Name] {
			errs = append(errs, field.NotFound(p.Child("name"), m.Name))
		}
		switch {
		case m.MountPath == "":
			errs = append(errs, field.Required(p.Child("mountPath"), ""))
		case mounts[m.MountPath]:
			errs = append(errs, field.Invalid(p.Child("mountPath"), m.MountPath, "must be unique"))
		}
		mounts[m.MountPath] = true
	}
	return errs
}

func validateContainerPorts(ports []corev1.ContainerPort, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	names := map[string]bool{}
	for i, port := range ports {
		p := path.Index(i)
		if port.Name != "" {
			for _, msg := range validation.IsValidPortName(port.Name) {
				errs = append(errs, field.Invalid(p.Child("name"), port.Name, msg))
			}
			if names[port.Name] {
				errs = append(errs, field.Duplicate(p.Child("name"), port.Name))
			}
			names[port.Name] = true
		}
		if port.ContainerPort == 0 {
			errs = append(errs, field.Required(p.Child("containerPort"), ""))
		} else {
			for _, msg := range validation.IsValidPortNum(int(port.ContainerPort)) {
				errs = append(errs, field.Invalid(p.Child("containerPort"), port.ContainerPort, msg))
			}
		}
		if port.HostPort != 0 {
			for _, msg := range validation.IsValidPortNum(int(port.HostPort)) {
				errs = append(errs, field.Invalid(p.Child("hostPort"), port.HostPort, msg))
			}
		}
		if !oneOf(string(port.Protocol), protocols) {
			errs = append(errs, field.NotSupported(p.Child("protocol"), port.Protocol, protocols))
		}
		if port.HostIP != "" {
			if _, err := netip.ParseAddr(port.HostIP); err != nil {
				errs = append(errs, field.Invalid(p.Child("hostIP"), port.HostIP, "must be a valid IP address"))
			}
		}
	}
	return errs
}

// validateResources checks names, signs and that no request exceeds its limit.
func validateResources(r *corev1.ResourceRequirements, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	for _, kind := range []struct {
		name string
		list corev1.ResourceList
	}{{"limits", r.Limits}, {"requests", r.Requests}} {
		for name, q := range kind.list {
			p := path.Child(kind.name).Key(string(name))
			for _, msg := range validation.IsQualifiedName(string(name)) {
				errs = append(errs, field.Invalid(p, name, msg))
			}
			if q.Sign() < 0 {
				errs = append(errs, field.Invalid(p, q.String(), "must be greater than or equal to 0"))
			}
		}
	}
	for name, req := range r.Requests {
		if lim, ok := r.Limits[name]; ok && req.Cmp(lim) > 0 {
			errs = append(errs, field.Invalid(path.Child("requests").Key(string(name)), req.String(),
				fmt.Sprintf("must be less than or equal to %s limit of %s", name, lim.String())))
		}
	}
	return errs
}

func validateTolerations(tolerations []corev1.Toleration, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	for i, t := range tolerations {
		p := path.Index(i)
		if t.Key != "" {
			for _, msg := range validation.IsQualifiedName(t.Key) {
				errs = append(errs, field.Invalid(p.Child("key"), t.Key, msg))
			}
		} else if t.Operator != corev1.TolerationOpExists {
			errs = append(errs, field.Invalid(p.Child("operator"), t.Operator, "operator must be Exists when `key` is empty, which means \"match all values and all keys\""))
		}
		if t.TolerationSeconds != nil && t.Effect != corev1.TaintEffectNoExecute {
			errs = append(errs, field.Invalid(p.Child("effect"), t.Effect, "effect must be 'NoExecute' when `tolerationSeconds` is set"))
		}
		switch t.Operator {
		case corev1.TolerationOpEqual, "":
			for _, msg := range validation.IsValidLabelValue(t.Value) {
				errs = append(errs, field.Invalid(p.Child("value"), t.Value, msg))
			}
		case corev1.TolerationOpExists:
			if t.Value != "" {
				errs = append(errs, field.Invalid(p.Child("value"), t.Value, "value must be empty when `operator` is 'Exists'"))
			}
		default:
			errs = append(errs, field.NotSupported(p.Child("operator"), t.Operator, []string{string(corev1.TolerationOpEqual), string(corev1.TolerationOpExists)}))
		}
		if t.Effect != "" && !oneOf(string(t.Effect), tolerationEffects) {
			errs = append(errs, field.NotSupported(p.Child("effect"), t.Effect, tolerationEffects))
		}
	}
	return errs
}

func validatePodStatus(s *corev1.PodStatus, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	if s.Phase != "" && !oneOf(string(s.Phase), podPhases) {
		errs = append(errs, field.NotSupported(path.Child("phase"), s.Phase, podPhases))
	}
	if s.PodIP != "" {
		if _, err := netip.ParseAddr(s.PodIP); err != nil {
			errs = append(errs, field.Invalid(path.Child("podIP"), s.PodIP, "must be a valid IP address"))
		}
	}
	for i, ip := range s.PodIPs {
		if _, err := netip.ParseAddr(ip.IP); err != nil {
			errs = append(errs, field.Invalid(path.Child("podIPs").Index(i).Child("ip"), ip.IP, "must be a valid IP address"))
		}
	}
	if len(s.PodIPs) > 0 && s.PodIP != "" && s.PodIPs[0].IP != s.PodIP {
		errs = append(errs, field.Invalid(path.Child("podIPs").Index(0).Child("ip"), s.PodIPs[0].IP, "must match status.podIP"))
	}
	if n := s.NominatedNodeName; n != "" {
		for _, msg := range validation.IsDNS1123Subdomain(n) {
			errs = append(errs, field.Invalid(path.Child("nominatedNodeName"), n, msg))
		}
	}
	return errs
}

// podUpdateRule is Kubernetes' wording for what a pod update may change.
const podUpdateRule = "pod updates may not change fields other than `spec.containers[*].image`,`spec.initContainers[*].image`,`spec.activeDeadlineSeconds`,`spec.tolerations` (only additions to existing tolerations),`spec.terminationGracePeriodSeconds` (allow it to be set to 1 if it was previously negative)"

// validatePodUpdate keeps the spec immutable except where Kubernetes allows change.
// spec.nodeName may go from empty to a node here; the BeforeUpdate hook refuses that
// unless the write comes from pods/binding.
// mirrorPodAnnotation marks a mirror pod, the API's copy of a node's static pod.
const mirrorPodAnnotation = "kubernetes.io/config.mirror"

func validatePodUpdate(p, old *corev1.Pod) field.ErrorList {
	var errs field.ErrorList
	spec := field.NewPath("spec")
	mutable := p.Spec.DeepCopy()
	if len(mutable.Containers) == len(old.Spec.Containers) {
		for i := range mutable.Containers {
			mutable.Containers[i].Image = old.Spec.Containers[i].Image
		}
	}
	if len(mutable.InitContainers) == len(old.Spec.InitContainers) {
		for i := range mutable.InitContainers {
			mutable.InitContainers[i].Image = old.Spec.InitContainers[i].Image
		}
	}
	if o, n := old.Spec.ActiveDeadlineSeconds, p.Spec.ActiveDeadlineSeconds; o != nil {
		switch {
		case n == nil:
			errs = append(errs, field.Invalid(spec.Child("activeDeadlineSeconds"), nil, "must not update from a positive integer to nil value"))
		case *n > *o:
			errs = append(errs, field.Invalid(spec.Child("activeDeadlineSeconds"), *n, fmt.Sprintf("must be less than or equal to previous value (%d)", *o)))
		}
	}
	mutable.ActiveDeadlineSeconds = old.Spec.ActiveDeadlineSeconds
	for i, t := range old.Spec.Tolerations {
		if !hasToleration(p.Spec.Tolerations, t) {
			errs = append(errs, field.Forbidden(spec.Child("tolerations").Index(i), "existing toleration can not be modified or removed: only additions are allowed"))
		}
	}
	mutable.Tolerations = old.Spec.Tolerations
	if o, n := old.Spec.TerminationGracePeriodSeconds, p.Spec.TerminationGracePeriodSeconds; o != nil && *o < 0 && n != nil && *n == 1 {
		mutable.TerminationGracePeriodSeconds = o
	}
	if old.Spec.NodeName == "" {
		mutable.NodeName = ""
	}
	if !apiequality.Semantic.DeepEqual(mutable, &old.Spec) {
		errs = append(errs, field.Forbidden(spec, podUpdateRule+"; changed: "+strings.Join(changedFields(mutable, &old.Spec, "spec."), ", ")))
	}
	// A mirror pod stays one and keeps the hash of the static pod it mirrors (the node
	// deletes and recreates it when the static pod changes); an ordinary pod may not
	// become one, which would hide it from the node that runs it.
	oldMirror, wasMirror := old.Annotations[mirrorPodAnnotation]
	newMirror, isMirror := p.Annotations[mirrorPodAnnotation]
	if wasMirror != isMirror || oldMirror != newMirror {
		errs = append(errs, field.Forbidden(field.NewPath("metadata", "annotations").Key(mirrorPodAnnotation),
			"may not be added, removed or changed: a mirror pod is replaced, not edited"))
	}
	if podTerminal(old) && p.Status.Phase != old.Status.Phase {
		errs = append(errs, field.Forbidden(field.NewPath("status", "phase"), fmt.Sprintf("may not change from the terminal phase %s to %s", old.Status.Phase, p.Status.Phase)))
	}
	return errs
}

func hasToleration(list []corev1.Toleration, t corev1.Toleration) bool {
	for _, x := range list {
		if apiequality.Semantic.DeepEqual(x, t) {
			return true
		}
	}
	return false
}

// changedFields names the top-level JSON fields that differ between a and b.
func changedFields(a, b any, prefix string) []string {
	var ma, mb map[string]json.RawMessage
	ja, _ := json.Marshal(a)
	jb, _ := json.Marshal(b)
	_ = json.Unmarshal(ja, &ma)
	_ = json.Unmarshal(jb, &mb)
	seen := map[string]bool{}
	var out []string
	for _, m := range []map[string]json.RawMessage{ma, mb} {
		for k := range m {
			if !seen[k] && string(ma[k]) != string(mb[k]) {
				out = append(out, prefix+k)
			}
			seen[k] = true
		}
	}
	sort.Strings(out)
	return out
}
