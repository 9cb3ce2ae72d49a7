package auth

import (
	"context"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
)

type fakeNodes map[string]*corev1.Node

func (f fakeNodes) GetNode(_ context.Context, name string) (*corev1.Node, error) {
	if n, ok := f[name]; ok {
		return n, nil
	}
	return nil, apierrors.NewNotFound(schema.GroupResource{Resource: "nodes"}, name)
}

func mirrorPod(nodeName string, mutate ...func(*corev1.Pod)) *corev1.Pod {
	p := pod("kube-system", "etcd-"+nodeName, nodeName)
	p.Annotations = map[string]string{mirrorPodAnnotation: "0123abcd", "kubernetes.io/config.source": "file"}
	p.Spec.Containers = []corev1.Container{{Name: "etcd", Image: "registry.example/etcd:3"}}
	for _, m := range mutate {
		m(p)
	}
	return p
}

func ownedBy(apiVersion, kind, name string, uid types.UID, controller, block *bool) func(*corev1.Pod) {
	return func(p *corev1.Pod) {
		p.OwnerReferences = append(p.OwnerReferences, metav1.OwnerReference{
			APIVersion: apiVersion, Kind: kind, Name: name, UID: uid, Controller: controller, BlockOwnerDeletion: block})
	}
}

func TestNodeRestrictionMirrorPods(t *testing.T) {
	yes, no := true, false
	nodes := fakeNodes{"node-a": {ObjectMeta: metav1.ObjectMeta{Name: "node-a", UID: "uid-a"}}}
	r := &NodeRestriction{Pods: fakePods{}, Nodes: nodes}
	withVolume := func(v corev1.VolumeSource) func(*corev1.Pod) {
		return func(p *corev1.Pod) {
			p.Spec.Volumes = append(p.Spec.Volumes, corev1.Volume{Name: "v", VolumeSource: v})
		}
	}
	tests := []struct {
		name string
		pod  *corev1.Pod
		deny string
	}{
		{"a mirror pod bound to itself", mirrorPod("node-a"), ""},
		{"a mirror pod owned by its Node", mirrorPod("node-a", ownedBy("v1", "Node", "node-a", "uid-a", &yes, nil)), ""},
		{"a mirror pod with a hostPath volume", mirrorPod("node-a", withVolume(corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: "/var/lib/etcd"}})), ""},
		{"an ordinary pod", mirrorPod("node-a", func(p *corev1.Pod) { delete(p.Annotations, mirrorPodAnnotation) }),
			"may create only mirror pods (annotated kubernetes.io/config.mirror)"},
		{"a mirror pod bound to node B", mirrorPod("node-b"), `bound to itself; pod kube-system/etcd-node-b has spec.nodeName "node-b"`},
		{"an unbound mirror pod", mirrorPod(""), `spec.nodeName ""`},
		{"a mirror pod naming a secret volume", mirrorPod("node-a", withVolume(corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: "etcd-tls"}})),
			`spec.volumes[0].secret.secretName (Secret "etcd-tls")`},
		{"a mirror pod naming a configmap in env", mirrorPod("node-a", func(p *corev1.Pod) {
			p.Spec.Containers[0].EnvFrom = []corev1.EnvFromSource{{ConfigMapRef: &corev1.ConfigMapEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: "cfg"}}}}
		}), `ConfigMap "cfg"`},
		{"a mirror pod with a service account", mirrorPod("node-a", func(p *corev1.Pod) { p.Spec.ServiceAccountName = "default" }),
			`spec.serviceAccountName (ServiceAccount "default")`},
		{"a mirror pod with a claim", mirrorPod("node-a", withVolume(corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: "data"}})),
			`PersistentVolumeClaim "data"`},
		{"owned by node B", mirrorPod("node-a", ownedBy("v1", "Node", "node-b", "uid-b", &yes, nil)), `not by v1 Node "node-b"`},
		{"owned by a ReplicaSet", mirrorPod("node-a", ownedBy("apps/v1", "ReplicaSet", "node-a", "uid-a", &yes, nil)), `not by apps/v1 ReplicaSet`},
		{"two owners", mirrorPod("node-a", ownedBy("v1", "Node", "node-a", "uid-a", &yes, nil), ownedBy("v1", "Node", "node-a", "uid-a", &no, nil)), "at most one owner reference"},
		{"owner not a controller", mirrorPod("node-a", ownedBy("v1", "Node", "node-a", "uid-a", &no, nil)), "must set controller: true"},
		{"owner blocks deletion", mirrorPod("node-a", ownedBy("v1", "Node", "node-a", "uid-a", &yes, &yes)), "may not set blockOwnerDeletion"},
		{"owner with a stale node UID", mirrorPod("node-a", ownedBy("v1", "Node", "node-a", "uid-old", &yes, nil)), `names UID "uid-old", but Node node-a has UID "uid-a"`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			a := res(nodeA, "create", "", "pods", "", "kube-system", "")
			err := r.Admit(context.Background(), a, tc.pod, nil)
			if tc.deny == "" {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				return
			}
			if !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), tc.deny) {
				t.Fatalf("got %v, want a 403 mentioning %q", err, tc.deny)
			}
			a.User = admin
			if err := r.Admit(context.Background(), a, tc.pod, nil); err != nil {
				t.Fatalf("admin refused: %v", err)
			}
		})
	}
}

func TestNodeRestrictionMirrorPodOwnerWithoutNodeLookup(t *testing.T) {
	yes := true
	r := &NodeRestriction{}
	a := res(nodeA, "create", "", "pods", "", "kube-system", "")
	if err := r.Admit(context.Background(), a, mirrorPod("node-a"), nil); err != nil {
		t.Fatalf("a mirror pod without an owner needs no lookup: %v", err)
	}
	err := r.Admit(context.Background(), a, mirrorPod("node-a", ownedBy("v1", "Node", "node-a", "uid-a", &yes, nil)), nil)
	if !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), "cannot look Nodes up") {
		t.Fatalf("got %v, want a refusal explaining Nodes cannot be looked up", err)
	}
}

func TestNodeRestrictionMissingOwnerNode(t *testing.T) {
	yes := true
	r := &NodeRestriction{Nodes: fakeNodes{}}
	a := res(nodeA, "create", "", "pods", "", "kube-system", "")
	err := r.Admit(context.Background(), a, mirrorPod("node-a", ownedBy("v1", "Node", "node-a", "uid-a", &yes, nil)), nil)
	if !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), "Node node-a does not exist") {
		t.Fatalf("got %v, want a refusal naming the missing Node", err)
	}
}
