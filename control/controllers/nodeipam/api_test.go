package nodeipam_test

import (
	"context"
	"net/netip"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	testingclock "k8s.io/utils/clock/testing"

	"github.com/plinth/plinth/control/apiserver/apitest"
	"github.com/plinth/plinth/control/controllers/nodeipam"
)

// The API test runs the controller against the real API over a real embedded etcd:
// its Node updates and status patches are ones the registry accepts, the registry
// keeps what it wrote immutable, and a deleted Node's CIDR reaches the Node that was
// waiting for it. Timeouts bound informer and API round trips only.
const apiTimeout = 30 * time.Second

func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(apiTimeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func getNode(t *testing.T, client kubernetes.Interface, name string) *v1.Node {
	t.Helper()
	n, err := client.CoreV1().Nodes().Get(t.Context(), name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return n
}

func TestNodeIPAMThroughTheAPI(t *testing.T) {
	client := apitest.Start(t, apitest.Options{}).Client
	ctx := t.Context()
	for _, name := range []string{"a", "b", "c"} {
		if _, err := client.CoreV1().Nodes().Create(ctx, &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	factory := informers.NewSharedInformerFactory(client, 0)
	ctrl, err := nodeipam.New(nodeipam.Config{Client: client, Nodes: factory.Core().V1().Nodes(),
		Clock: testingclock.NewFakeClock(time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)),
		Options: nodeipam.Options{
			ClusterCIDRs:     []netip.Prefix{netip.MustParsePrefix("10.96.0.0/23"), netip.MustParsePrefix("fd00:10::/63")},
			NodeMaskSizeIPv4: 24, NodeMaskSizeIPv6: 64,
		}})
	if err != nil {
		t.Fatal(err)
	}
	runCtx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Run: %v", err)
		}
		factory.Shutdown()
	}()
	factory.Start(runCtx.Done())
	go func() { done <- ctrl.Run(runCtx) }()

	// Two of the three fit; the third is marked NetworkUnavailable.
	var waiting string
	eventually(t, "two nodes with CIDRs and one marked unavailable", func() bool {
		with := 0
		for _, name := range []string{"a", "b", "c"} {
			n := getNode(t, client, name)
			if len(n.Spec.PodCIDRs) == 2 && n.Spec.PodCIDR == n.Spec.PodCIDRs[0] {
				with++
				continue
			}
			for _, c := range n.Status.Conditions {
				if c.Type == v1.NodeNetworkUnavailable && c.Status == v1.ConditionTrue && c.Reason == nodeipam.ReasonCIDRNotAvailable {
					waiting = name
				}
			}
		}
		return with == 2 && waiting != ""
	})

	// The registry keeps what the controller wrote.
	holder := "a"
	if waiting == "a" {
		holder = "b"
	}
	n := getNode(t, client, holder)
	freed := n.Spec.PodCIDRs
	n.Spec.PodCIDR, n.Spec.PodCIDRs = "10.96.1.128/25", []string{"10.96.1.128/25"}
	if _, err := client.CoreV1().Nodes().Update(ctx, n, metav1.UpdateOptions{}); !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), "podCIDR") {
		t.Errorf("changing podCIDR: err = %v, want Invalid naming podCIDR", err)
	}

	// Deleting a Node hands its CIDRs to the waiting one, whose condition turns False.
	if err := client.CoreV1().Nodes().Delete(ctx, holder, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the waiting node to get the freed CIDRs", func() bool {
		w := getNode(t, client, waiting)
		if strings.Join(w.Spec.PodCIDRs, ",") != strings.Join(freed, ",") {
			return false
		}
		for _, c := range w.Status.Conditions {
			if c.Type == v1.NodeNetworkUnavailable {
				return c.Status == v1.ConditionFalse && c.Reason == nodeipam.ReasonCIDRAssigned
			}
		}
		return false
	})
}

func TestRegistryRefusesInconsistentPodCIDRs(t *testing.T) {
	client := apitest.Start(t, apitest.Options{}).Client
	for _, tc := range []struct {
		name     string
		spec     v1.NodeSpec
		wantText string
	}{
		{"first differs", v1.NodeSpec{PodCIDR: "10.0.1.0/24", PodCIDRs: []string{"10.0.2.0/24"}}, "must equal podCIDRs[0]"},
		{"two IPv4", v1.NodeSpec{PodCIDR: "10.0.1.0/24", PodCIDRs: []string{"10.0.1.0/24", "10.0.2.0/24"}}, "at most one CIDR per IP family"},
	} {
		_, err := client.CoreV1().Nodes().Create(t.Context(), &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n"}, Spec: tc.spec}, metav1.CreateOptions{})
		if !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), tc.wantText) {
			t.Errorf("%s: err = %v, want Invalid with %q", tc.name, err, tc.wantText)
		}
	}
	// Once set, podCIDRs stay: adding a family later is refused too.
	n, err := client.CoreV1().Nodes().Create(t.Context(), &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: "set"},
		Spec: v1.NodeSpec{PodCIDR: "10.0.1.0/24", PodCIDRs: []string{"10.0.1.0/24"}}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	n.Spec.PodCIDRs = append(n.Spec.PodCIDRs, "fd00:1::/64")
	if _, err := client.CoreV1().Nodes().Update(t.Context(), n, metav1.UpdateOptions{}); !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), "spec.podCIDRs") {
		t.Errorf("changing podCIDRs: err = %v, want Invalid naming spec.podCIDRs", err)
	}
}
