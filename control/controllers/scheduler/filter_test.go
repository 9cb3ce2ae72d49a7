package scheduler

import (
	"slices"
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// readyNode has 4 cpus, 8 GiB, 110 pods and 100 GiB of ephemeral storage.
func readyNode(name string) *v1.Node {
	return &v1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"kubernetes.io/hostname": name}},
		Status: v1.NodeStatus{
			Allocatable: v1.ResourceList{v1.ResourceCPU: resource.MustParse("4"), v1.ResourceMemory: resource.MustParse("8Gi"),
				v1.ResourcePods: resource.MustParse("110"), v1.ResourceEphemeralStorage: resource.MustParse("100Gi")},
			Conditions: []v1.NodeCondition{{Type: v1.NodeReady, Status: v1.ConditionTrue}},
		},
	}
}

// newPod requests cpu and memory ("" for none).
func newPod(name, cpu, mem string) *v1.Pod {
	req := v1.ResourceList{}
	if cpu != "" {
		req[v1.ResourceCPU] = resource.MustParse(cpu)
	}
	if mem != "" {
		req[v1.ResourceMemory] = resource.MustParse(mem)
	}
	return &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default", UID: types.UID("uid-" + name)},
		Spec: v1.PodSpec{SchedulerName: v1.DefaultSchedulerName,
			Containers: []v1.Container{{Name: "c", Resources: v1.ResourceRequirements{Requests: req}}}},
		Status: v1.PodStatus{Phase: v1.PodPending},
	}
}

func withCondition(n *v1.Node, t v1.NodeConditionType, s v1.ConditionStatus) *v1.Node {
	for i := range n.Status.Conditions {
		if n.Status.Conditions[i].Type == t {
			n.Status.Conditions[i].Status = s
			return n
		}
	}
	n.Status.Conditions = append(n.Status.Conditions, v1.NodeCondition{Type: t, Status: s})
	return n
}

func tolerating(p *v1.Pod, tols ...v1.Toleration) *v1.Pod {
	p.Spec.Tolerations = append(p.Spec.Tolerations, tols...)
	return p
}

func TestFilter(t *testing.T) {
	taint := func(key, value string, effect v1.TaintEffect) func(*v1.Node) {
		return func(n *v1.Node) {
			n.Spec.Taints = append(n.Spec.Taints, v1.Taint{Key: key, Value: value, Effect: effect})
		}
	}
	exists := func(key string) v1.Toleration { return v1.Toleration{Key: key, Operator: v1.TolerationOpExists} }
	used := func(cpu, mem string, pods int) nodeUsage {
		p := newPod("x", cpu, mem)
		u := nodeUsage{}
		u.add(demandOf(p), 1)
		u.pods = pods
		return u
	}
	for _, tc := range []struct {
		name  string
		node  func(*v1.Node)
		usage nodeUsage
		pod   *v1.Pod
		want  []string
	}{
		{name: "fits", pod: newPod("p", "1", "1Gi")},
		{name: "not ready", node: func(n *v1.Node) { withCondition(n, v1.NodeReady, v1.ConditionFalse) }, pod: newPod("p", "", ""),
			want: []string{reasonNotReady}},
		{name: "ready unknown", node: func(n *v1.Node) { withCondition(n, v1.NodeReady, v1.ConditionUnknown) }, pod: newPod("p", "", ""),
			want: []string{reasonNotReady}},
		{name: "no Ready condition at all", node: func(n *v1.Node) { n.Status.Conditions = nil }, pod: newPod("p", "", ""),
			want: []string{reasonNotReady}},
		{name: "not ready, tolerated like a DaemonSet pod", node: func(n *v1.Node) { withCondition(n, v1.NodeReady, v1.ConditionFalse) },
			pod: tolerating(newPod("p", "", ""), exists(v1.TaintNodeNotReady))},
		{name: "unschedulable", node: func(n *v1.Node) { n.Spec.Unschedulable = true }, pod: newPod("p", "", ""),
			want: []string{reasonUnschedulable}},
		{name: "unschedulable, tolerated", node: func(n *v1.Node) { n.Spec.Unschedulable = true },
			pod: tolerating(newPod("p", "", ""), exists(v1.TaintNodeUnschedulable))},
		{name: "NoSchedule taint", node: taint("dedicated", "gpu", v1.TaintEffectNoSchedule), pod: newPod("p", "", ""),
			want: []string{"node(s) had untolerated taint {dedicated: gpu}"}},
		{name: "NoExecute taint", node: taint(v1.TaintNodeUnreachable, "", v1.TaintEffectNoExecute), pod: newPod("p", "", ""),
			want: []string{"node(s) had untolerated taint {node.kubernetes.io/unreachable: }"}},
		{name: "PreferNoSchedule taint only steers", node: taint("dedicated", "gpu", v1.TaintEffectPreferNoSchedule), pod: newPod("p", "", "")},
		{name: "taint tolerated by value", node: taint("dedicated", "gpu", v1.TaintEffectNoSchedule),
			pod: tolerating(newPod("p", "", ""), v1.Toleration{Key: "dedicated", Operator: v1.TolerationOpEqual, Value: "gpu", Effect: v1.TaintEffectNoSchedule})},
		{name: "toleration for another value", node: taint("dedicated", "gpu", v1.TaintEffectNoSchedule),
			pod:  tolerating(newPod("p", "", ""), v1.Toleration{Key: "dedicated", Operator: v1.TolerationOpEqual, Value: "db"}),
			want: []string{"node(s) had untolerated taint {dedicated: gpu}"}},
		{name: "nodeSelector matches", pod: func() *v1.Pod {
			p := newPod("p", "", "")
			p.Spec.NodeSelector = map[string]string{"kubernetes.io/hostname": "n1"}
			return p
		}()},
		{name: "nodeSelector does not match", pod: func() *v1.Pod {
			p := newPod("p", "", "")
			p.Spec.NodeSelector = map[string]string{"disk": "ssd"}
			return p
		}(), want: []string{reasonAffinity}},
		{name: "memory pressure refuses BestEffort", node: func(n *v1.Node) { withCondition(n, v1.NodeMemoryPressure, v1.ConditionTrue) },
			pod: newPod("p", "", ""), want: []string{reasonMemPressure}},
		{name: "memory pressure takes Burstable", node: func(n *v1.Node) { withCondition(n, v1.NodeMemoryPressure, v1.ConditionTrue) },
			pod: newPod("p", "100m", "")},
		{name: "disk pressure", node: func(n *v1.Node) { withCondition(n, v1.NodeDiskPressure, v1.ConditionTrue) },
			pod: newPod("p", "1", "1Gi"), want: []string{reasonDiskPressure}},
		{name: "pid pressure", node: func(n *v1.Node) { withCondition(n, v1.NodePIDPressure, v1.ConditionTrue) },
			pod: newPod("p", "1", "1Gi"), want: []string{reasonPIDPressure}},
		{name: "pid pressure, tolerated", node: func(n *v1.Node) { withCondition(n, v1.NodePIDPressure, v1.ConditionTrue) },
			pod: tolerating(newPod("p", "1", "1Gi"), exists(v1.TaintNodePIDPressure))},
		{name: "cpu short", usage: used("3500m", "", 1), pod: newPod("p", "600m", ""), want: []string{"Insufficient cpu"}},
		{name: "cpu exactly enough", usage: used("3400m", "", 1), pod: newPod("p", "600m", "")},
		{name: "memory and cpu short", usage: used("3", "7Gi", 1), pod: newPod("p", "2", "2Gi"),
			want: []string{"Insufficient cpu", "Insufficient memory"}},
		{name: "too many pods", usage: used("", "", 110), pod: newPod("p", "", ""), want: []string{reasonTooManyPods}},
		{name: "ephemeral storage short", pod: func() *v1.Pod {
			p := newPod("p", "", "")
			p.Spec.Containers[0].Resources.Requests[v1.ResourceEphemeralStorage] = resource.MustParse("200Gi")
			return p
		}(), want: []string{"Insufficient ephemeral-storage"}},
		{name: "extended resource the node does not have", pod: func() *v1.Pod {
			p := newPod("p", "", "")
			p.Spec.Containers[0].Resources.Requests["example.com/gpu"] = resource.MustParse("1")
			return p
		}(), want: []string{"Insufficient example.com/gpu"}},
		{name: "the first failing check decides", node: func(n *v1.Node) {
			n.Spec.Unschedulable = true
			n.Spec.Taints = []v1.Taint{{Key: "a", Effect: v1.TaintEffectNoSchedule}}
		}, usage: used("4", "", 1), pod: newPod("p", "1", ""), want: []string{reasonUnschedulable}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			n := readyNode("n1")
			if tc.node != nil {
				tc.node(n)
			}
			got := filter(tc.pod, demandOf(tc.pod), candidate{node: n, usage: tc.usage})
			if !slices.Equal(got, tc.want) {
				t.Fatalf("reasons %q, want %q", got, tc.want)
			}
		})
	}
}

func TestRequiredNodeAffinity(t *testing.T) {
	node := readyNode("n1")
	node.Labels["zone"] = "a"
	node.Labels["cores"] = "16"
	term := func(exprs []v1.NodeSelectorRequirement, fields ...v1.NodeSelectorRequirement) v1.NodeSelectorTerm {
		return v1.NodeSelectorTerm{MatchExpressions: exprs, MatchFields: fields}
	}
	req := func(key string, op v1.NodeSelectorOperator, values ...string) v1.NodeSelectorRequirement {
		return v1.NodeSelectorRequirement{Key: key, Operator: op, Values: values}
	}
	for _, tc := range []struct {
		name  string
		terms []v1.NodeSelectorTerm
		want  bool
	}{
		{"In", []v1.NodeSelectorTerm{term([]v1.NodeSelectorRequirement{req("zone", v1.NodeSelectorOpIn, "a", "b")})}, true},
		{"NotIn", []v1.NodeSelectorTerm{term([]v1.NodeSelectorRequirement{req("zone", v1.NodeSelectorOpNotIn, "a")})}, false},
		{"NotIn a missing label", []v1.NodeSelectorTerm{term([]v1.NodeSelectorRequirement{req("rack", v1.NodeSelectorOpNotIn, "r1")})}, true},
		{"Exists and Gt", []v1.NodeSelectorTerm{term([]v1.NodeSelectorRequirement{req("zone", v1.NodeSelectorOpExists), req("cores", v1.NodeSelectorOpGt, "8")})}, true},
		{"Lt fails", []v1.NodeSelectorTerm{term([]v1.NodeSelectorRequirement{req("cores", v1.NodeSelectorOpLt, "8")})}, false},
		{"DoesNotExist", []v1.NodeSelectorTerm{term([]v1.NodeSelectorRequirement{req("zone", v1.NodeSelectorOpDoesNotExist)})}, false},
		{"terms are ORed", []v1.NodeSelectorTerm{
			term([]v1.NodeSelectorRequirement{req("zone", v1.NodeSelectorOpIn, "b")}),
			term([]v1.NodeSelectorRequirement{req("zone", v1.NodeSelectorOpIn, "a")})}, true},
		{"matchFields on the name", []v1.NodeSelectorTerm{term(nil, req("metadata.name", v1.NodeSelectorOpIn, "n1"))}, true},
		{"matchFields on another field", []v1.NodeSelectorTerm{term(nil, req("spec.podCIDR", v1.NodeSelectorOpIn, "x"))}, false},
		{"an empty term matches nothing", []v1.NodeSelectorTerm{{}}, false},
		{"no terms match nothing", []v1.NodeSelectorTerm{}, false},
		{"an invalid expression matches nothing", []v1.NodeSelectorTerm{term([]v1.NodeSelectorRequirement{req("cores", v1.NodeSelectorOpGt, "many")})}, false},
	} {
		p := newPod("p", "", "")
		p.Spec.Affinity = &v1.Affinity{NodeAffinity: &v1.NodeAffinity{
			RequiredDuringSchedulingIgnoredDuringExecution: &v1.NodeSelector{NodeSelectorTerms: tc.terms}}}
		if got := matchesNodeSelector(p, node); got != tc.want {
			t.Errorf("%s: %v, want %v", tc.name, got, tc.want)
		}
	}
}

func TestEffectiveRequests(t *testing.T) {
	sidecar := v1.ContainerRestartPolicyAlways
	c := func(cpu string, restart *v1.ContainerRestartPolicy) v1.Container {
		return v1.Container{RestartPolicy: restart, Resources: v1.ResourceRequirements{Requests: v1.ResourceList{v1.ResourceCPU: resource.MustParse(cpu)}}}
	}
	for _, tc := range []struct {
		name string
		spec v1.PodSpec
		cpu  int64 // millicores
	}{
		{"containers add up", v1.PodSpec{Containers: []v1.Container{c("100m", nil), c("200m", nil)}}, 300},
		{"a bigger init container wins", v1.PodSpec{Containers: []v1.Container{c("100m", nil)}, InitContainers: []v1.Container{c("1", nil)}}, 1000},
		{"a smaller init container does not count", v1.PodSpec{Containers: []v1.Container{c("500m", nil)}, InitContainers: []v1.Container{c("200m", nil)}}, 500},
		{"sidecars run with the containers", v1.PodSpec{Containers: []v1.Container{c("500m", nil)}, InitContainers: []v1.Container{c("200m", &sidecar)}}, 700},
		{"an init container after a sidecar runs beside it", v1.PodSpec{Containers: []v1.Container{c("100m", nil)},
			InitContainers: []v1.Container{c("300m", &sidecar), c("1", nil)}}, 1300},
		{"overhead", v1.PodSpec{Containers: []v1.Container{c("100m", nil)}, Overhead: v1.ResourceList{v1.ResourceCPU: resource.MustParse("50m")}}, 150},
		{"pod-level requests replace the sum", v1.PodSpec{Containers: []v1.Container{c("100m", nil)},
			Resources: &v1.ResourceRequirements{Requests: v1.ResourceList{v1.ResourceCPU: resource.MustParse("2")}}}, 2000},
	} {
		if got := demandOf(&v1.Pod{Spec: tc.spec}).requests[v1.ResourceCPU]; got != tc.cpu {
			t.Errorf("%s: %dm, want %dm", tc.name, got, tc.cpu)
		}
	}
	d := demandOf(newPod("p", "", ""))
	if d.scoringCPU != defaultMilliCPURequest || d.scoringMemory != defaultMemoryRequest || d.requests[v1.ResourceCPU] != 0 {
		t.Fatalf("a pod without requests: %+v; scores with the defaults, filters with nothing", d)
	}
	if !bestEffort(newPod("p", "", "")) || bestEffort(newPod("p", "", "1Mi")) {
		t.Fatal("BestEffort is exactly no cpu and memory requests or limits")
	}
}
