package pressure

import (
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func names(pods []Pod) []string {
	out := make([]string, len(pods))
	for i, p := range pods {
		out[i] = p.Name
	}
	return out
}

func memPod(name string, prio int32, usage, request int64) Pod {
	return Pod{Namespace: "default", Name: name, Priority: prio,
		Usage: Usage{MemoryBytes: usage}, Requests: Usage{MemoryBytes: request}}
}

func TestRankOrder(t *testing.T) {
	cases := []struct {
		name     string
		resource Resource
		pods     []Pod
		want     []string
	}{
		{"memory: above requests first, even at higher priority", ResourceMemory, []Pod{
			memPod("within-low-prio", -10, 100*mi, 200*mi),
			memPod("above-high-prio", 1000, 300*mi, 200*mi),
		}, []string{"above-high-prio", "within-low-prio"}},
		{"memory: then lower priority first", ResourceMemory, []Pod{
			memPod("above-prio-100", 100, 900*mi, 100*mi),
			memPod("above-prio-0", 0, 150*mi, 100*mi),
		}, []string{"above-prio-0", "above-prio-100"}},
		{"memory: then larger excess first", ResourceMemory, []Pod{
			memPod("excess-50", 0, 150*mi, 100*mi),
			memPod("excess-500", 0, 600*mi, 100*mi),
			memPod("best-effort-200", 0, 200*mi, 0),
		}, []string{"excess-500", "best-effort-200", "excess-50"}},
		{"memory: within requests, the one furthest below goes last", ResourceMemory, []Pod{
			memPod("far-below", 0, 10*mi, 500*mi),
			memPod("near", 0, 490*mi, 500*mi),
			memPod("at-request", 0, 500*mi, 500*mi), // at, not above
		}, []string{"at-request", "near", "far-below"}},
		{"memory: full ties by namespace then name", ResourceMemory, []Pod{
			{Namespace: "b", Name: "x", Usage: Usage{MemoryBytes: mi}},
			{Namespace: "a", Name: "z", Usage: Usage{MemoryBytes: mi}},
			{Namespace: "a", Name: "y", Usage: Usage{MemoryBytes: mi}},
		}, []string{"y", "z", "x"}},
		{"ephemeral storage ranks by storage, not memory", ResourceEphemeralStorage, []Pod{
			{Name: "big-memory", Usage: Usage{MemoryBytes: 10 * gi, EphemeralStorageBytes: 1 * gi}, Requests: Usage{EphemeralStorageBytes: 2 * gi}},
			{Name: "big-disk", Usage: Usage{EphemeralStorageBytes: 5 * gi}, Requests: Usage{EphemeralStorageBytes: 1 * gi}},
			{Name: "no-request", Priority: 5, Usage: Usage{EphemeralStorageBytes: 1}},
		}, []string{"big-disk", "no-request", "big-memory"}},
		{"inodes: users first, then priority, then count", ResourceInodes, []Pod{
			{Name: "none", Priority: -5},
			{Name: "few-low", Priority: 0, Usage: Usage{Inodes: 10}},
			{Name: "many-high", Priority: 10, Usage: Usage{Inodes: 100000}},
			{Name: "many-low", Priority: 0, Usage: Usage{Inodes: 5000}},
		}, []string{"many-low", "few-low", "many-high", "none"}},
		{"pids: priority, then process count", ResourcePIDs, []Pod{
			{Name: "forkbomb-high", Priority: 100, Usage: Usage{Processes: 5000}},
			{Name: "quiet-low", Priority: 0, Usage: Usage{Processes: 2}},
			{Name: "busy-low", Priority: 0, Usage: Usage{Processes: 300}},
			{Name: "idle-low", Priority: 0},
		}, []string{"busy-low", "quiet-low", "idle-low", "forkbomb-high"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			in := slices.Clone(tc.pods)
			got := names(Rank(tc.pods, tc.resource))
			if !slices.Equal(got, tc.want) {
				t.Errorf("Rank = %v, want %v", got, tc.want)
			}
			slices.Reverse(in)
			if again := names(Rank(in, tc.resource)); !slices.Equal(again, tc.want) {
				t.Errorf("Rank of the pods in reverse order = %v, want %v", again, tc.want)
			}
		})
	}
}

func TestRankNeverCritical(t *testing.T) {
	pods := []Pod{
		{Name: "static", Critical: true, Usage: Usage{MemoryBytes: 10 * gi, Processes: 9999, EphemeralStorageBytes: 10 * gi, Inodes: 1e6}},
		{Name: "node-critical", Priority: 2000001000, Usage: Usage{MemoryBytes: 10 * gi, Processes: 9999, EphemeralStorageBytes: 10 * gi, Inodes: 1e6}},
		{Name: "cluster-critical", Priority: SystemCriticalPriority, Usage: Usage{MemoryBytes: 10 * gi}},
		{Name: "ordinary", Priority: 1000000, Usage: Usage{MemoryBytes: 1}},
	}
	for _, r := range []Resource{ResourceMemory, ResourceEphemeralStorage, ResourceInodes, ResourcePIDs} {
		if got := names(Rank(pods, r)); !slices.Equal(got, []string{"ordinary"}) {
			t.Errorf("%s: Rank = %v, want only the ordinary pod", r, got)
		}
	}
	if got := Rank(pods[:3], ResourceMemory); len(got) != 0 {
		t.Errorf("only critical pods: Rank = %v, want none", names(got))
	}
}

func TestIsCritical(t *testing.T) {
	prio := func(p int32) *int32 { return &p }
	cases := []struct {
		name string
		pod  corev1.Pod
		want bool
	}{
		{"plain", corev1.Pod{}, false},
		{"high but not critical priority", corev1.Pod{Spec: corev1.PodSpec{Priority: prio(SystemCriticalPriority - 1)}}, false},
		{"system-cluster-critical", corev1.Pod{Spec: corev1.PodSpec{Priority: prio(SystemCriticalPriority)}}, true},
		{"system-node-critical", corev1.Pod{Spec: corev1.PodSpec{Priority: prio(2000001000)}}, true},
		{"static from file", corev1.Pod{ObjectMeta: metav1.ObjectMeta{Annotations: map[string]string{AnnotationConfigSource: "file"}}}, true},
		{"from the API", corev1.Pod{ObjectMeta: metav1.ObjectMeta{Annotations: map[string]string{AnnotationConfigSource: "api"}}}, false},
		{"mirror", corev1.Pod{ObjectMeta: metav1.ObjectMeta{Annotations: map[string]string{AnnotationConfigMirror: "abc"}}}, true},
	}
	for _, tc := range cases {
		if got := IsCritical(&tc.pod); got != tc.want {
			t.Errorf("%s: IsCritical = %t, want %t", tc.name, got, tc.want)
		}
	}
}

func TestPodRequests(t *testing.T) {
	req := func(mem, disk string) corev1.ResourceRequirements {
		l := corev1.ResourceList{}
		if mem != "" {
			l[corev1.ResourceMemory] = resource.MustParse(mem)
		}
		if disk != "" {
			l[corev1.ResourceEphemeralStorage] = resource.MustParse(disk)
		}
		return corev1.ResourceRequirements{Requests: l}
	}
	always := corev1.ContainerRestartPolicyAlways
	cases := []struct {
		name string
		spec corev1.PodSpec
		want Usage
	}{
		{"containers add up", corev1.PodSpec{Containers: []corev1.Container{{Resources: req("100Mi", "1Gi")}, {Resources: req("50Mi", "")}}},
			Usage{MemoryBytes: 150 * mi, EphemeralStorageBytes: gi}},
		{"a larger init container wins", corev1.PodSpec{
			InitContainers: []corev1.Container{{Resources: req("1Gi", "")}},
			Containers:     []corev1.Container{{Resources: req("100Mi", "2Gi")}}},
			Usage{MemoryBytes: gi, EphemeralStorageBytes: 2 * gi}},
		{"sidecars run with the containers and under later init containers", corev1.PodSpec{
			InitContainers: []corev1.Container{
				{Resources: req("100Mi", ""), RestartPolicy: &always},
				{Resources: req("500Mi", "")},
			},
			Containers: []corev1.Container{{Resources: req("200Mi", "")}}},
			Usage{MemoryBytes: 600 * mi}},
		{"overhead is added", corev1.PodSpec{
			Containers: []corev1.Container{{Resources: req("100Mi", "")}},
			Overhead:   corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("20Mi")}},
			Usage{MemoryBytes: 120 * mi}},
		{"pod-level requests replace the containers'", corev1.PodSpec{
			Resources:  &corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("1Gi")}},
			Containers: []corev1.Container{{Resources: req("100Mi", "")}}},
			Usage{MemoryBytes: gi}},
	}
	for _, tc := range cases {
		pod := &corev1.Pod{Spec: tc.spec}
		if got := PodRequests(pod); got != tc.want {
			t.Errorf("%s: PodRequests = %+v, want %+v", tc.name, got, tc.want)
		}
	}
	p := PodFromAPI(&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "n", UID: "u"},
		Spec: corev1.PodSpec{Priority: func() *int32 { v := int32(7); return &v }(), Containers: []corev1.Container{{Resources: req("1Mi", "")}}}},
		Usage{MemoryBytes: 5})
	if p.String() != "ns/n" || p.UID != "u" || p.Priority != 7 || p.Critical || p.Requests.MemoryBytes != mi || p.Usage.MemoryBytes != 5 {
		t.Errorf("PodFromAPI = %+v", p)
	}
	if p.GracePeriod != 30*time.Second {
		t.Errorf("PodFromAPI without terminationGracePeriodSeconds: grace %s, want the API's default 30s", p.GracePeriod)
	}
	seconds := int64(120)
	if p := PodFromAPI(&corev1.Pod{Spec: corev1.PodSpec{TerminationGracePeriodSeconds: &seconds}}, Usage{}); p.GracePeriod != 2*time.Minute {
		t.Errorf("PodFromAPI with terminationGracePeriodSeconds 120: grace %s", p.GracePeriod)
	}
}
