package namespace_test

import (
	"context"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/utils/clock"

	"github.com/plinth/plinth/control/apiserver/apitest"
	"github.com/plinth/plinth/control/controllers/namespace"
)

// The API test runs the controller against the real API server and registry over a
// real embedded etcd, on loopback over plain HTTP. Timeouts are generous upper bounds
// on informer and API round trips; nothing sleeps for a fixed time.
const apiTimeout = 30 * time.Second

func newAPI(t *testing.T) *rest.Config {
	t.Helper()
	return apitest.Start(t, apitest.Options{SkipDefaultNamespaces: true}).RESTConfig()
}

func startController(t *testing.T, cfg *rest.Config) {
	t.Helper()
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	opts := namespace.DefaultOptions()
	opts.RecheckPeriod = 100 * time.Millisecond
	ctrl, err := namespace.New(namespace.Config{
		Client: dyn, Discovery: kubernetes.NewForConfigOrDie(cfg).Discovery(), Clock: clock.RealClock{}, Options: opts,
	})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- ctrl.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("Run returned %v", err)
			}
		case <-time.After(apiTimeout):
			t.Error("Run did not return after cancel")
		}
	})
}

func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(apiTimeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v waiting for %s", apiTimeout, what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func TestNamespaceDeletionThroughTheAPI(t *testing.T) {
	cfg := newAPI(t)
	client := kubernetes.NewForConfigOrDie(cfg)
	ctx := t.Context()
	for _, ns := range []string{"doomed", "kept"} {
		if _, err := client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	for _, l := range []struct{ ns, name string }{{"doomed", "a"}, {"doomed", "b"}, {"kept", "c"}} {
		if _, err := client.CoordinationV1().Leases(l.ns).Create(ctx, &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: l.name}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	pod := func(name, node string) *corev1.Pod {
		return &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: name},
			Spec:       corev1.PodSpec{NodeName: node, Containers: []corev1.Container{{Name: "c", Image: "busybox"}}},
		}
	}
	// An unscheduled pod goes at once; one on a node waits for its node (here, the test).
	for _, p := range []*corev1.Pod{pod("pending", ""), pod("running", "n1")} {
		if _, err := client.CoreV1().Pods("doomed").Create(ctx, p, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	startController(t, cfg)

	if err := client.CoreV1().Namespaces().Delete(ctx, "doomed", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the namespace's leases and unscheduled pod to be deleted, and the bound pod marked", func() bool {
		leases, err := client.CoordinationV1().Leases("doomed").List(ctx, metav1.ListOptions{})
		if err != nil || len(leases.Items) != 0 {
			return false
		}
		pods, err := client.CoreV1().Pods("doomed").List(ctx, metav1.ListOptions{})
		return err == nil && len(pods.Items) == 1 && pods.Items[0].Name == "running" && pods.Items[0].DeletionTimestamp != nil
	})
	ns, err := client.CoreV1().Namespaces().Get(ctx, "doomed", metav1.GetOptions{})
	if err != nil {
		t.Fatalf("namespace gone while a pod in it is still terminating: %v", err)
	}
	if ns.Status.Phase != corev1.NamespaceTerminating {
		t.Errorf("namespace phase %q while emptied, want Terminating", ns.Status.Phase)
	}

	// The node confirms the pod's end; the namespace then goes.
	zero := int64(0)
	if err := client.CoreV1().Pods("doomed").Delete(ctx, "running", metav1.DeleteOptions{GracePeriodSeconds: &zero}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the emptied namespace to be removed", func() bool {
		_, err := client.CoreV1().Namespaces().Get(ctx, "doomed", metav1.GetOptions{})
		return apierrors.IsNotFound(err)
	})
	if _, err := client.CoordinationV1().Leases("kept").Get(ctx, "c", metav1.GetOptions{}); err != nil {
		t.Errorf("lease in another namespace: %v", err)
	}
	if _, err := client.CoreV1().Namespaces().Get(ctx, "kept", metav1.GetOptions{}); err != nil {
		t.Errorf("other namespace: %v", err)
	}
}
