package bundle

import (
	"fmt"
	"math"
	"regexp"
	"strconv"
	"strings"

	specs "github.com/opencontainers/runtime-spec/specs-go"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

// defaultPath is what runtimes give a process whose image sets no PATH.
const defaultPath = "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

// buildEnv merges the image's environment with the container's, the container winning
// name by name: HOSTNAME first (as runtimes set it), then the image's variables, then
// the container's in order, each value expanded against the container variables before
// it (never the image's: the kubelet that expands them does not know the image).
func buildEnv(in Input, field string) ([]string, error) {
	var order []string
	vals := map[string]string{}
	set := func(k, v string) {
		if _, ok := vals[k]; !ok {
			order = append(order, k)
		}
		vals[k] = v
	}
	if !in.Pod.Spec.HostNetwork && in.Sandbox.Hostname != "" {
		set("HOSTNAME", in.Sandbox.Hostname)
	}
	for _, kv := range in.Image.Env {
		k, v, _ := strings.Cut(kv, "=")
		if k != "" {
			set(k, v)
		}
	}
	c := in.Container
	if len(c.EnvFrom) > 0 {
		return nil, fmt.Errorf("%s.envFrom: ConfigMap and Secret sources are not supported by this node yet", field)
	}
	defined := map[string]string{} // container variables so far, for expansion
	lookup := func(name string) (string, bool) { v, ok := defined[name]; return v, ok }
	for i, e := range c.Env {
		ef := fmt.Sprintf("%s.env[%d]", field, i)
		if e.Name == "" || strings.Contains(e.Name, "=") {
			return nil, fmt.Errorf("%s.name: %q is not a valid variable name", ef, e.Name)
		}
		v := Expand(e.Value, lookup)
		if e.ValueFrom != nil {
			var err error
			if v, err = valueFrom(in, e.ValueFrom, ef); err != nil {
				return nil, err
			}
		}
		defined[e.Name] = v
		set(e.Name, v)
	}
	if _, ok := vals["PATH"]; !ok {
		set("PATH", strings.TrimPrefix(defaultPath, "PATH="))
	}
	out := make([]string, 0, len(order))
	for _, k := range order {
		out = append(out, k+"="+vals[k])
	}
	return out, nil
}

var labelRef = regexp.MustCompile(`^metadata\.(labels|annotations)\['([^']*)'\]$`)

func valueFrom(in Input, src *corev1.EnvVarSource, ef string) (string, error) {
	pod := in.Pod
	switch {
	case src.FieldRef != nil:
		p := src.FieldRef.FieldPath
		switch p {
		case "metadata.name":
			return pod.Name, nil
		case "metadata.namespace":
			return pod.Namespace, nil
		case "metadata.uid":
			return string(pod.UID), nil
		case "spec.nodeName":
			return pod.Spec.NodeName, nil
		case "spec.serviceAccountName":
			return pod.Spec.ServiceAccountName, nil
		case "status.podIP", "status.podIPs":
			return in.PodIP, nil
		case "status.hostIP", "status.hostIPs":
			return in.HostIP, nil
		}
		if m := labelRef.FindStringSubmatch(p); m != nil {
			if m[1] == "labels" {
				return pod.Labels[m[2]], nil
			}
			return pod.Annotations[m[2]], nil
		}
		return "", fmt.Errorf("%s.valueFrom.fieldRef.fieldPath: %q is not a supported field", ef, p)
	case src.ResourceFieldRef != nil:
		return resourceFieldValue(in, src.ResourceFieldRef, ef)
	case src.ConfigMapKeyRef != nil, src.SecretKeyRef != nil:
		return "", fmt.Errorf("%s.valueFrom: ConfigMap and Secret references are not supported by this node yet", ef)
	}
	return "", fmt.Errorf("%s.valueFrom: no source set", ef)
}

// resourceFieldValue is a container's limit or request in units of the divisor, rounded
// up; an unset limit reads as the node's capacity, as the downward API defines.
func resourceFieldValue(in Input, ref *corev1.ResourceFieldSelector, ef string) (string, error) {
	c := in.Container
	if ref.ContainerName != "" && ref.ContainerName != c.Name {
		c = findContainer(in.Pod, ref.ContainerName)
		if c == nil {
			return "", fmt.Errorf("%s.valueFrom.resourceFieldRef.containerName: no container %q in the pod", ef, ref.ContainerName)
		}
	}
	kind, res, ok := strings.Cut(ref.Resource, ".")
	if !ok || (kind != "limits" && kind != "requests") || (res != "cpu" && res != "memory") {
		return "", fmt.Errorf("%s.valueFrom.resourceFieldRef.resource: %q is not supported (limits.cpu, limits.memory, requests.cpu, requests.memory)", ef, ref.Resource)
	}
	list := c.Resources.Limits
	if kind == "requests" {
		list = c.Resources.Requests
	}
	q, set := list[corev1.ResourceName(res)]
	divisor := ref.Divisor
	if divisor.IsZero() {
		divisor = resource.MustParse("1")
	}
	var amount, unit float64
	if res == "cpu" {
		unit = float64(divisor.MilliValue())
		if set {
			amount = float64(q.MilliValue())
		} else if kind == "limits" && in.NodeMilliCPU > 0 {
			amount = float64(in.NodeMilliCPU)
		}
	} else {
		unit = float64(divisor.Value())
		if set {
			amount = float64(q.Value())
		} else if kind == "limits" && in.NodeMemoryBytes > 0 {
			amount = float64(in.NodeMemoryBytes)
		}
	}
	if unit <= 0 {
		return "", fmt.Errorf("%s.valueFrom.resourceFieldRef.divisor: %q must be positive", ef, ref.Divisor.String())
	}
	v := math.Ceil(amount / unit)
	if res == "cpu" && v < 1 && amount > 0 {
		v = 1
	}
	return strconv.FormatInt(int64(v), 10), nil
}

func findContainer(pod *corev1.Pod, name string) *corev1.Container {
	for i := range pod.Spec.Containers {
		if pod.Spec.Containers[i].Name == name {
			return &pod.Spec.Containers[i]
		}
	}
	for i := range pod.Spec.InitContainers {
		if pod.Spec.InitContainers[i].Name == name {
			return &pod.Spec.InitContainers[i]
		}
	}
	return nil
}

// buildArgs combines command and args with the image's entrypoint and cmd as the
// Container API documents: command replaces the entrypoint (and drops the image's
// cmd), args replace the cmd; both expand $(VAR) against the container's environment.
func buildArgs(in Input, env []string, field string) ([]string, error) {
	c := in.Container
	vars := map[string]string{}
	for _, e := range c.Env {
		vars[e.Name] = "" // placeholders: only container variables expand
	}
	for _, kv := range env {
		k, v, _ := strings.Cut(kv, "=")
		if _, ok := vars[k]; ok {
			vars[k] = v
		}
	}
	lookup := func(name string) (string, bool) { v, ok := vars[name]; return v, ok }
	expand := func(list []string) []string {
		out := make([]string, len(list))
		for i, s := range list {
			out[i] = Expand(s, lookup)
		}
		return out
	}
	var args []string
	switch {
	case len(c.Command) > 0:
		args = append(expand(c.Command), expand(c.Args)...)
	case len(c.Args) > 0:
		args = append(append([]string(nil), in.Image.Entrypoint...), expand(c.Args)...)
	default:
		args = append(append([]string(nil), in.Image.Entrypoint...), in.Image.Cmd...)
	}
	if len(args) == 0 || args[0] == "" {
		return nil, fmt.Errorf("%s: no command: the container sets no command and the image %q has no entrypoint or cmd", field, c.Image)
	}
	return args, nil
}

// buildUser resolves uid, gid and supplementary groups: runAsUser and runAsGroup
// (container over pod) override the image's User; supplementalGroups, fsGroup and the
// groups the image's /etc/group lists the user in are added.
func buildUser(in Input, sc security, field string) (specs.User, error) {
	var r resolvedUser
	if sc.runAsUser != nil {
		if *sc.runAsUser < 0 || *sc.runAsUser > math.MaxUint32 {
			return specs.User{}, fmt.Errorf("%s.securityContext.runAsUser: %d is out of range", field, *sc.runAsUser)
		}
		r = in.Users.resolveUID(uint32(*sc.runAsUser))
	} else {
		var err error
		if r, err = in.Users.resolveImageUser(in.Image.User); err != nil {
			return specs.User{}, fmt.Errorf("%s: %w", field, err)
		}
	}
	if sc.runAsGroup != nil {
		if *sc.runAsGroup < 0 || *sc.runAsGroup > math.MaxUint32 {
			return specs.User{}, fmt.Errorf("%s.securityContext.runAsGroup: %d is out of range", field, *sc.runAsGroup)
		}
		r.gid = uint32(*sc.runAsGroup)
	}
	if sc.runAsNonRoot && r.uid == 0 {
		return specs.User{}, fmt.Errorf("%s.securityContext.runAsNonRoot: the container would run as root (uid 0)", field)
	}
	u := specs.User{UID: r.uid, GID: r.gid}
	seen := map[uint32]bool{r.gid: true}
	add := func(g uint32) {
		if !seen[g] {
			seen[g] = true
			u.AdditionalGids = append(u.AdditionalGids, g)
		}
	}
	for _, g := range r.imageGroup {
		add(g)
	}
	if psc := in.Pod.Spec.SecurityContext; psc != nil {
		for _, g := range psc.SupplementalGroups {
			if g < 0 || g > math.MaxUint32 {
				return specs.User{}, fmt.Errorf("spec.securityContext.supplementalGroups: %d is out of range", g)
			}
			add(uint32(g))
		}
		if psc.FSGroup != nil {
			if *psc.FSGroup < 0 || *psc.FSGroup > math.MaxUint32 {
				return specs.User{}, fmt.Errorf("spec.securityContext.fsGroup: %d is out of range", *psc.FSGroup)
			}
			add(uint32(*psc.FSGroup))
		}
	}
	return u, nil
}
