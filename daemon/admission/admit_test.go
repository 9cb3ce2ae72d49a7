package admission

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	specs "github.com/opencontainers/runtime-spec/specs-go"
	corev1 "k8s.io/api/core/v1"

	"github.com/plinth/plinth/daemon/seccomp"
)

var roomy = list("cpu", "4", "memory", "8Gi", "ephemeral-storage", "100Gi", "pods", "110")

func bestEffortPod() *corev1.Pod { return podWith(ctr("a", nil, nil)) }

func burstablePod() *corev1.Pod { return podWith(ctr("a", list("memory", "10Mi"), nil)) }

func criticalByPriority() *corev1.Pod {
	p := bestEffortPod()
	prio := int32(2000000000)
	p.Spec.Priority = &prio
	return p
}

func staticPod() *corev1.Pod {
	p := bestEffortPod()
	p.Annotations = map[string]string{"kubernetes.io/config.source": "file"}
	return p
}

func mirrorPod() *corev1.Pod {
	p := bestEffortPod()
	p.Annotations = map[string]string{"kubernetes.io/config.source": "api", "kubernetes.io/config.mirror": "abc"}
	return p
}

func withPorts(p *corev1.Pod, ports ...corev1.ContainerPort) *corev1.Pod {
	p.Spec.Containers[0].Ports = ports
	return p
}

func TestAdmitUnderPressure(t *testing.T) {
	mem, disk, pid := corev1.NodeMemoryPressure, corev1.NodeDiskPressure, corev1.NodePIDPressure
	tolerating := func(tol corev1.Toleration) *corev1.Pod {
		p := bestEffortPod()
		p.Spec.Tolerations = []corev1.Toleration{tol}
		return p
	}
	tests := []struct {
		name     string
		pod      *corev1.Pod
		pressure []corev1.NodeConditionType
		want     Result
	}{
		{"no pressure", bestEffortPod(), nil, admitted},
		{"memory pressure, best effort", bestEffortPod(), []corev1.NodeConditionType{mem},
			Result{false, "Evicted", "The node had condition: [MemoryPressure]."}},
		{"memory pressure, burstable", burstablePod(), []corev1.NodeConditionType{mem}, admitted},
		{"memory pressure, best effort tolerating the memory-pressure taint",
			tolerating(corev1.Toleration{Key: "node.kubernetes.io/memory-pressure", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule}),
			[]corev1.NodeConditionType{mem}, admitted},
		{"memory pressure, best effort tolerating everything",
			tolerating(corev1.Toleration{Operator: corev1.TolerationOpExists}), []corev1.NodeConditionType{mem}, admitted},
		{"memory pressure, best effort tolerating only disk pressure",
			tolerating(corev1.Toleration{Key: "node.kubernetes.io/disk-pressure", Operator: corev1.TolerationOpExists}),
			[]corev1.NodeConditionType{mem}, Result{false, "Evicted", "The node had condition: [MemoryPressure]."}},
		{"disk pressure refuses burstable", burstablePod(), []corev1.NodeConditionType{disk},
			Result{false, "Evicted", "The node had condition: [DiskPressure]."}},
		{"PID pressure refuses burstable", burstablePod(), []corev1.NodeConditionType{pid},
			Result{false, "Evicted", "The node had condition: [PIDPressure]."}},
		{"memory and disk pressure refuse burstable", burstablePod(), []corev1.NodeConditionType{mem, disk},
			Result{false, "Evicted", "The node had condition: [MemoryPressure DiskPressure]."}},
		{"tolerating memory pressure does not help under disk pressure too",
			tolerating(corev1.Toleration{Operator: corev1.TolerationOpExists}), []corev1.NodeConditionType{mem, disk},
			Result{false, "Evicted", "The node had condition: [MemoryPressure DiskPressure]."}},
		{"critical by priority under disk pressure", criticalByPriority(), []corev1.NodeConditionType{disk, pid}, admitted},
		{"static pod under disk pressure", staticPod(), []corev1.NodeConditionType{disk}, admitted},
		{"mirror pod under memory pressure", mirrorPod(), []corev1.NodeConditionType{mem}, admitted},
		{"priority just below critical", func() *corev1.Pod {
			p := criticalByPriority()
			*p.Spec.Priority--
			return p
		}(), []corev1.NodeConditionType{disk}, Result{false, "Evicted", "The node had condition: [DiskPressure]."}},
		{"other conditions are not pressure", bestEffortPod(), []corev1.NodeConditionType{corev1.NodeNetworkUnavailable}, admitted},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := New().Admit(Input{Pod: tt.pod, Node: node("n1", roomy), Pressure: tt.pressure})
			if got != tt.want {
				t.Errorf("Admit = %+v, want %+v", got, tt.want)
			}
		})
	}
}

func TestPressureFromNode(t *testing.T) {
	n := node("n1", roomy)
	n.Status.Conditions = []corev1.NodeCondition{
		{Type: corev1.NodeReady, Status: corev1.ConditionTrue},
		{Type: corev1.NodePIDPressure, Status: corev1.ConditionTrue},
		{Type: corev1.NodeDiskPressure, Status: corev1.ConditionFalse},
		{Type: corev1.NodeMemoryPressure, Status: corev1.ConditionTrue},
	}
	got := PressureFromNode(n)
	if want := []corev1.NodeConditionType{corev1.NodeMemoryPressure, corev1.NodePIDPressure}; !equalTypes(got, want) {
		t.Errorf("PressureFromNode = %v, want %v", got, want)
	}
	if got := PressureFromNode(nil); got != nil {
		t.Errorf("PressureFromNode(nil) = %v", got)
	}
}

func equalTypes(a, b []corev1.NodeConditionType) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func TestAdmitResources(t *testing.T) {
	small := list("cpu", "1", "memory", "1Gi", "ephemeral-storage", "10Gi", "pods", "3")
	others := []*corev1.Pod{
		podWith(ctr("a", list("cpu", "600m", "memory", "512Mi", "ephemeral-storage", "4Gi"), nil)),
		podWith(ctr("b", list("cpu", "200m"), nil)),
	}
	tests := []struct {
		name   string
		pod    *corev1.Pod
		alloc  corev1.ResourceList
		others []*corev1.Pod
		want   Result
	}{
		{"fits exactly", podWith(ctr("a", list("cpu", "200m", "memory", "512Mi", "ephemeral-storage", "6Gi"), nil)), small, others, admitted},
		{"cpu short by 1m", podWith(ctr("a", list("cpu", "201m"), nil)), small, others,
			Result{false, "OutOfcpu", "Node didn't have enough resource: cpu, requested: 201, used: 800, capacity: 1000"}},
		{"memory short", podWith(ctr("a", list("memory", "513Mi"), nil)), small, others,
			Result{false, "OutOfmemory", "Node didn't have enough resource: memory, requested: 537919488, used: 536870912, capacity: 1073741824"}},
		{"ephemeral storage short", podWith(ctr("a", list("ephemeral-storage", "7Gi"), nil)), small, others,
			Result{false, "OutOfephemeral-storage", "Node didn't have enough resource: ephemeral-storage, requested: 7516192768, used: 4294967296, capacity: 10737418240"}},
		{"cpu is reported before memory", podWith(ctr("a", list("cpu", "2", "memory", "2Gi"), nil)), small, others,
			Result{false, "OutOfcpu", "Node didn't have enough resource: cpu, requested: 2000, used: 800, capacity: 1000"}},
		{"pod count is checked first", podWith(ctr("a", list("cpu", "2"), nil)), list("cpu", "1", "pods", "2"), others,
			Result{false, "OutOfpods", "Node didn't have enough resource: pods, requested: 1, used: 2, capacity: 2"}},
		{"a pod without requests still needs a pod slot", bestEffortPod(), list("pods", "2"), others,
			Result{false, "OutOfpods", "Node didn't have enough resource: pods, requested: 1, used: 2, capacity: 2"}},
		{"a pod without requests fits a full node", bestEffortPod(), list("cpu", "0", "pods", "3"), others, admitted},
		{"init container peak counts", func() *corev1.Pod {
			p := podWith(ctr("a", list("cpu", "100m"), nil))
			p.Spec.InitContainers = []corev1.Container{ctr("i", list("cpu", "300m"), nil)}
			return p
		}(), small, others, Result{false, "OutOfcpu", "Node didn't have enough resource: cpu, requested: 300, used: 800, capacity: 1000"}},
		{"overhead counts", func() *corev1.Pod {
			p := podWith(ctr("a", list("cpu", "150m"), nil))
			p.Spec.Overhead = list("cpu", "100m")
			return p
		}(), small, others, Result{false, "OutOfcpu", "Node didn't have enough resource: cpu, requested: 250, used: 800, capacity: 1000"}},
		{"extended resource the node advertises, short", podWith(ctr("a", list("example.com/gpu", "2"), nil)),
			list("pods", "10", "example.com/gpu", "1"), nil,
			Result{false, "OutOfexample.com/gpu", "Node didn't have enough resource: example.com/gpu, requested: 2, used: 0, capacity: 1"}},
		{"extended resource the node does not know is ignored", podWith(ctr("a", list("example.com/gpu", "2"), nil)),
			list("pods", "10"), nil, admitted},
		{"hugepages the node lacks do not fit", podWith(ctr("a", list("hugepages-2Mi", "2Mi"), nil)), list("pods", "10"), nil,
			Result{false, "OutOfhugepages-2Mi", "Node didn't have enough resource: hugepages-2Mi, requested: 2097152, used: 0, capacity: 0"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := New().Admit(Input{Pod: tt.pod, OtherPods: tt.others, Node: node("n1", tt.alloc)})
			if got != tt.want {
				t.Errorf("Admit = %+v\nwant    %+v", got, tt.want)
			}
		})
	}
}

func TestAdmitPredicates(t *testing.T) {
	n := node("n1", roomy)
	n.Labels["disk"] = "ssd"
	n.Labels["cores"] = "8"
	n.Spec.Taints = []corev1.Taint{
		{Key: "dedicated", Value: "db", Effect: corev1.TaintEffectNoExecute},
		{Key: "soft", Effect: corev1.TaintEffectNoSchedule},
	}
	tolerateDedicated := corev1.Toleration{Key: "dedicated", Operator: corev1.TolerationOpEqual, Value: "db", Effect: corev1.TaintEffectNoExecute}
	pod := func(mut func(p *corev1.Pod)) *corev1.Pod {
		p := bestEffortPod()
		p.Spec.Tolerations = []corev1.Toleration{tolerateDedicated}
		mut(p)
		return p
	}
	affinity := func(terms ...corev1.NodeSelectorTerm) func(p *corev1.Pod) {
		return func(p *corev1.Pod) {
			p.Spec.Affinity = &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{
				RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{NodeSelectorTerms: terms}}}
		}
	}
	expr := func(key string, op corev1.NodeSelectorOperator, values ...string) corev1.NodeSelectorTerm {
		return corev1.NodeSelectorTerm{MatchExpressions: []corev1.NodeSelectorRequirement{{Key: key, Operator: op, Values: values}}}
	}
	refused := func(name, desc string) Result {
		return Result{false, name, "Predicate " + name + " failed: " + desc}
	}
	affinityFailed := refused("NodeAffinity", "node(s) didn't match Pod's node affinity/selector")
	port := func(hostIP string, proto corev1.Protocol, p int32) corev1.ContainerPort {
		return corev1.ContainerPort{ContainerPort: 80, HostPort: p, HostIP: hostIP, Protocol: proto}
	}
	running := withPorts(bestEffortPod(), port("", "", 8080), port("10.0.0.1", corev1.ProtocolUDP, 53))
	tests := []struct {
		name   string
		pod    *corev1.Pod
		others []*corev1.Pod
		want   Result
	}{
		{"plain pod", pod(func(*corev1.Pod) {}), nil, admitted},
		{"nodeSelector matches", pod(func(p *corev1.Pod) { p.Spec.NodeSelector = map[string]string{"disk": "ssd"} }), nil, admitted},
		{"nodeSelector value differs", pod(func(p *corev1.Pod) { p.Spec.NodeSelector = map[string]string{"disk": "hdd"} }), nil, affinityFailed},
		{"nodeSelector label missing", pod(func(p *corev1.Pod) { p.Spec.NodeSelector = map[string]string{"gpu": "yes"} }), nil, affinityFailed},
		{"affinity In", pod(affinity(expr("disk", corev1.NodeSelectorOpIn, "hdd", "ssd"))), nil, admitted},
		{"affinity NotIn", pod(affinity(expr("disk", corev1.NodeSelectorOpNotIn, "ssd"))), nil, affinityFailed},
		{"affinity NotIn on a missing label", pod(affinity(expr("gpu", corev1.NodeSelectorOpNotIn, "x"))), nil, admitted},
		{"affinity Exists", pod(affinity(expr("disk", corev1.NodeSelectorOpExists))), nil, admitted},
		{"affinity DoesNotExist", pod(affinity(expr("disk", corev1.NodeSelectorOpDoesNotExist))), nil, affinityFailed},
		{"affinity Gt", pod(affinity(expr("cores", corev1.NodeSelectorOpGt, "4"))), nil, admitted},
		{"affinity Lt", pod(affinity(expr("cores", corev1.NodeSelectorOpLt, "8"))), nil, affinityFailed},
		{"affinity Gt on a non-number", pod(affinity(expr("disk", corev1.NodeSelectorOpGt, "4"))), nil, affinityFailed},
		{"terms are ORed", pod(affinity(expr("disk", corev1.NodeSelectorOpIn, "hdd"), expr("cores", corev1.NodeSelectorOpIn, "8"))), nil, admitted},
		{"an empty term matches nothing", pod(affinity(corev1.NodeSelectorTerm{})), nil, affinityFailed},
		{"no terms match nothing", pod(affinity()), nil, affinityFailed},
		{"matchFields on the node name", pod(affinity(corev1.NodeSelectorTerm{MatchFields: []corev1.NodeSelectorRequirement{
			{Key: "metadata.name", Operator: corev1.NodeSelectorOpIn, Values: []string{"n1"}}}})), nil, admitted},
		{"matchFields on another node", pod(affinity(corev1.NodeSelectorTerm{MatchFields: []corev1.NodeSelectorRequirement{
			{Key: "metadata.name", Operator: corev1.NodeSelectorOpIn, Values: []string{"n2"}}}})), nil, affinityFailed},
		{"expressions within a term are ANDed", pod(affinity(corev1.NodeSelectorTerm{MatchExpressions: []corev1.NodeSelectorRequirement{
			{Key: "disk", Operator: corev1.NodeSelectorOpIn, Values: []string{"ssd"}},
			{Key: "cores", Operator: corev1.NodeSelectorOpIn, Values: []string{"4"}}}})), nil, affinityFailed},
		{"nodeName matches", pod(func(p *corev1.Pod) { p.Spec.NodeName = "n1" }), nil, admitted},
		{"nodeName of another node", pod(func(p *corev1.Pod) { p.Spec.NodeName = "n2" }), nil,
			refused("NodeName", "node(s) didn't match the requested node name")},
		{"selector mismatch is reported before the node name", pod(func(p *corev1.Pod) {
			p.Spec.NodeName = "n2"
			p.Spec.NodeSelector = map[string]string{"disk": "hdd"}
		}), nil, affinityFailed},
		{"host port free", withPorts(pod(func(*corev1.Pod) {}), port("", "", 8081)), []*corev1.Pod{running}, admitted},
		{"host port taken on every address", withPorts(pod(func(*corev1.Pod) {}), port("10.0.0.2", corev1.ProtocolTCP, 8080)), []*corev1.Pod{running},
			refused("NodePorts", "node(s) didn't have free ports for the requested pod ports")},
		{"wildcard asks for a port taken on one address", withPorts(pod(func(*corev1.Pod) {}), port("", corev1.ProtocolUDP, 53)), []*corev1.Pod{running},
			refused("NodePorts", "node(s) didn't have free ports for the requested pod ports")},
		{"same port, other address", withPorts(pod(func(*corev1.Pod) {}), port("10.0.0.2", corev1.ProtocolUDP, 53)), []*corev1.Pod{running}, admitted},
		{"same port, other protocol", withPorts(pod(func(*corev1.Pod) {}), port("", corev1.ProtocolSCTP, 8080)), []*corev1.Pod{running}, admitted},
		{"container ports without host ports never conflict", withPorts(pod(func(*corev1.Pod) {}), corev1.ContainerPort{ContainerPort: 8080}), []*corev1.Pod{running}, admitted},
		{"a sidecar's host port counts", pod(func(p *corev1.Pod) {
			s := sidecar("s", nil)
			s.Ports = []corev1.ContainerPort{port("", "", 8080)}
			p.Spec.InitContainers = []corev1.Container{s}
		}), []*corev1.Pod{running}, refused("NodePorts", "node(s) didn't have free ports for the requested pod ports")},
		{"untolerated NoExecute taint", bestEffortPod(), nil,
			refused("TaintToleration", "node(s) had taints that the pod didn't tolerate")},
		{"toleration with the wrong value", pod(func(p *corev1.Pod) { p.Spec.Tolerations[0].Value = "web" }), nil,
			refused("TaintToleration", "node(s) had taints that the pod didn't tolerate")},
		{"static pods ignore taints", staticPod(), nil, admitted},
		{"NoSchedule taints are the scheduler's business", pod(func(*corev1.Pod) {}), nil, admitted},
		{"OS label of another OS", pod(func(p *corev1.Pod) { p.Labels = map[string]string{corev1.LabelOSStable: "windows"} }), nil,
			Result{false, "PodOSSelectorNodeLabelDoesNotMatch", "Failed to admit pod as the `kubernetes.io/os` label doesn't match node label"}},
		{"OS field of another OS", pod(func(p *corev1.Pod) { p.Spec.OS = &corev1.PodOS{Name: corev1.Windows} }), nil,
			Result{false, "PodOSNotSupported", "Failed to admit pod as the OS field doesn't match node OS"}},
		{"OS field linux", pod(func(p *corev1.Pod) { p.Spec.OS = &corev1.PodOS{Name: corev1.Linux} }), nil, admitted},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := New().Admit(Input{Pod: tt.pod, OtherPods: tt.others, Node: n})
			if got != tt.want {
				t.Errorf("Admit = %+v\nwant    %+v", got, tt.want)
			}
		})
	}
}

func TestAdmitOrderAndShutdown(t *testing.T) {
	full := list("cpu", "1", "pods", "1")
	others := []*corev1.Pod{bestEffortPod()}
	tests := []struct {
		name string
		in   Input
		want string
	}{
		{"shutting down", Input{Pod: bestEffortPod(), Node: node("n1", roomy), ShuttingDown: true}, "NodeShutdown"},
		{"shutting down refuses critical pods too", Input{Pod: criticalByPriority(), Node: node("n1", roomy), ShuttingDown: true}, "NodeShutdown"},
		{"pressure is checked before resources", Input{Pod: bestEffortPod(), OtherPods: others, Node: node("n1", full),
			Pressure: []corev1.NodeConditionType{corev1.NodeDiskPressure}}, "Evicted"},
		{"resources before shutdown", Input{Pod: bestEffortPod(), OtherPods: others, Node: node("n1", full), ShuttingDown: true}, "OutOfpods"},
		{"no node", Input{Pod: bestEffortPod()}, "InvalidNodeInfo"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := New().Admit(tt.in)
			if got.Admit || got.Reason != tt.want {
				t.Errorf("Admit = %+v, want reason %s", got, tt.want)
			}
		})
	}
	if r := New().Admit(Input{Pod: bestEffortPod(), Node: node("n1", roomy), ShuttingDown: true}); r.Message != "Pod was rejected as the node is shutting down." {
		t.Errorf("shutdown message = %q", r.Message)
	}
}

func TestExtraHandlersRunLast(t *testing.T) {
	var calls int
	extra := HandlerFunc(func(in *Input) Result {
		calls++
		return refuse("Custom", "no "+in.Pod.Name)
	})
	a := New(extra)
	if r := a.Admit(Input{Pod: bestEffortPod(), Node: node("n1", roomy), ShuttingDown: true}); r.Reason != "NodeShutdown" || calls != 0 {
		t.Errorf("built-in refusal: got %+v after %d extra calls, want NodeShutdown and none", r, calls)
	}
	if r := a.Admit(Input{Pod: bestEffortPod(), Node: node("n1", roomy)}); r != (Result{false, "Custom", "no p"}) || calls != 1 {
		t.Errorf("got %+v after %d calls", r, calls)
	}
}

// The runtime hands admission the same resolver its workers use.
var _ ContainerProfiles = (*seccomp.Profiles)(nil)

// fakeProfiles fails the containers named in bad.
type fakeProfiles struct {
	bad  map[string]error
	seen []string
}

func (f *fakeProfiles) ForContainer(_ *corev1.PodSpec, c *corev1.Container, privileged bool, caps []string) (*specs.LinuxSeccomp, error) {
	f.seen = append(f.seen, c.Name+":"+strings.Join(caps, ","))
	return nil, f.bad[c.Name]
}

func TestSeccompCheck(t *testing.T) {
	p := podWith(ctr("app", nil, nil), ctr("app2", nil, nil))
	p.Spec.InitContainers = []corev1.Container{ctr("init", nil, nil)}
	p.Spec.Containers[0].SecurityContext = &corev1.SecurityContext{Capabilities: &corev1.Capabilities{Add: []corev1.Capability{"NET_ADMIN"}}}
	p.Spec.EphemeralContainers = []corev1.EphemeralContainer{{EphemeralContainerCommon: corev1.EphemeralContainerCommon{Name: "debug"}}}

	ok := &fakeProfiles{}
	if r := New(SeccompCheck{ok}).Admit(Input{Pod: p, Node: node("n1", roomy)}); !r.Admit {
		t.Fatalf("Admit = %+v", r)
	}
	if got, want := strings.Join(ok.seen, " "), "init: app:NET_ADMIN app2: debug:"; got != want {
		t.Errorf("containers checked = %q, want %q", got, want)
	}

	bad := &fakeProfiles{bad: map[string]error{"app2": errors.New("seccomp profile x.json: missing")}}
	r := New(SeccompCheck{bad}).Admit(Input{Pod: p, Node: node("n1", roomy)})
	if want := (Result{false, "InvalidSeccompProfile", `container "app2": seccomp profile x.json: missing`}); r != want {
		t.Errorf("Admit = %+v, want %+v", r, want)
	}
}

// TestSeccompCheckWithProfiles runs the check over daemon/seccomp's real Profiles:
// a Localhost profile that is missing is refused with the path in the message, one
// that exists and RuntimeDefault are admitted. (Only the missing file and the
// unparseable one are checked before libseccomp is asked anything.)
func TestSeccompCheckWithProfiles(t *testing.T) {
	root := t.TempDir()
	if err := os.WriteFile(filepath.Join(root, "broken.json"), []byte(`{"defaultAction": "SCMP_ACT_NOPE"}`), 0o644); err != nil {
		t.Fatal(err)
	}
	profiles := seccomp.New(seccomp.Config{Root: root})
	withProfile := func(sp *corev1.SeccompProfile) *corev1.Pod {
		p := bestEffortPod()
		p.Spec.SecurityContext = &corev1.PodSecurityContext{SeccompProfile: sp}
		return p
	}
	localhost := func(name string) *corev1.SeccompProfile {
		return &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeLocalhost, LocalhostProfile: &name}
	}
	check := New(SeccompCheck{profiles})

	r := check.Admit(Input{Pod: withProfile(localhost("missing.json")), Node: node("n1", roomy)})
	if r.Admit || r.Reason != ReasonInvalidSeccompProfile || !strings.Contains(r.Message, filepath.Join(root, "missing.json")) {
		t.Errorf("missing profile: %+v", r)
	}
	r = check.Admit(Input{Pod: withProfile(localhost("broken.json")), Node: node("n1", roomy)})
	if r.Admit || !strings.Contains(r.Message, "defaultAction") || !strings.HasPrefix(r.Message, `container "a": `) {
		t.Errorf("broken profile: %+v", r)
	}
	r = check.Admit(Input{Pod: withProfile(&corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault}), Node: node("n1", roomy)})
	if !r.Admit {
		t.Errorf("RuntimeDefault: %+v", r)
	}
	// A privileged container is Unconfined whatever the pod says.
	p := withProfile(localhost("missing.json"))
	priv := true
	p.Spec.Containers[0].SecurityContext = &corev1.SecurityContext{Privileged: &priv}
	if r := check.Admit(Input{Pod: p, Node: node("n1", roomy)}); !r.Admit {
		t.Errorf("privileged: %+v", r)
	}
}

func TestAdmitDoesNotChangeInput(t *testing.T) {
	p := podWith(ctr("a", list("cpu", "1", "example.com/gpu", "1"), nil))
	before := p.DeepCopy()
	in := Input{Pod: p, Node: node("n1", roomy), Pressure: []corev1.NodeConditionType{corev1.NodeNetworkUnavailable, corev1.NodeMemoryPressure}}
	New().Admit(in)
	if p.Spec.Containers[0].Resources.Requests.Name("example.com/gpu", "").Value() != 1 || len(p.Spec.Containers[0].Resources.Requests) != len(before.Spec.Containers[0].Resources.Requests) {
		t.Errorf("pod changed: %+v", p.Spec.Containers[0].Resources)
	}
	if in.Pressure[0] != corev1.NodeNetworkUnavailable {
		t.Errorf("pressure list changed: %v", in.Pressure)
	}
}
