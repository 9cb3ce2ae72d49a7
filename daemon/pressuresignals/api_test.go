package pressuresignals

import (
	"context"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	testingclock "k8s.io/utils/clock/testing"

	"github.com/plinth/plinth/controlclient/nodeclient/nodeclienttest"
	"github.com/plinth/plinth/daemon/pressure"
)

func apiPod(ns, name, uid, node string, mutate ...func(*corev1.Pod)) *corev1.Pod {
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, UID: types.UID(uid)},
		Spec:       corev1.PodSpec{NodeName: node},
		Status:     corev1.PodStatus{Phase: corev1.PodRunning},
	}
	for _, m := range mutate {
		m(p)
	}
	return p
}

var podsResource = schema.GroupVersionResource{Version: "v1", Resource: "pods"}

func TestAPIPodsListsOnlyLivePodsOfTheNode(t *testing.T) {
	prio := int32(1000)
	client := fake.NewClientset(
		apiPod("team", "web", "u1", "node-a", func(p *corev1.Pod) { p.Spec.Priority = &prio }),
		apiPod("team", "done", "u2", "node-a", func(p *corev1.Pod) { p.Status.Phase = corev1.PodSucceeded }),
		apiPod("team", "leaving", "u3", "node-a", func(p *corev1.Pod) { now := metav1.Now(); p.DeletionTimestamp = &now }),
		apiPod("kube-system", "static", "u4", "node-a", func(p *corev1.Pod) {
			p.Annotations = map[string]string{pressure.AnnotationConfigSource: "file"}
		}),
	)
	var selector string
	client.PrependReactor("list", "pods", func(a k8stesting.Action) (bool, runtime.Object, error) {
		selector = a.(k8stesting.ListAction).GetListRestrictions().Fields.String()
		return false, nil, nil
	})
	p := NewAPIPods(nodeclienttest.FromClientset(client), "node-a", nil, nil, discardLogger())
	pods, err := p.List(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if selector != "spec.nodeName=node-a" {
		t.Errorf("field selector %q, want spec.nodeName=node-a", selector)
	}
	var names []string
	for _, pod := range pods {
		names = append(names, pod.String())
		if pod.Name == "web" && (pod.Priority != 1000 || pod.UID != "u1") {
			t.Errorf("web = %+v, want priority 1000 and its UID", pod)
		}
		if pod.Name == "static" && !pod.Critical {
			t.Errorf("static pod not critical: %+v", pod)
		}
	}
	if got := strings.Join(names, " "); got != "kube-system/static team/web" && got != "team/web kube-system/static" {
		t.Errorf("listed %q, want the running pods only", got)
	}
}

func TestAPIPodsWithoutPodsResource(t *testing.T) {
	client := fake.NewClientset()
	client.PrependReactor("list", "pods", func(k8stesting.Action) (bool, runtime.Object, error) {
		return true, nil, apierrors.NewNotFound(schema.GroupResource{Resource: "pods"}, "")
	})
	pods, err := NewAPIPods(nodeclienttest.FromClientset(client), "node-a", nil, nil, discardLogger()).List(context.Background())
	if err != nil || len(pods) != 0 {
		t.Fatalf("List against a control service without pods = %v, %v; want nothing and no error", pods, err)
	}
}

func TestAPIPodsEvictAndGone(t *testing.T) {
	client := fake.NewClientset(apiPod("team", "web", "u1", "node-a"))
	var eviction *policyv1.Eviction
	client.PrependReactor("create", "pods", func(a k8stesting.Action) (bool, runtime.Object, error) {
		if a.GetSubresource() != "eviction" {
			return false, nil, nil
		}
		eviction = a.(k8stesting.CreateAction).GetObject().(*policyv1.Eviction)
		return true, nil, client.Tracker().Delete(podsResource, eviction.Namespace, eviction.Name)
	})
	sink := newRecordingSink()
	clk := testingclock.NewFakeClock(t0)
	p := NewAPIPods(nodeclienttest.FromClientset(client), "node-a", sink, clk, discardLogger())
	victim := pressure.Pod{Namespace: "team", Name: "web", UID: "u1"}
	if p.Gone(victim) {
		t.Fatal("Gone before eviction")
	}
	if err := p.Evict(context.Background(), victim, "The node was low on resource: memory.", pressure.HardEvictionGracePeriod); err != nil {
		t.Fatal(err)
	}
	if eviction == nil || eviction.Name != "web" || eviction.DeleteOptions == nil ||
		eviction.DeleteOptions.Preconditions == nil || *eviction.DeleteOptions.Preconditions.UID != "u1" {
		t.Fatalf("eviction sent = %+v, want web with a UID precondition u1", eviction)
	}
	if g := eviction.DeleteOptions.GracePeriodSeconds; g == nil || *g != 1 {
		t.Errorf("eviction grace period %v, want 1 s for a hard threshold", g)
	}
	ev := sink.wait(t)
	if ev.Reason != ReasonEvicted || ev.InvolvedObject.Kind != "Pod" || ev.InvolvedObject.Name != "web" ||
		ev.Namespace != "team" || ev.Message != "The node was low on resource: memory." {
		t.Errorf("evicted event = %+v", ev)
	}
	if !p.Gone(victim) {
		t.Error("Gone false after the pod was deleted")
	}

	// A new pod under the same name is not the evicted one.
	if err := client.Tracker().Add(apiPod("team", "web", "u2", "node-a")); err != nil {
		t.Fatal(err)
	}
	if !p.Gone(victim) {
		t.Error("Gone false while another pod (new UID) holds the name")
	}
	if p.Gone(pressure.Pod{Namespace: "team", Name: "web", UID: "u2"}) {
		t.Error("Gone true for the pod that is there")
	}
	// Evicting a pod that is gone already is not an error.
	if err := p.Evict(context.Background(), pressure.Pod{Namespace: "team", Name: "absent", UID: "u9"}, "m", pressure.PodGracePeriod); err != nil {
		t.Errorf("Evict of a gone pod = %v, want nil", err)
	}
}

func TestAPIPodsEvictFailureIsReturned(t *testing.T) {
	client := fake.NewClientset(apiPod("team", "web", "u1", "node-a"))
	client.PrependReactor("create", "pods", func(a k8stesting.Action) (bool, runtime.Object, error) {
		return true, nil, apierrors.NewForbidden(schema.GroupResource{Resource: "pods/eviction"}, "web", nil)
	})
	err := NewAPIPods(nodeclienttest.FromClientset(client), "node-a", nil, nil, discardLogger()).Evict(context.Background(), pressure.Pod{Namespace: "team", Name: "web", UID: "u1"}, "m", pressure.PodGracePeriod)
	if !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), "team/web") {
		t.Fatalf("Evict refused by the server = %v, want the Forbidden error naming the pod", err)
	}
}
