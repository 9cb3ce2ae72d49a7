package endpointslice_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/clock"
	testingclock "k8s.io/utils/clock/testing"

	"github.com/plinth/plinth/control/apiserver/apitest"
	"github.com/plinth/plinth/control/controllers/endpointslice"
	"github.com/plinth/plinth/control/controllers/nodelifecycle"
)

// The API test runs the controller against the real API server over a real embedded
// etcd: what it checks is that the slices it writes are ones the registry accepts and
// that they follow pods and the Service through watches. The controller runs on the
// real clock here because its queue's retries must fire; timeouts only bound round trips.
const apiTimeout = 30 * time.Second

func eventually(t *testing.T, what string, cond func() (bool, string)) {
	t.Helper()
	deadline := time.Now().Add(apiTimeout)
	for {
		ok, why := cond()
		if ok {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s: %s", what, why)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func startController(t *testing.T, client kubernetes.Interface) {
	t.Helper()
	factory := informers.NewSharedInformerFactory(client, 0)
	ctrl, err := endpointslice.New(endpointslice.Config{Client: client, Services: factory.Core().V1().Services(),
		Pods: factory.Core().V1().Pods(), Nodes: factory.Core().V1().Nodes(), Slices: factory.Discovery().V1().EndpointSlices(),
		Clock: clock.RealClock{}, Options: endpointslice.DefaultOptions()})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan struct{})
	t.Cleanup(func() {
		cancel()
		<-done
		factory.Shutdown()
	})
	factory.Start(ctx.Done())
	go func() { _ = ctrl.Run(ctx); close(done) }()
}

// endpointsByPod reads the Service's slices from the API.
func endpointsByPod(t *testing.T, client kubernetes.Interface, svc string) (map[string]discoveryv1.Endpoint, []discoveryv1.EndpointSlice) {
	t.Helper()
	list, err := client.DiscoveryV1().EndpointSlices("default").List(t.Context(), metav1.ListOptions{LabelSelector: discoveryv1.LabelServiceName + "=" + svc})
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]discoveryv1.Endpoint{}
	for _, s := range list.Items {
		for _, ep := range s.Endpoints {
			if ep.TargetRef != nil {
				out[ep.TargetRef.Name] = ep
			}
		}
	}
	return out, list.Items
}

func conditions(ep discoveryv1.Endpoint) string {
	return fmt.Sprintf("ready=%v serving=%v terminating=%v", *ep.Conditions.Ready, *ep.Conditions.Serving, *ep.Conditions.Terminating)
}

func TestServiceEndpointSlicesFollowPodsThroughTheAPI(t *testing.T) {
	client := apitest.Start(t, apitest.Options{}).Client
	ctx := t.Context()
	for name, zone := range map[string]string{"n1": "zone-a", "n2": "zone-b"} {
		n := &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{v1.LabelTopologyZone: zone}}}
		if _, err := client.CoreV1().Nodes().Create(ctx, n, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	prefer := v1.ServiceTrafficDistributionPreferClose
	svc := &v1.Service{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default"},
		Spec: v1.ServiceSpec{Selector: map[string]string{"app": "web"}, TrafficDistribution: &prefer,
			Ports: []v1.ServicePort{{Name: "http", Port: 80, TargetPort: intstr.FromString("http")}}}}
	svc, err := client.CoreV1().Services("default").Create(ctx, svc, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	addPod := func(name, node, ip string, ready bool) {
		t.Helper()
		p := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default", Labels: map[string]string{"app": "web"}},
			Spec: v1.PodSpec{NodeName: node, Containers: []v1.Container{{Name: "c", Image: "busybox",
				Ports: []v1.ContainerPort{{Name: "http", ContainerPort: 8080}}}}}}
		p, err := client.CoreV1().Pods("default").Create(ctx, p, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		status := v1.ConditionFalse
		if ready {
			status = v1.ConditionTrue
		}
		p.Status = v1.PodStatus{Phase: v1.PodRunning, PodIP: ip, PodIPs: []v1.PodIP{{IP: ip}},
			Conditions: []v1.PodCondition{{Type: v1.PodReady, Status: status}}}
		if _, err := client.CoreV1().Pods("default").UpdateStatus(ctx, p, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	addPod("a", "n1", "10.244.1.5", true)
	addPod("b", "n2", "10.244.2.5", true)
	addPod("c", "n1", "10.244.1.6", false)
	startController(t, client)

	eventually(t, "a slice with the three pods", func() (bool, string) {
		eps, slices := endpointsByPod(t, client, "web")
		return len(eps) == 3, fmt.Sprintf("%d endpoints in %d slices", len(eps), len(slices))
	})
	eps, slices := endpointsByPod(t, client, "web")
	s := slices[0]
	if len(slices) != 1 || s.AddressType != discoveryv1.AddressTypeIPv4 || len(s.Ports) != 1 || *s.Ports[0].Port != 8080 ||
		*s.Ports[0].Name != "http" || *s.Ports[0].Protocol != v1.ProtocolTCP {
		t.Fatalf("slices %+v", slices)
	}
	if s.Labels[discoveryv1.LabelManagedBy] != endpointslice.ManagedBy || len(s.OwnerReferences) != 1 || s.OwnerReferences[0].UID != svc.UID {
		t.Fatalf("slice metadata %+v", s.ObjectMeta)
	}
	for name, want := range map[string]string{"a": "ready=true serving=true terminating=false", "b": "ready=true serving=true terminating=false",
		"c": "ready=false serving=false terminating=false"} {
		if got := conditions(eps[name]); got != want {
			t.Errorf("%s: %s, want %s", name, got, want)
		}
	}
	if b := eps["b"]; *b.NodeName != "n2" || *b.Zone != "zone-b" || b.Hints == nil || b.Hints.ForZones[0].Name != "zone-b" || b.Addresses[0] != "10.244.2.5" {
		t.Fatalf("b: %+v", b)
	}

	// a stops being Ready (as the node lifecycle controller marks pods of silent nodes).
	p, err := client.CoreV1().Pods("default").Get(ctx, "a", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	p.Status.Conditions[0].Status = v1.ConditionFalse
	if _, err := client.CoreV1().Pods("default").UpdateStatus(ctx, p, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "a to be not ready", func() (bool, string) {
		eps, _ := endpointsByPod(t, client, "web")
		got := conditions(eps["a"])
		return got == "ready=false serving=false terminating=false", got
	})

	// b is deleted gracefully: it stays, serving and terminating, until its node lets go.
	if err := client.CoreV1().Pods("default").Delete(ctx, "b", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "b to be terminating", func() (bool, string) {
		eps, _ := endpointsByPod(t, client, "web")
		got := conditions(eps["b"])
		return got == "ready=false serving=true terminating=true", got
	})

	if err := client.CoreV1().Services("default").Delete(ctx, "web", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the slices to go with the Service", func() (bool, string) {
		_, slices := endpointsByPod(t, client, "web")
		return len(slices) == 0, fmt.Sprintf("%d slices", len(slices))
	})
}

func TestSelectorlessServiceSlicesAreLeftAloneThroughTheAPI(t *testing.T) {
	client := apitest.Start(t, apitest.Options{}).Client
	ctx := t.Context()
	svc := &v1.Service{ObjectMeta: metav1.ObjectMeta{Name: "ext", Namespace: "default"},
		Spec: v1.ServiceSpec{Ports: []v1.ServicePort{{Port: 5432}}}}
	if _, err := client.CoreV1().Services("default").Create(ctx, svc, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	port, ready := int32(5432), true
	manual := &discoveryv1.EndpointSlice{ObjectMeta: metav1.ObjectMeta{Name: "ext-manual", Namespace: "default",
		Labels: map[string]string{discoveryv1.LabelServiceName: "ext"}}, AddressType: discoveryv1.AddressTypeIPv4,
		Ports:     []discoveryv1.EndpointPort{{Port: &port}},
		Endpoints: []discoveryv1.Endpoint{{Addresses: []string{"192.0.2.10"}, Conditions: discoveryv1.EndpointConditions{Ready: &ready}}}}
	manual, err := client.DiscoveryV1().EndpointSlices("default").Create(ctx, manual, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	// A Service with a selector next to it, to know when the controller has synced.
	web := &v1.Service{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default"},
		Spec: v1.ServiceSpec{Selector: map[string]string{"app": "web"}, Ports: []v1.ServicePort{{Port: 80}}}}
	if _, err := client.CoreV1().Services("default").Create(ctx, web, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	startController(t, client)
	eventually(t, "the placeholder slice of web", func() (bool, string) {
		_, slices := endpointsByPod(t, client, "web")
		return len(slices) == 1, fmt.Sprintf("%d slices", len(slices))
	})
	_, slices := endpointsByPod(t, client, "ext")
	if len(slices) != 1 || slices[0].ResourceVersion != manual.ResourceVersion {
		t.Fatalf("the user's slice changed or got company: %+v", slices)
	}
}

// TestSilentNodeDropsItsEndpointsThroughTheAPI runs the node lifecycle controller (on a
// fake clock) next to this one: when a node goes silent, its pods' Ready goes False and
// their endpoints stop being ready.
func TestSilentNodeDropsItsEndpointsThroughTheAPI(t *testing.T) {
	client := apitest.Start(t, apitest.Options{}).Client
	ctx := t.Context()
	t0 := time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)
	clk := testingclock.NewFakeClock(t0)
	node, err := client.CoreV1().Nodes().Create(ctx, &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1"}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	hb := metav1.NewTime(t0)
	node.Status.Conditions = []v1.NodeCondition{{Type: v1.NodeReady, Status: v1.ConditionTrue, Reason: "Posted", LastHeartbeatTime: hb, LastTransitionTime: hb}}
	if _, err := client.CoreV1().Nodes().UpdateStatus(ctx, node, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	svc := &v1.Service{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default"},
		Spec: v1.ServiceSpec{Selector: map[string]string{"app": "web"}, Ports: []v1.ServicePort{{Port: 80}}}}
	if _, err := client.CoreV1().Services("default").Create(ctx, svc, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	p := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "a", Namespace: "default", Labels: map[string]string{"app": "web"}},
		Spec: v1.PodSpec{NodeName: "n1", Containers: []v1.Container{{Name: "c", Image: "busybox"}}}}
	p, err = client.CoreV1().Pods("default").Create(ctx, p, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	p.Status = v1.PodStatus{Phase: v1.PodRunning, PodIP: "10.244.1.5", Conditions: []v1.PodCondition{{Type: v1.PodReady, Status: v1.ConditionTrue}}}
	if _, err := client.CoreV1().Pods("default").UpdateStatus(ctx, p, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	startController(t, client)
	eventually(t, "a ready endpoint", func() (bool, string) {
		eps, _ := endpointsByPod(t, client, "web")
		ep, ok := eps["a"]
		return ok && *ep.Conditions.Ready, fmt.Sprint(eps)
	})

	factory := informers.NewSharedInformerFactory(client, 0)
	lifecycle, err := nodelifecycle.New(nodelifecycle.Config{Client: client, Nodes: factory.Core().V1().Nodes(),
		Leases: factory.Coordination().V1().Leases(), Pods: factory.Core().V1().Pods(), Clock: clk,
		Options: nodelifecycle.DefaultOptions()})
	if err != nil {
		t.Fatal(err)
	}
	runCtx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	defer func() {
		cancel()
		<-done
		factory.Shutdown()
	}()
	factory.Start(runCtx.Done())
	go func() { _ = lifecycle.Run(runCtx); close(done) }()
	eventually(t, "the node lifecycle controller's timer", func() (bool, string) { return clk.HasWaiters(), "no timer" })
	for range 11 { // past the 50 s grace period, without a heartbeat
		clk.Step(5 * time.Second)
	}
	eventually(t, "a's endpoint to stop being ready", func() (bool, string) {
		eps, _ := endpointsByPod(t, client, "web")
		got := conditions(eps["a"])
		return got == "ready=false serving=false terminating=false", got
	})
}
