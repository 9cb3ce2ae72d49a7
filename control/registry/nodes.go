package registry

import (
	"net"
	"slices"
	"sort"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/plinth/plinth/control/apiserver"
)

// Nodes is core/v1 nodes, cluster-scoped, with the status subresource.
func Nodes() *apiserver.Resource {
	return &apiserver.Resource{
		GroupVersion: schema.GroupVersion{Version: "v1"},
		Plural:       "nodes", Kind: "Node", ShortNames: []string{"no"},
		HasStatus: true,
		New:       func() runtime.Object { return &corev1.Node{} },
		Validate:  func(obj runtime.Object) field.ErrorList { return validateNode(obj.(*corev1.Node)) },
		ValidateUpdate: func(obj, old runtime.Object) field.ErrorList {
			n, o := obj.(*corev1.Node), old.(*corev1.Node)
			var errs field.ErrorList
			// podCIDR and podCIDRs may be set once and then never changed, as in
			// Kubernetes: a node's pods hold addresses from them.
			if o.Spec.PodCIDR != "" && n.Spec.PodCIDR != o.Spec.PodCIDR {
				errs = append(errs, field.Forbidden(field.NewPath("spec", "podCIDR"), "node updates may not change podCIDR except from \"\" to a valid value"))
			}
			if len(o.Spec.PodCIDRs) > 0 && !slices.Equal(n.Spec.PodCIDRs, o.Spec.PodCIDRs) {
				errs = append(errs, field.Forbidden(field.NewPath("spec", "podCIDRs"), "node updates may not change podCIDRs except from empty to valid values"))
			}
			return errs
		},
		Columns: []metav1.TableColumnDefinition{
			{Name: "Status", Type: "string", Description: "The status of the node"},
			{Name: "Roles", Type: "string", Description: "The roles of the node"},
			apiserver.AgeColumn,
			{Name: "Version", Type: "string", Description: "Kubelet Version reported by the node."},
			{Name: "Internal-IP", Type: "string", Priority: 1, Description: "List of internal IPs in the node."},
			{Name: "External-IP", Type: "string", Priority: 1, Description: "List of external IPs in the node."},
			{Name: "OS-Image", Type: "string", Priority: 1, Description: "OS Image reported by the node from /etc/os-release (e.g. Debian GNU/Linux 12 (bookworm))."},
			{Name: "Kernel-Version", Type: "string", Priority: 1, Description: "Kernel Version reported by the node from 'uname -r' (e.g. 6.1.0-18-amd64)."},
			{Name: "Container-Runtime", Type: "string", Priority: 1, Description: "Container Runtime Version reported by the node through runtime remote API (e.g. runc://1.1.5)."},
		},
		Row: func(obj runtime.Object, now time.Time) []any {
			n := obj.(*corev1.Node)
			return []any{
				nodeStatus(n), nodeRoles(n.Labels), apiserver.Age(n.CreationTimestamp, now),
				n.Status.NodeInfo.KubeletVersion,
				nodeAddress(n, corev1.NodeInternalIP), nodeAddress(n, corev1.NodeExternalIP),
				orUnknown(n.Status.NodeInfo.OSImage), orUnknown(n.Status.NodeInfo.KernelVersion),
				orUnknown(n.Status.NodeInfo.ContainerRuntimeVersion),
			}
		},
	}
}

// nodeStatus is the STATUS column: the Ready condition, plus SchedulingDisabled when
// cordoned.
func nodeStatus(n *corev1.Node) string {
	status := "Unknown"
	for _, c := range n.Status.Conditions {
		if c.Type != corev1.NodeReady {
			continue
		}
		switch c.Status {
		case corev1.ConditionTrue:
			status = "Ready"
		case corev1.ConditionFalse:
			status = "NotReady"
		}
	}
	if n.Spec.Unschedulable {
		status += ",SchedulingDisabled"
	}
	return status
}

// nodeRoles reads node-role.kubernetes.io/ROLE labels and the older kubernetes.io/role.
func nodeRoles(labels map[string]string) string {
	var roles []string
	for k, v := range labels {
		switch {
		case strings.HasPrefix(k, "node-role.kubernetes.io/"):
			if role := strings.TrimPrefix(k, "node-role.kubernetes.io/"); role != "" {
				roles = append(roles, role)
			}
		case k == "kubernetes.io/role" && v != "":
			roles = append(roles, v)
		}
	}
	if len(roles) == 0 {
		return "<none>"
	}
	sort.Strings(roles)
	return strings.Join(roles, ",")
}

func nodeAddress(n *corev1.Node, t corev1.NodeAddressType) string {
	for _, a := range n.Status.Addresses {
		if a.Type == t {
			return a.Address
		}
	}
	return "<none>"
}

func orUnknown(s string) string {
	if s == "" {
		return "<unknown>"
	}
	return s
}

var taintEffects = map[corev1.TaintEffect]bool{
	corev1.TaintEffectNoSchedule: true, corev1.TaintEffectPreferNoSchedule: true, corev1.TaintEffectNoExecute: true,
}

func validateNode(n *corev1.Node) field.ErrorList {
	var errs field.ErrorList
	spec := field.NewPath("spec")
	if n.Spec.PodCIDR != "" {
		if _, _, err := net.ParseCIDR(n.Spec.PodCIDR); err != nil {
			errs = append(errs, field.Invalid(spec.Child("podCIDR"), n.Spec.PodCIDR, "must be a CIDR such as 10.244.1.0/24"))
		}
	}
	families := map[bool]bool{}
	for i, cidr := range n.Spec.PodCIDRs {
		_, ipnet, err := net.ParseCIDR(cidr)
		if err != nil {
			errs = append(errs, field.Invalid(spec.Child("podCIDRs").Index(i), cidr, "must be a CIDR such as 10.244.1.0/24"))
			continue
		}
		v4 := ipnet.IP.To4() != nil
		if families[v4] {
			errs = append(errs, field.Invalid(spec.Child("podCIDRs"), n.Spec.PodCIDRs, "may hold at most one CIDR per IP family"))
		}
		families[v4] = true
	}
	if len(n.Spec.PodCIDRs) > 0 && n.Spec.PodCIDR != "" && n.Spec.PodCIDR != n.Spec.PodCIDRs[0] {
		errs = append(errs, field.Invalid(spec.Child("podCIDR"), n.Spec.PodCIDR, "must equal podCIDRs[0] ("+n.Spec.PodCIDRs[0]+") when both are set"))
	}
	seen := map[string]bool{}
	for i, t := range n.Spec.Taints {
		p := spec.Child("taints").Index(i)
		for _, msg := range validation.IsQualifiedName(t.Key) {
			errs = append(errs, field.Invalid(p.Child("key"), t.Key, msg))
		}
		if t.Value != "" {
			for _, msg := range validation.IsValidLabelValue(t.Value) {
				errs = append(errs, field.Invalid(p.Child("value"), t.Value, msg))
			}
		}
		if !taintEffects[t.Effect] {
			errs = append(errs, field.NotSupported(p.Child("effect"), t.Effect, []string{"NoSchedule", "PreferNoSchedule", "NoExecute"}))
		}
		id := t.Key + ":" + string(t.Effect)
		if seen[id] {
			errs = append(errs, field.Duplicate(p, id))
		}
		seen[id] = true
	}
	return errs
}
