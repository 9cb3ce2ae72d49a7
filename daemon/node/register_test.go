package node

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kruntime "k8s.io/apimachinery/pkg/runtime"
	k8stesting "k8s.io/client-go/testing"

	"github.com/plinth/plinth/internal/version"
)

func assertQuantity(t *testing.T, what string, rl corev1.ResourceList, name corev1.ResourceName, want string) {
	t.Helper()
	got, ok := rl[name]
	if !ok {
		t.Errorf("%s[%s] missing, want %s", what, name, want)
		return
	}
	if w := resource.MustParse(want); got.Cmp(w) != 0 {
		t.Errorf("%s[%s] = %s, want %s", what, name, got.String(), want)
	}
}

func TestRegisterCreatesNode(t *testing.T) {
	e := newTestEnv(t, testConfig(), nil)
	assignUIDOnCreate(e.client, "uid-new")
	got, err := e.agent.Register(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if got.UID != "uid-new" {
		t.Errorf("returned UID = %q, want uid-new", got.UID)
	}
	n, err := e.client.CoreV1().Nodes().Get(context.Background(), "node-a", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}

	wantLabels := map[string]string{
		"kubernetes.io/arch":     runtime.GOARCH,
		"kubernetes.io/os":       "linux",
		"kubernetes.io/hostname": "node-a",
		"plinth.dev/pool":        "blue",
	}
	for k, v := range wantLabels {
		if n.Labels[k] != v {
			t.Errorf("label %s = %q, want %q", k, n.Labels[k], v)
		}
	}
	if len(n.Spec.Taints) != 1 || n.Spec.Taints[0].Key != "plinth.dev/new" || n.Spec.Taints[0].Effect != corev1.TaintEffectNoSchedule {
		t.Errorf("taints = %+v, want the configured plinth.dev/new:NoSchedule", n.Spec.Taints)
	}
	wantAddrs := []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: "10.0.0.5"}, {Type: corev1.NodeHostName, Address: "node-a"}}
	if fmt.Sprint(n.Status.Addresses) != fmt.Sprint(wantAddrs) {
		t.Errorf("addresses = %v, want %v", n.Status.Addresses, wantAddrs)
	}

	assertQuantity(t, "capacity", n.Status.Capacity, corev1.ResourceCPU, "4")
	assertQuantity(t, "capacity", n.Status.Capacity, corev1.ResourceMemory, "8Gi")
	assertQuantity(t, "capacity", n.Status.Capacity, corev1.ResourcePods, "110")
	assertQuantity(t, "capacity", n.Status.Capacity, corev1.ResourceEphemeralStorage, "100Gi")
	assertQuantity(t, "allocatable", n.Status.Allocatable, corev1.ResourceCPU, "3500m")
	assertQuantity(t, "allocatable", n.Status.Allocatable, corev1.ResourceMemory, "6656Mi") // 8Gi - 1Gi - 512Mi
	assertQuantity(t, "allocatable", n.Status.Allocatable, corev1.ResourcePods, "110")
	assertQuantity(t, "allocatable", n.Status.Allocatable, corev1.ResourceEphemeralStorage, "0") // reserved > disk

	info := n.Status.NodeInfo
	wantInfo := corev1.NodeSystemInfo{
		MachineID: "3d1219c7c4c5404aaa1f6d2a48adfda4", SystemUUID: "4C4C4544-0042-3510-8052-B3C04F4E3232",
		BootID: "58cae9f1-b211-4404-8fe1-faa179b9e782", KernelVersion: "6.18.0-test",
		OSImage: "Debian GNU/Linux 12 (bookworm)", ContainerRuntimeVersion: "runc://1.1.5",
		KubeletVersion: version.String(), OperatingSystem: "linux", Architecture: runtime.GOARCH,
	}
	if info != wantInfo {
		t.Errorf("nodeInfo =\n%+v\nwant\n%+v", info, wantInfo)
	}
	if n := countActions(e.client, "update", "nodes", "status"); n != 0 {
		t.Errorf("%d status updates after a create that kept status, want 0", n)
	}
}

func TestRegisterWithoutInternalIP(t *testing.T) {
	cfg := testConfig()
	e := newTestEnv(t, cfg, nil)
	e.agent.facts.InternalIP = nil
	n, err := e.agent.Register(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	want := []corev1.NodeAddress{{Type: corev1.NodeHostName, Address: "node-a"}}
	if fmt.Sprint(n.Status.Addresses) != fmt.Sprint(want) {
		t.Errorf("addresses = %v, want only the hostname %v", n.Status.Addresses, want)
	}
}

func TestRegisterRestoresStatusDroppedOnCreate(t *testing.T) {
	e := newTestEnv(t, testConfig(), nil)
	e.client.PrependReactor("create", "nodes", func(action k8stesting.Action) (bool, kruntime.Object, error) {
		action.(k8stesting.CreateAction).GetObject().(*corev1.Node).Status = corev1.NodeStatus{}
		return false, nil, nil
	})
	if _, err := e.agent.Register(context.Background()); err != nil {
		t.Fatal(err)
	}
	n, _ := e.client.CoreV1().Nodes().Get(context.Background(), "node-a", metav1.GetOptions{})
	assertQuantity(t, "capacity", n.Status.Capacity, corev1.ResourceCPU, "4")
	if got := countActions(e.client, "update", "nodes", "status"); got != 1 {
		t.Errorf("status updates = %d, want 1 to put back the status the server dropped", got)
	}
}

func TestRegisterReconcilesExistingNode(t *testing.T) {
	existing := &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{
			Name: "node-a",
			UID:  "uid-original",
			Labels: map[string]string{
				"team":                   "storage",
				"kubernetes.io/hostname": "stale-name",
			},
			Annotations: map[string]string{"note": "keep me"},
		},
		Spec: corev1.NodeSpec{
			Taints:        []corev1.Taint{{Key: "operator/maintenance", Effect: corev1.TaintEffectNoSchedule}},
			Unschedulable: true,
		},
		Status: corev1.NodeStatus{
			Capacity: corev1.ResourceList{
				corev1.ResourceCPU:           resource.MustParse("2"),
				corev1.ResourceName("x/gpu"): resource.MustParse("1"),
			},
			Addresses: []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: "10.9.9.9"}},
			Conditions: []corev1.NodeCondition{
				{Type: corev1.NodeNetworkUnavailable, Status: corev1.ConditionFalse, Reason: "RouteCreated"},
			},
			NodeInfo: corev1.NodeSystemInfo{BootID: "old-boot", KubeProxyVersion: "kept"},
		},
	}
	e := newTestEnv(t, testConfig(), nil, existing)
	got, err := e.agent.Register(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	n, err := e.client.CoreV1().Nodes().Get(context.Background(), "node-a", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got.UID != "uid-original" || n.UID != "uid-original" {
		t.Errorf("UID returned %q, stored %q; want the original uid-original kept", got.UID, n.UID)
	}
	if n.Labels["team"] != "storage" || n.Annotations["note"] != "keep me" {
		t.Errorf("foreign label/annotation lost: labels %v annotations %v", n.Labels, n.Annotations)
	}
	if n.Labels["kubernetes.io/hostname"] != "node-a" || n.Labels["plinth.dev/pool"] != "blue" {
		t.Errorf("our labels not reconciled: %v", n.Labels)
	}
	if len(n.Spec.Taints) != 1 || n.Spec.Taints[0].Key != "operator/maintenance" || !n.Spec.Unschedulable {
		t.Errorf("spec changed on re-registration: taints %v unschedulable %v; want the operator's kept and ours not added", n.Spec.Taints, n.Spec.Unschedulable)
	}
	assertQuantity(t, "capacity", n.Status.Capacity, corev1.ResourceCPU, "4")
	assertQuantity(t, "capacity", n.Status.Capacity, "x/gpu", "1")
	if n.Status.Addresses[0].Address != "10.0.0.5" {
		t.Errorf("addresses = %v, want ours", n.Status.Addresses)
	}
	if n.Status.NodeInfo.BootID != testFacts().BootID || n.Status.NodeInfo.KubeProxyVersion != "kept" {
		t.Errorf("nodeInfo = %+v, want our boot ID and the unmanaged kubeProxyVersion kept", n.Status.NodeInfo)
	}
	if len(n.Status.Conditions) != 1 || n.Status.Conditions[0].Type != corev1.NodeNetworkUnavailable {
		t.Errorf("conditions = %v, want the foreign NetworkUnavailable untouched", n.Status.Conditions)
	}
	if d := countActions(e.client, "delete", "nodes", ""); d != 0 {
		t.Errorf("%d node deletes, want none", d)
	}
	if e.agent.knownNodeUID() != "uid-original" {
		t.Errorf("agent node UID = %q, want uid-original for the lease owner reference", e.agent.knownNodeUID())
	}

	// A second registration (plinthd restart) with nothing to change writes nothing.
	before := len(e.client.Actions())
	if _, err := e.agent.Register(context.Background()); err != nil {
		t.Fatal(err)
	}
	for _, a := range e.client.Actions()[before:] {
		if a.GetVerb() == "update" {
			t.Errorf("idempotent re-registration sent %s %s/%s", a.GetVerb(), a.GetResource().Resource, a.GetSubresource())
		}
	}
}

func TestRegisterRetriesWithBackoff(t *testing.T) {
	e := newTestEnv(t, testConfig(), nil)
	const failures = 9
	calls := 0
	e.client.PrependReactor("create", "nodes", func(k8stesting.Action) (bool, kruntime.Object, error) {
		calls++
		if calls <= failures {
			return true, nil, apierrors.NewServiceUnavailable("control service starting")
		}
		return false, nil, nil
	})
	type result struct {
		n   *corev1.Node
		err error
	}
	done := make(chan result, 1)
	e.start(t, func(ctx context.Context) error {
		n, err := e.agent.Register(ctx)
		done <- result{n, err}
		return err
	})
	want := []time.Duration{200 * time.Millisecond, 400 * time.Millisecond, 800 * time.Millisecond,
		1600 * time.Millisecond, 3200 * time.Millisecond, 6400 * time.Millisecond, 7 * time.Second, 7 * time.Second, 7 * time.Second}
	for i, w := range want {
		if got := e.clock.nextWait(t); got != w {
			t.Fatalf("wait %d = %s, want %s", i+1, got, w)
		}
		e.clock.Step(w)
	}
	r := <-done
	if r.err != nil || r.n == nil || r.n.Name != "node-a" {
		t.Fatalf("Register = %v, %v; want node-a after %d failures", r.n, r.err, failures)
	}
	if got := strings.Count(e.logs.String(), "node registration failed"); got != failures {
		t.Errorf("logged %d registration failures, want %d:\n%s", got, failures, e.logs.String())
	}
}

func TestRegisterStopsWithContext(t *testing.T) {
	e := newTestEnv(t, testConfig(), nil)
	e.client.PrependReactor("create", "nodes", func(k8stesting.Action) (bool, kruntime.Object, error) {
		return true, nil, errors.New("connection refused")
	})
	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	go func() { _, err := e.agent.Register(ctx); errc <- err }()
	e.clock.nextWait(t)
	cancel()
	err := <-errc
	if !errors.Is(err, context.Canceled) || !strings.Contains(err.Error(), "connection refused") {
		t.Errorf("Register error = %v, want context.Canceled carrying the last error", err)
	}
	close(e.clock.done)
}

func TestRegisterDisabled(t *testing.T) {
	cfg := testConfig()
	cfg.RegisterNode = false
	e := newTestEnv(t, cfg, nil)
	n, err := e.agent.Register(context.Background())
	if n != nil || err != nil {
		t.Fatalf("Register = %v, %v; want nil, nil when registration is off", n, err)
	}
	if len(e.client.Actions()) != 0 {
		t.Errorf("client calls with registration off: %v", e.client.Actions())
	}
}

// The node API's port is reported where the control service looks for it, and a
// Node registered before the API existed gets it on the next reconcile.
func TestRegisterReportsTheNodeAPIPort(t *testing.T) {
	cfg := testConfig()
	cfg.APIPort = 10250
	e := newTestEnv(t, cfg, nil)
	if _, err := e.agent.Register(context.Background()); err != nil {
		t.Fatal(err)
	}
	n, err := e.client.CoreV1().Nodes().Get(context.Background(), "node-a", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got := n.Status.DaemonEndpoints.KubeletEndpoint.Port; got != 10250 {
		t.Errorf("daemonEndpoints.kubeletEndpoint.port = %d, want 10250", got)
	}
	if addrs := e.agent.Addresses(); fmt.Sprint(addrs) != fmt.Sprint(n.Status.Addresses) {
		t.Errorf("Addresses() = %v, the Node reports %v", addrs, n.Status.Addresses)
	}
	st := n.Status
	st.DaemonEndpoints.KubeletEndpoint.Port = 0
	if !e.agent.applyStatusFacts(&st) || st.DaemonEndpoints.KubeletEndpoint.Port != 10250 {
		t.Errorf("a status without the port was not corrected: %d", st.DaemonEndpoints.KubeletEndpoint.Port)
	}
}
