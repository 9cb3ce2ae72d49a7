package podnet

import (
	"context"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/plinth/plinth/controlclient/nodeclient/nodeclienttest"
)

func TestWaitForPodCIDRsReturnsOnceAssigned(t *testing.T) {
	cs := fake.NewClientset(&corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1"}},
		&corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "other"}, Spec: corev1.NodeSpec{PodCIDR: "10.0.9.0/24", PodCIDRs: []string{"10.0.9.0/24"}}})
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	type result struct {
		got string
		err error
	}
	done := make(chan result, 1)
	go func() {
		cidrs, err := WaitForPodCIDRs(ctx, nodeclienttest.FromClientset(cs), "n1")
		var s []string
		for _, p := range cidrs {
			s = append(s, p.String())
		}
		done <- result{strings.Join(s, ","), err}
	}()
	select {
	case r := <-done:
		t.Fatalf("returned before the node had pod CIDRs: %+v", r)
	case <-time.After(100 * time.Millisecond):
		// Not a timing assertion: this only gives a wrong early return the chance to show.
	}
	n, err := cs.CoreV1().Nodes().Get(ctx, "n1", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	n.Spec.PodCIDR, n.Spec.PodCIDRs = "10.0.1.0/24", []string{"10.0.1.0/24", "fd00:1::/64"}
	if _, err := cs.CoreV1().Nodes().Update(ctx, n, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	r := <-done
	if r.err != nil || r.got != "10.0.1.0/24,fd00:1::/64" {
		t.Errorf("WaitForPodCIDRs = %q, %v; want n1's two CIDRs", r.got, r.err)
	}
}

func TestWaitForPodCIDRsHonoursTheContext(t *testing.T) {
	cs := fake.NewClientset(&corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1"}})
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if _, err := WaitForPodCIDRs(ctx, nodeclienttest.FromClientset(cs), "n1"); err == nil {
		t.Error("no error after the context ended")
	}
}

func TestNodePodCIDRs(t *testing.T) {
	for _, tc := range []struct {
		spec    corev1.NodeSpec
		want    string
		wantErr string
	}{
		{corev1.NodeSpec{}, "", ""},
		{corev1.NodeSpec{PodCIDR: "10.0.0.0/24"}, "10.0.0.0/24", ""},
		{corev1.NodeSpec{PodCIDR: "10.0.0.0/24", PodCIDRs: []string{"10.0.0.0/24", "fd00::/64"}}, "10.0.0.0/24,fd00::/64", ""},
		{corev1.NodeSpec{PodCIDRs: []string{"nope"}}, "", `spec.podCIDRs[0]: "nope" is not a CIDR`},
		{corev1.NodeSpec{PodCIDRs: []string{"10.0.0.0/31"}}, "", "too small"},
	} {
		got, err := NodePodCIDRs(&corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n"}, Spec: tc.spec})
		var s []string
		for _, p := range got {
			s = append(s, p.String())
		}
		if tc.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("%+v: %v, want %q", tc.spec, err, tc.wantErr)
			}
		} else if err != nil || strings.Join(s, ",") != tc.want {
			t.Errorf("%+v: %v, %v; want %s", tc.spec, s, err, tc.want)
		}
	}
}

func TestFakeAllocatesAndCounts(t *testing.T) {
	f, err := NewFake(mustPrefixes("10.5.0.0/24")...)
	if err != nil {
		t.Fatal(err)
	}
	a, err := f.Setup(t.Context(), "u1", "")
	if err != nil || a.IPs[0].String() != "10.5.0.2" || !strings.HasSuffix(a.NetNSPath, "/u1") {
		t.Fatalf("Setup = %+v, %v", a, err)
	}
	again, _ := f.Setup(t.Context(), "u1", "")
	if again.IPs[0] != a.IPs[0] {
		t.Errorf("second Setup gave %v, first %v", again.IPs, a.IPs)
	}
	if err := f.Teardown(t.Context(), "u1"); err != nil {
		t.Fatal(err)
	}
	if s, td := f.Calls("u1"); s != 2 || td != 1 || len(f.Attached()) != 0 {
		t.Errorf("calls %d/%d, attached %v", s, td, f.Attached())
	}
}
