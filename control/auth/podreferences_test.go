package auth

import (
	"context"
	"errors"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/plinth/plinth/control/apiserver"
)

// fakeNodePods is the pods the API holds: bound to a node by spec.nodeName.
type fakeNodePods struct {
	pods []*corev1.Pod
	err  error
}

func (f *fakeNodePods) PodsOnNode(_ context.Context, namespace, node string) ([]*corev1.Pod, error) {
	if f.err != nil {
		return nil, f.err
	}
	var out []*corev1.Pod
	for _, p := range f.pods {
		if p.Namespace == namespace && p.Spec.NodeName == node {
			out = append(out, p)
		}
	}
	return out, nil
}

func boundPod(namespace, name, node string, spec corev1.PodSpec) *corev1.Pod {
	spec.NodeName = node
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name}, Spec: spec}
}

// everyReference is a pod spec using one Secret or ConfigMap through each way a pod can.
func everyReference() corev1.PodSpec {
	return corev1.PodSpec{
		ImagePullSecrets: []corev1.LocalObjectReference{{Name: "pull"}},
		Volumes: []corev1.Volume{
			{Name: "a", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: "vol-secret"}}},
			{Name: "b", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{LocalObjectReference: corev1.LocalObjectReference{Name: "vol-cm"}}}},
			{Name: "c", VolumeSource: corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{Sources: []corev1.VolumeProjection{
				{Secret: &corev1.SecretProjection{LocalObjectReference: corev1.LocalObjectReference{Name: "proj-secret"}}},
				{ConfigMap: &corev1.ConfigMapProjection{LocalObjectReference: corev1.LocalObjectReference{Name: "proj-cm"}}},
			}}}},
			{Name: "d", VolumeSource: corev1.VolumeSource{CSI: &corev1.CSIVolumeSource{Driver: "x", NodePublishSecretRef: &corev1.LocalObjectReference{Name: "csi-secret"}}}},
		},
		InitContainers: []corev1.Container{{Name: "init", EnvFrom: []corev1.EnvFromSource{
			{SecretRef: &corev1.SecretEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: "init-envfrom-secret"}}},
		}}},
		Containers: []corev1.Container{{Name: "main",
			Env: []corev1.EnvVar{
				{Name: "A", ValueFrom: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: "env-secret"}, Key: "k"}}},
				{Name: "B", ValueFrom: &corev1.EnvVarSource{ConfigMapKeyRef: &corev1.ConfigMapKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: "env-cm"}, Key: "k"}}},
				{Name: "C", Value: "plain"},
			},
			EnvFrom: []corev1.EnvFromSource{{ConfigMapRef: &corev1.ConfigMapEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: "envfrom-cm"}}}},
		}},
		EphemeralContainers: []corev1.EphemeralContainer{{EphemeralContainerCommon: corev1.EphemeralContainerCommon{Name: "debug",
			EnvFrom: []corev1.EnvFromSource{{SecretRef: &corev1.SecretEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: "debug-secret"}}}},
		}}},
	}
}

func TestPodReferences(t *testing.T) {
	pod := boundPod("default", "p", "node-a", everyReference())
	for _, name := range []string{"pull", "vol-secret", "proj-secret", "csi-secret", "init-envfrom-secret", "env-secret", "debug-secret"} {
		if !podReferences(pod, secretReference, name) {
			t.Errorf("secret %s not found among the pod's references", name)
		}
		if podReferences(pod, configMapReference, name) {
			t.Errorf("secret %s taken for a configmap", name)
		}
	}
	for _, name := range []string{"vol-cm", "proj-cm", "env-cm", "envfrom-cm"} {
		if !podReferences(pod, configMapReference, name) {
			t.Errorf("configmap %s not found among the pod's references", name)
		}
		if podReferences(pod, secretReference, name) {
			t.Errorf("configmap %s taken for a secret", name)
		}
	}
	if podReferences(pod, secretReference, "plain") || podReferences(pod, secretReference, "") {
		t.Error("a plain env value or an empty name counts as a reference")
	}
}

func TestNodeReadsOnlyReferencedSecretsAndConfigMaps(t *testing.T) {
	pods := &fakeNodePods{pods: []*corev1.Pod{
		boundPod("default", "on-a", "node-a", everyReference()),
		boundPod("default", "on-b", "node-b", corev1.PodSpec{ImagePullSecrets: []corev1.LocalObjectReference{{Name: "b-only"}}}),
		boundPod("other", "on-a-elsewhere", "node-a", corev1.PodSpec{ImagePullSecrets: []corev1.LocalObjectReference{{Name: "other-ns"}}}),
		boundPod("default", "unbound", "", corev1.PodSpec{ImagePullSecrets: []corev1.LocalObjectReference{{Name: "unbound-only"}}}),
	}}
	z := Authorizer{Pods: pods}
	cases := []struct {
		name   string
		a      apiserver.Attributes
		allow  bool
		reason string
	}{
		{"image pull secret of its pod", res(nodeA, "get", "", "secrets", "", "default", "pull"), true, ""},
		{"env configmap of its pod", res(nodeA, "get", "", "configmaps", "", "default", "env-cm"), true, ""},
		{"watch of one referenced secret", res(nodeA, "watch", "", "secrets", "", "default", "vol-secret"), true, ""},
		{"list of one referenced configmap", res(nodeA, "list", "", "configmaps", "", "default", "proj-cm"), true, ""},
		{"a secret only node B's pod uses", res(nodeA, "get", "", "secrets", "", "default", "b-only"), false, "no pod bound to node node-a references secret default/b-only"},
		{"a secret only an unbound pod uses", res(nodeA, "get", "", "secrets", "", "default", "unbound-only"), false, "no pod bound"},
		{"the same name in another namespace", res(nodeA, "get", "", "secrets", "", "default", "other-ns"), false, "no pod bound"},
		{"its pod's secret in that pod's namespace", res(nodeA, "get", "", "secrets", "", "other", "other-ns"), true, ""},
		{"a configmap named like a referenced secret", res(nodeA, "get", "", "configmaps", "", "default", "pull"), false, "references configmap default/pull"},
		{"list of all secrets", res(nodeA, "list", "", "secrets", "", "default", ""), false, "fieldSelector=metadata.name=NAME"},
		{"watch of all configmaps everywhere", res(nodeA, "watch", "", "configmaps", "", "", ""), false, "single configmaps"},
		{"a named list across namespaces", res(nodeA, "list", "", "secrets", "", "", "pull"), false, "in a namespace"},
		{"update of a referenced secret", res(nodeA, "update", "", "secrets", "", "default", "pull"), false, "not update them"},
		{"delete of a referenced configmap", res(nodeA, "delete", "", "configmaps", "", "default", "env-cm"), false, "not delete them"},
		{"create of a secret", res(nodeA, "create", "", "secrets", "", "default", ""), false, "not create them"},
		{"admins read any secret", res(admin, "list", "", "secrets", "", "", ""), true, ""},
		{"strangers read none", res(stranger, "get", "", "secrets", "", "default", "pull"), false, "jane is neither"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			allowed, reason := z.Authorize(context.Background(), c.a)
			if allowed != c.allow {
				t.Fatalf("Authorize(%+v) = %v (%q), want %v", c.a, allowed, reason, c.allow)
			}
			if !allowed && !strings.Contains(reason, c.reason) {
				t.Fatalf("reason %q does not mention %q", reason, c.reason)
			}
		})
	}

	// Once the pod is gone, so is the node's access; binding a new pod grants it again.
	get := res(nodeA, "get", "", "secrets", "", "default", "pull")
	pods.pods = pods.pods[1:]
	if allowed, _ := z.Authorize(context.Background(), get); allowed {
		t.Fatal("node A still reads the pull secret of its deleted pod")
	}
	pods.pods = append(pods.pods, boundPod("default", "new", "node-a", corev1.PodSpec{ImagePullSecrets: []corev1.LocalObjectReference{{Name: "pull"}}}))
	if allowed, reason := z.Authorize(context.Background(), get); !allowed {
		t.Fatalf("node A may not read the pull secret of its newly bound pod: %s", reason)
	}

	// A failed lookup refuses, naming the failure.
	pods.err = errors.New("etcd unavailable")
	if allowed, reason := z.Authorize(context.Background(), get); allowed || !strings.Contains(reason, "etcd unavailable") {
		t.Fatalf("lookup failure: allowed %v, reason %q", allowed, reason)
	}
}

// The cache is asked first; the live pods only when the cache finds no referencing pod.
func TestCachedPodsFallBackToLivePods(t *testing.T) {
	ref := corev1.PodSpec{ImagePullSecrets: []corev1.LocalObjectReference{{Name: "pull"}}}
	get := res(nodeA, "get", "", "secrets", "", "default", "pull")
	for _, tc := range []struct {
		name        string
		cache, live []*corev1.Pod
		liveErr     error
		allow       bool
	}{
		{"bound a moment ago: only live has it", nil, []*corev1.Pod{boundPod("default", "p", "node-a", ref)}, nil, true},
		{"cached: live is not asked", []*corev1.Pod{boundPod("default", "p", "node-a", ref)}, nil, errors.New("live must not be asked"), true},
		{"in neither", nil, nil, nil, false},
		{"cache has another node's pod", []*corev1.Pod{boundPod("default", "p", "node-b", ref)}, nil, nil, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			z := Authorizer{Pods: &fakeNodePods{pods: tc.cache}, LivePods: &fakeNodePods{pods: tc.live, err: tc.liveErr}}
			if allowed, reason := z.Authorize(context.Background(), get); allowed != tc.allow {
				t.Fatalf("allowed %v (%q), want %v", allowed, reason, tc.allow)
			}
		})
	}
	// Only live pods (no cache) works too.
	z := Authorizer{LivePods: &fakeNodePods{pods: []*corev1.Pod{boundPod("default", "p", "node-a", ref)}}}
	if allowed, reason := z.Authorize(context.Background(), get); !allowed {
		t.Fatalf("live pods alone: %s", reason)
	}
}

func TestReferencesOnlyKeepsEveryReference(t *testing.T) {
	full := boundPod("default", "p", "node-a", everyReference())
	full.Status.Phase = corev1.PodRunning
	full.Spec.Containers[0].Image = "registry.example/big:1"
	out, err := referencesOnly(full)
	if err != nil {
		t.Fatal(err)
	}
	slim := out.(*corev1.Pod)
	var want, got []string
	visitPodReferences(full, func(k referenceKind, n string) { want = append(want, k.String()+"/"+n) })
	visitPodReferences(slim, func(k referenceKind, n string) { got = append(got, k.String()+"/"+n) })
	if strings.Join(got, ",") != strings.Join(want, ",") || len(want) != 11 {
		t.Fatalf("references after slimming %v, want %v", got, want)
	}
	if slim.Status.Phase != "" || slim.Spec.Containers[0].Image != "" || slim.Spec.NodeName != "node-a" || slim.Namespace != "default" {
		t.Fatalf("slim pod keeps too much or too little: %+v", slim)
	}
}
