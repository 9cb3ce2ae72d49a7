package e2e

import (
	"context"
	"fmt"
	"path/filepath"
	"sync"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
)

// podToleration is how long the test's pods tolerate an unreachable or not-ready node.
const podToleration = 8 * time.Second

// clusterNode is one plinthd of a multi-node cluster on loopback, with its own name,
// credentials, lock file, state directory and health port.
type clusterNode struct {
	name string
	proc *process
}

func startClusterNode(t *testing.T, c *cluster, name string) *clusterNode {
	t.Helper()
	dir := t.TempDir()
	port := freePort(t)
	proc := start(t, "plinthd", nil, "--config", plinthdConfig(t, port), "--config-dir", "",
		"--kubeconfig", c.nodeKubeconfig(t, name), "--hostname-override", name,
		"--lock-file", filepath.Join(dir, "plinthd.lock"), "--state-dir", filepath.Join(dir, "state"))
	return &clusterNode{name: name, proc: proc}
}

// tolerantPod is bound to node, tolerates its node being unreachable or not ready for
// podToleration, and is deleted at once when deleted (no node runs containers yet).
func tolerantPod(name, node string) *corev1.Pod {
	secs := int64(podToleration / time.Second)
	zero := int64(0)
	var tolerations []corev1.Toleration
	for _, key := range []string{corev1.TaintNodeUnreachable, corev1.TaintNodeNotReady} {
		tolerations = append(tolerations, corev1.Toleration{Key: key, Operator: corev1.TolerationOpExists,
			Effect: corev1.TaintEffectNoExecute, TolerationSeconds: &secs})
	}
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default", Labels: map[string]string{"app": "e2e-failover"}},
		Spec: corev1.PodSpec{
			NodeName: node, TerminationGracePeriodSeconds: &zero, Tolerations: tolerations,
			Containers: []corev1.Container{{Name: "web", Image: "registry.example/web:1.0"}},
		},
	}
}

// podTimeline records, from a watch, when each pod was deleted and whether it carried
// DisruptionTarget=True before.
type podTimeline struct {
	mu                sync.Mutex
	deleted           map[string]time.Time
	disruptionTargets map[string]bool
}

func watchPods(t *testing.T, ctx context.Context, client kubernetes.Interface) *podTimeline {
	t.Helper()
	w, err := client.CoreV1().Pods("default").Watch(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	tl := &podTimeline{deleted: map[string]time.Time{}, disruptionTargets: map[string]bool{}}
	go func() {
		defer w.Stop()
		for ev := range w.ResultChan() {
			pod, ok := ev.Object.(*corev1.Pod)
			if !ok {
				continue
			}
			tl.mu.Lock()
			if ev.Type == watch.Deleted {
				tl.deleted[pod.Name] = time.Now()
			}
			for _, c := range pod.Status.Conditions {
				if c.Type == corev1.DisruptionTarget && c.Status == corev1.ConditionTrue {
					tl.disruptionTargets[pod.Name] = true
				}
			}
			tl.mu.Unlock()
		}
	}()
	return tl
}

func (tl *podTimeline) deletedAt(name string) (time.Time, bool) {
	tl.mu.Lock()
	defer tl.mu.Unlock()
	at, ok := tl.deleted[name]
	return at, ok
}

func (tl *podTimeline) markedDisruptionTarget(name string) bool {
	tl.mu.Lock()
	defer tl.mu.Unlock()
	return tl.disruptionTargets[name]
}

func nodeTaint(n *corev1.Node, key string, effect corev1.TaintEffect) *corev1.Taint {
	for i := range n.Spec.Taints {
		if n.Spec.Taints[i].Key == key && n.Spec.Taints[i].Effect == effect {
			return &n.Spec.Taints[i]
		}
	}
	return nil
}

// serviceEndpoints maps each pod in the Service's EndpointSlices to its ready
// condition ("true", "false", or "unset").
func serviceEndpoints(ctx context.Context, client kubernetes.Interface, service string) (map[string]string, error) {
	slices, err := client.DiscoveryV1().EndpointSlices("default").List(ctx, metav1.ListOptions{LabelSelector: discoveryv1.LabelServiceName + "=" + service})
	if err != nil {
		return nil, err
	}
	out := map[string]string{}
	for _, sl := range slices.Items {
		for _, ep := range sl.Endpoints {
			if ep.TargetRef == nil {
				continue
			}
			ready := "unset"
			if ep.Conditions.Ready != nil {
				ready = fmt.Sprint(*ep.Conditions.Ready)
			}
			out[ep.TargetRef.Name] = ready
		}
	}
	return out, nil
}

func podReady(p *corev1.Pod) corev1.ConditionStatus {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status
		}
	}
	return ""
}

// TestStoppedNodeIsMarkedTaintedAndDrained runs three plinthd nodes; one is killed. It
// must be marked Unknown and tainted unreachable (NoExecute), its pods marked not Ready
// (and so not ready in their Service's EndpointSlice) and, after their 8 s toleration
// and not before, deleted with DisruptionTarget set; pods on the two healthy nodes stay
// ready endpoints.
func TestStoppedNodeIsMarkedTaintedAndDrained(t *testing.T) {
	c := startControl(t, "--node-monitor-period", monitorPeriod.String(),
		"--node-monitor-grace-period", gracePeriod.String(), "--node-startup-grace-period", "8s",
		"--node-eviction-rate", "1")
	names := []string{"e2e-fail-a", "e2e-fail-b", "e2e-fail-c"}
	nodes := map[string]*clusterNode{}
	for _, name := range names {
		nodes[name] = startClusterNode(t, c, name)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	client := clientFor(t, c.kubeconfig)
	eventually(t, 60*time.Second, "three nodes Ready", func() (bool, string) {
		ready := 0
		for _, name := range names {
			n, err := client.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
			if err == nil && findCondition(n, corev1.NodeReady) != nil && findCondition(n, corev1.NodeReady).Status == corev1.ConditionTrue {
				ready++
			}
		}
		return ready == len(names), fmt.Sprintf("%d Ready", ready)
	})

	// One pod per node, running and Ready as far as the API knows (plinthd does not run
	// containers yet, so the test posts what it would).
	timeline := watchPods(t, ctx, client)
	for i, name := range names {
		pod, err := client.CoreV1().Pods("default").Create(ctx, tolerantPod("pod-on-"+name, name), metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		pod.Status.Phase = corev1.PodRunning
		pod.Status.PodIP = fmt.Sprintf("10.244.%d.10", i)
		pod.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue, LastTransitionTime: metav1.Now()}}
		if _, err := client.CoreV1().Pods("default").UpdateStatus(ctx, pod, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
	}

	_, err := client.CoreV1().Services("default").Create(ctx, &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: "e2e-failover"},
		Spec: corev1.ServiceSpec{Selector: map[string]string{"app": "e2e-failover"},
			Ports: []corev1.ServicePort{{Port: 80, TargetPort: intstr.FromInt32(8080), Protocol: corev1.ProtocolTCP}}},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	eventually(t, 30*time.Second, "the Service's EndpointSlice lists the three pods ready", func() (bool, string) {
		eps, err := serviceEndpoints(ctx, client, "e2e-failover")
		if err != nil {
			return false, err.Error()
		}
		for _, name := range names {
			if eps["pod-on-"+name] != "true" {
				return false, fmt.Sprint(eps)
			}
		}
		return true, ""
	})

	victim := nodes["e2e-fail-c"]
	victim.proc.kill(syscall.SIGKILL)
	killed := time.Now()

	var taintAdded time.Time
	eventually(t, gracePeriod+monitorPeriod+15*time.Second, "the stopped node Unknown and tainted unreachable:NoExecute", func() (bool, string) {
		n, err := client.CoreV1().Nodes().Get(ctx, victim.name, metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		ready := findCondition(n, corev1.NodeReady)
		taint := nodeTaint(n, corev1.TaintNodeUnreachable, corev1.TaintEffectNoExecute)
		if ready == nil || ready.Status != corev1.ConditionUnknown || taint == nil || taint.TimeAdded == nil {
			return false, fmt.Sprintf("Ready %+v, taints %+v", ready, n.Spec.Taints)
		}
		taintAdded = taint.TimeAdded.Time
		return true, ""
	})
	t.Logf("node %s Unknown and tainted %s after kill -9 (grace %s)", victim.name, time.Since(killed).Round(100*time.Millisecond), gracePeriod)

	victimPod := "pod-on-" + victim.name
	if _, gone := timeline.deletedAt(victimPod); !gone {
		pod, err := client.CoreV1().Pods("default").Get(ctx, victimPod, metav1.GetOptions{})
		if err == nil && podReady(pod) == corev1.ConditionTrue {
			// Marked not Ready in the same sweep as the node, before the taint; allow
			// for a write in flight.
			eventually(t, 5*time.Second, "the stopped node's pod not Ready", func() (bool, string) {
				pod, err := client.CoreV1().Pods("default").Get(ctx, victimPod, metav1.GetOptions{})
				if err != nil {
					return false, err.Error()
				}
				return podReady(pod) == corev1.ConditionFalse, string(podReady(pod))
			})
		}
	}

	// Before its toleration runs out, the pod is still listed, but not ready; the
	// others stay ready.
	eventually(t, podToleration, "the stopped node's pod not ready in the Service's EndpointSlice", func() (bool, string) {
		eps, err := serviceEndpoints(ctx, client, "e2e-failover")
		if err != nil {
			return false, err.Error()
		}
		return eps[victimPod] == "false" && eps["pod-on-e2e-fail-a"] == "true" && eps["pod-on-e2e-fail-b"] == "true", fmt.Sprint(eps)
	})

	// timeAdded has whole seconds and is rounded down, so it is at most the real time
	// and "deleted at least podToleration after it" can only be stricter than the rule.
	deleted := time.Time{}
	eventually(t, podToleration+20*time.Second, "the stopped node's pod deleted", func() (bool, string) {
		at, ok := timeline.deletedAt(victimPod)
		deleted = at
		return ok, "still there"
	})
	after := deleted.Sub(taintAdded)
	t.Logf("pod %s deleted %s after the NoExecute taint's timeAdded (toleration %s)", victimPod, after.Round(100*time.Millisecond), podToleration)
	if after < podToleration {
		t.Fatalf("pod deleted %s after the taint, before its %s toleration ran out", after, podToleration)
	}
	if after > podToleration+10*time.Second {
		t.Fatalf("pod deleted %s after the taint, long after its %s toleration", after, podToleration)
	}
	if !timeline.markedDisruptionTarget(victimPod) {
		t.Errorf("pod %s was deleted without the DisruptionTarget condition", victimPod)
	}

	eventually(t, 10*time.Second, "the deleted pod gone from the EndpointSlice, the others ready", func() (bool, string) {
		eps, err := serviceEndpoints(ctx, client, "e2e-failover")
		if err != nil {
			return false, err.Error()
		}
		_, listed := eps[victimPod]
		return !listed && len(eps) == 2 && eps["pod-on-e2e-fail-a"] == "true" && eps["pod-on-e2e-fail-b"] == "true", fmt.Sprint(eps)
	})

	// The healthy nodes and their pods are untouched. Another toleration's worth of
	// time has passed since the victim's pod went, so a wrongful eviction would show.
	time.Sleep(2 * time.Second)
	for _, name := range names[:2] {
		pod, err := client.CoreV1().Pods("default").Get(ctx, "pod-on-"+name, metav1.GetOptions{})
		if err != nil {
			t.Fatalf("pod on healthy node %s: %v", name, err)
		}
		if pod.DeletionTimestamp != nil || podReady(pod) != corev1.ConditionTrue || timeline.markedDisruptionTarget(pod.Name) {
			t.Errorf("pod on healthy node %s: deletion %v, Ready %s, disruption target %v; want untouched",
				name, pod.DeletionTimestamp, podReady(pod), timeline.markedDisruptionTarget(pod.Name))
		}
		n, err := client.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if r := findCondition(n, corev1.NodeReady); r == nil || r.Status != corev1.ConditionTrue || len(n.Spec.Taints) != 0 {
			t.Errorf("healthy node %s: Ready %+v, taints %+v", name, r, n.Spec.Taints)
		}
	}
}
