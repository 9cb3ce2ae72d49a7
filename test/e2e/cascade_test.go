package e2e

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
)

// holdFinalizer keeps a dependent from going away until the test lets it.
const holdFinalizer = "e2e.plinth.dev/hold"

// cascadeObjects are an owner pod and its dependents: a pod that blocks its owner's
// deletion and is held by a finalizer, and a Lease that does not block.
type cascadeObjects struct {
	owner, blocking *corev1.Pod
	lease           *coordinationv1.Lease
}

func unboundPod(name string, refs []metav1.OwnerReference, finalizers ...string) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default", OwnerReferences: refs, Finalizers: finalizers},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "registry.example/c:1"}}},
	}
}

func ownedBy(kind, apiVersion, name string, uid types.UID, block bool) metav1.OwnerReference {
	return metav1.OwnerReference{APIVersion: apiVersion, Kind: kind, Name: name, UID: uid, BlockOwnerDeletion: &block}
}

func createCascade(ctx context.Context, t *testing.T, client kubernetes.Interface, prefix string, extraOwners ...metav1.OwnerReference) cascadeObjects {
	t.Helper()
	pods := client.CoreV1().Pods("default")
	owner, err := pods.Create(ctx, unboundPod(prefix+"-owner", nil), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	refs := append([]metav1.OwnerReference{ownedBy("Pod", "v1", owner.Name, owner.UID, true)}, extraOwners...)
	blocking, err := pods.Create(ctx, unboundPod(prefix+"-blocking", refs, holdFinalizer), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	lease, err := client.CoordinationV1().Leases("default").Create(ctx, &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{
		Name: prefix + "-lease", OwnerReferences: []metav1.OwnerReference{ownedBy("Pod", "v1", owner.Name, owner.UID, false)},
	}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return cascadeObjects{owner: owner, blocking: blocking, lease: lease}
}

func release(ctx context.Context, t *testing.T, client kubernetes.Interface, pod string) {
	t.Helper()
	_, err := client.CoreV1().Pods("default").Patch(ctx, pod, types.MergePatchType, []byte(`{"metadata":{"finalizers":null}}`), metav1.PatchOptions{})
	if err != nil && !apierrors.IsNotFound(err) {
		t.Fatal(err)
	}
}

func podState(ctx context.Context, client kubernetes.Interface, name string) (*corev1.Pod, string) {
	p, err := client.CoreV1().Pods("default").Get(ctx, name, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		return nil, "gone"
	case err != nil:
		return nil, err.Error()
	case p.DeletionTimestamp != nil:
		return p, fmt.Sprintf("deleting, finalizers %v", p.Finalizers)
	default:
		return p, fmt.Sprintf("present, finalizers %v, owners %d", p.Finalizers, len(p.OwnerReferences))
	}
}

func leaseGone(ctx context.Context, client kubernetes.Interface, name string) (bool, string) {
	_, err := client.CoordinationV1().Leases("default").Get(ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return true, "gone"
	}
	return false, fmt.Sprint("present ", err)
}

// TestKubectlDeleteCascade deletes an owner pod with the installed kubectl under each
// propagation policy and checks what Kubernetes documents: foreground keeps the owner
// (deletionTimestamp and the foregroundDeletion finalizer) until its blocking
// dependents are gone; background deletes the owner at once and its dependents after;
// orphan deletes the owner only and removes its reference from the dependents.
func TestKubectlDeleteCascade(t *testing.T) {
	c := startControl(t)
	ctx := context.Background()
	client := clientFor(t, c.kubeconfig)

	t.Run("foreground", func(t *testing.T) {
		o := createCascade(ctx, t, client, "fg")
		mustKubectl(t, c.kubeconfig, "delete", "pod", o.owner.Name, "--cascade=foreground", "--wait=false")
		eventually(t, 30*time.Second, "dependents deleted while the owner waits", func() (bool, string) {
			owner, ownerSeen := podState(ctx, client, o.owner.Name)
			dep, depSeen := podState(ctx, client, o.blocking.Name)
			leaseDone, leaseSeen := leaseGone(ctx, client, o.lease.Name)
			ok := owner != nil && owner.DeletionTimestamp != nil && slices.Contains(owner.Finalizers, metav1.FinalizerDeleteDependents) &&
				dep != nil && dep.DeletionTimestamp != nil && leaseDone
			return ok, fmt.Sprintf("owner %s; blocking dependent %s; lease %s", ownerSeen, depSeen, leaseSeen)
		})
		// The blocking dependent is held by its finalizer; the owner must wait for it.
		time.Sleep(3 * time.Second)
		if owner, seen := podState(ctx, client, o.owner.Name); owner == nil || owner.DeletionTimestamp == nil {
			t.Fatalf("owner while a blocking dependent remains: %s, want it kept with deletionTimestamp", seen)
		}
		release(ctx, t, client, o.blocking.Name)
		eventually(t, 30*time.Second, "owner gone after its blocking dependent", func() (bool, string) {
			owner, seen := podState(ctx, client, o.owner.Name)
			dep, depSeen := podState(ctx, client, o.blocking.Name)
			return owner == nil && dep == nil && seen == "gone" && depSeen == "gone", "owner " + seen + "; dependent " + depSeen
		})
	})

	t.Run("background", func(t *testing.T) {
		o := createCascade(ctx, t, client, "bg")
		// kubectl waits for the owner only.
		mustKubectl(t, c.kubeconfig, "delete", "pod", o.owner.Name, "--cascade=background", "--timeout=30s")
		if _, seen := podState(ctx, client, o.owner.Name); seen != "gone" {
			t.Fatalf("owner after a background delete: %s, want gone at once", seen)
		}
		eventually(t, 30*time.Second, "dependents deleted after the owner", func() (bool, string) {
			dep, depSeen := podState(ctx, client, o.blocking.Name)
			leaseDone, leaseSeen := leaseGone(ctx, client, o.lease.Name)
			return dep != nil && dep.DeletionTimestamp != nil && leaseDone, "blocking dependent " + depSeen + "; lease " + leaseSeen
		})
		release(ctx, t, client, o.blocking.Name)
		eventually(t, 30*time.Second, "held dependent gone once released", func() (bool, string) {
			_, seen := podState(ctx, client, o.blocking.Name)
			return seen == "gone", seen
		})
	})

	t.Run("orphan", func(t *testing.T) {
		keeper, err := client.CoordinationV1().Leases("default").Create(ctx, &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: "or-keeper"}}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		keeperRef := ownedBy("Lease", "coordination.k8s.io/v1", keeper.Name, keeper.UID, false)
		o := createCascade(ctx, t, client, "or", keeperRef)
		mustKubectl(t, c.kubeconfig, "delete", "pod", o.owner.Name, "--cascade=orphan", "--timeout=30s")
		if _, seen := podState(ctx, client, o.owner.Name); seen != "gone" {
			t.Fatalf("owner after an orphan delete: %s, want gone", seen)
		}
		// Given time to do wrong, the collector must still have left the dependents.
		time.Sleep(3 * time.Second)
		dep, seen := podState(ctx, client, o.blocking.Name)
		if dep == nil || dep.DeletionTimestamp != nil {
			t.Fatalf("orphaned dependent: %s, want present", seen)
		}
		if len(dep.OwnerReferences) != 1 || dep.OwnerReferences[0].UID != keeper.UID {
			t.Fatalf("orphaned dependent's owners %+v, want only %s (the deleted owner's reference removed, the other kept)", dep.OwnerReferences, keeper.Name)
		}
		lease, err := client.CoordinationV1().Leases("default").Get(ctx, o.lease.Name, metav1.GetOptions{})
		if err != nil || lease.DeletionTimestamp != nil || len(lease.OwnerReferences) != 0 {
			t.Fatalf("orphaned lease: %v, owners %+v; want present without owners", err, lease.OwnerReferences)
		}
		release(ctx, t, client, o.blocking.Name)
	})
}
