package staticpods

import (
	"errors"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/plinth/plinth/daemon/pressure"
	"github.com/plinth/plinth/internal/podqos"
)

const etcdYAML = `apiVersion: v1
kind: Pod
metadata:
  name: etcd
  namespace: kube-system
  labels: {component: etcd}
spec:
  priorityClassName: system-node-critical
  hostNetwork: true
  containers:
  - name: etcd
    image: registry.example/etcd:3.5
    command: [etcd, --data-dir=/var/lib/etcd]
    volumeMounts: [{name: data, mountPath: /var/lib/etcd}]
  volumes:
  - name: data
    hostPath: {path: /var/lib/etcd, type: DirectoryOrCreate}
`

const webJSON = `{"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "web"},
 "spec": {"containers": [{"name": "web", "image": "registry.example/web:1"}]}}`

func TestDecodeManifestAccepts(t *testing.T) {
	pod, err := DecodeManifest("/m/etcd.yaml", []byte(etcdYAML))
	if err != nil {
		t.Fatal(err)
	}
	if pod.Name != "etcd" || pod.Namespace != "kube-system" || len(pod.Spec.Containers) != 1 ||
		pod.Spec.Volumes[0].HostPath.Path != "/var/lib/etcd" || !pod.Spec.HostNetwork {
		t.Errorf("decoded %+v", pod)
	}
	pod, err = DecodeManifest("/m/web.json", []byte(webJSON))
	if err != nil {
		t.Fatal(err)
	}
	if pod.Name != "web" || pod.Spec.Containers[0].Image != "registry.example/web:1" {
		t.Errorf("decoded %+v", pod)
	}
}

func TestDecodeManifestRefuses(t *testing.T) {
	const head = "apiVersion: v1\nkind: Pod\nmetadata: {name: p}\n"
	const oneContainer = "spec: {containers: [{name: c, image: i}]}\n"
	for _, tc := range []struct {
		name, data string
		want       []string
	}{
		{"empty file", "", []string{"holds no pod"}},
		{"comments only", "# nothing\n", []string{"holds no pod"}},
		{"a list", "- a\n", []string{"must be a Pod object"}},
		{"unknown field", head + "spec: {containers: [{name: c, image: i, imagePolicy: Always}]}\n", []string{`unknown field "spec.containers[0].imagePolicy"`}},
		{"wrong case", head + "spec: {Containers: [{name: c, image: i}]}\n", []string{`unknown field "spec.Containers"`}},
		{"duplicate key", "apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nmetadata: {name: q}\n" + oneContainer, []string{`"metadata"`, "already set"}},
		{"second pod", head + oneContainer + "---\n" + head + oneContainer, []string{"document 2", "one pod"}},
		{"a Deployment", "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: p}\n", []string{`kind "Deployment"`, "kind Pod"}},
		{"no apiVersion", "kind: Pod\nmetadata: {name: p}\n" + oneContainer, []string{`apiVersion ""`}},
		{"a PodList", "apiVersion: v1\nkind: PodList\nitems: []\n", []string{`unknown field "items"`}},
		{"type mismatch", head + "spec: {containers: [{name: c, image: i}], hostNetwork: yes please}\n", []string{"hostNetwork"}},
		{"no name", "apiVersion: v1\nkind: Pod\n" + oneContainer, []string{"metadata.name: Required value"}},
		{"bad name", "apiVersion: v1\nkind: Pod\nmetadata: {name: Etcd_1}\n" + oneContainer, []string{`metadata.name: Invalid value: "Etcd_1"`}},
		{"bad namespace", "apiVersion: v1\nkind: Pod\nmetadata: {name: p, namespace: kube.system}\n" + oneContainer, []string{"metadata.namespace"}},
		{"uid given", "apiVersion: v1\nkind: Pod\nmetadata: {name: p, uid: abc}\n" + oneContainer, []string{"metadata.uid", "derives"}},
		{"mirror annotation", "apiVersion: v1\nkind: Pod\nmetadata: {name: p, annotations: {kubernetes.io/config.mirror: x}}\n" + oneContainer,
			[]string{"metadata.annotations[kubernetes.io/config.mirror]"}},
		{"no containers", head + "spec: {containers: []}\n", []string{"spec.containers: Required value"}},
		{"no image", head + "spec: {containers: [{name: c}]}\n", []string{"spec.containers[0].image: Required value"}},
		{"duplicate container", head + "spec: {initContainers: [{name: c, image: i}], containers: [{name: c, image: i}]}\n",
			[]string{`spec.containers[0].name: Duplicate value: "c"`}},
		{"secret volume", head + "spec: {containers: [{name: c, image: i}], volumes: [{name: s, secret: {secretName: tls}}]}\n",
			[]string{"spec.volumes[0].secret.secretName", `Secret "tls"`, "hostPath"}},
		{"service account", head + "spec: {serviceAccountName: builder, containers: [{name: c, image: i}]}\n",
			[]string{"spec.serviceAccountName", `ServiceAccount "builder"`}},
		{"configmap env", head + "spec: {containers: [{name: c, image: i, envFrom: [{configMapRef: {name: cfg}}]}]}\n",
			[]string{"spec.containers[0].envFrom[0].configMapRef"}},
		{"wrong critical priority", head + "spec: {priorityClassName: system-node-critical, priority: 5, containers: [{name: c, image: i}]}\n",
			[]string{"spec.priority", "2000001000"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := DecodeManifest("/etc/plinth/manifests/p.yaml", []byte(tc.data))
			if err == nil {
				t.Fatal("accepted")
			}
			var me *ManifestError
			if !errors.As(err, &me) || me.File != "/etc/plinth/manifests/p.yaml" {
				t.Errorf("error %v does not carry the file", err)
			}
			msg := err.Error()
			if !strings.HasPrefix(msg, "/etc/plinth/manifests/p.yaml: ") {
				t.Errorf("error %q does not start with the file", msg)
			}
			for _, w := range tc.want {
				if !strings.Contains(msg, w) {
					t.Errorf("error %q does not mention %q", msg, w)
				}
			}
		})
	}
}

func decodeDefaulted(t *testing.T, file, node, data string) *corev1.Pod {
	t.Helper()
	pod, err := DecodeManifest(file, []byte(data))
	if err != nil {
		t.Fatal(err)
	}
	if err := applyDefaults(pod, file, node); err != nil {
		t.Fatal(err)
	}
	return pod
}

func TestApplyDefaults(t *testing.T) {
	pod := decodeDefaulted(t, "/m/etcd.yaml", "Node-A", etcdYAML)
	if pod.Name != "etcd-node-a" || pod.Namespace != "kube-system" || pod.Spec.NodeName != "Node-A" {
		t.Errorf("name %s/%s on %q, want kube-system/etcd-node-a on Node-A", pod.Namespace, pod.Name, pod.Spec.NodeName)
	}
	if len(pod.UID) != 32 || pod.Annotations[AnnotationConfigHash] != string(pod.UID) || pod.Annotations[AnnotationConfigSource] != "file" {
		t.Errorf("uid %q annotations %v, want a 32-hex UID equal to config.hash and config.source file", pod.UID, pod.Annotations)
	}
	if p := pod.Spec.Priority; p == nil || *p != 2000001000 || !pressure.IsCritical(pod) {
		t.Errorf("priority %v, want system-node-critical's 2000001000", p)
	}
	tolerates := false
	for _, tol := range pod.Spec.Tolerations {
		tolerates = tolerates || (tol.Key == "" && tol.Operator == corev1.TolerationOpExists && tol.Effect == corev1.TaintEffectNoExecute)
	}
	if !tolerates {
		t.Errorf("tolerations %v, want one for every NoExecute taint", pod.Spec.Tolerations)
	}
	if !IsStaticPod(pod) || IsMirrorPod(pod) {
		t.Error("a defaulted file pod must be static and not a mirror")
	}
	// Eviction and node admission count static pods as critical whatever their
	// priority, by the annotations set here.
	if web := decodeDefaulted(t, "/m/web.json", "node-a", webJSON); !pressure.IsCritical(web) {
		t.Error("daemon/pressure does not see a static pod without a priority class as critical")
	}
	web := decodeDefaulted(t, "/m/web.json", "node-a", webJSON)
	if web.Namespace != "default" || web.Spec.Priority != nil {
		t.Errorf("namespace %q priority %v, want default and none", web.Namespace, web.Spec.Priority)
	}
}

// TestStaticPodsGetTheAPIDefaults: kubelet defaults a manifest as the API would a pod,
// so a limit alone also requests it (the pod is Guaranteed, and node admission counts
// the request) and an unnamed restart policy is Always.
func TestStaticPodsGetTheAPIDefaults(t *testing.T) {
	const manifest = `{"apiVersion":"v1","kind":"Pod","metadata":{"name":"g"},"spec":{"containers":[
	{"name":"app","image":"busybox:1.36","resources":{"limits":{"cpu":"100m","memory":"64Mi"}}}]}}`
	pod := decodeDefaulted(t, "/m/g.json", "node-a", manifest)
	c := pod.Spec.Containers[0]
	if req := c.Resources.Requests[corev1.ResourceMemory]; req.String() != "64Mi" {
		t.Errorf("memory request %q, want the limit 64Mi", req.String())
	}
	if pod.Spec.RestartPolicy != corev1.RestartPolicyAlways || c.ImagePullPolicy != corev1.PullIfNotPresent || *pod.Spec.TerminationGracePeriodSeconds != 30 {
		t.Errorf("restart policy %q, pull policy %q, grace %d: want the API's defaults", pod.Spec.RestartPolicy, c.ImagePullPolicy, *pod.Spec.TerminationGracePeriodSeconds)
	}
	if got := podqos.Class(pod); got != corev1.PodQOSGuaranteed {
		t.Errorf("QoS class %s, want Guaranteed", got)
	}
}

func TestUIDFollowsThePodNotTheFormatting(t *testing.T) {
	base := decodeDefaulted(t, "/m/etcd.yaml", "node-a", etcdYAML).UID
	reformatted := "# the etcd member\n" + strings.ReplaceAll(etcdYAML, "labels: {component: etcd}", "labels:\n    component: etcd")
	if got := decodeDefaulted(t, "/m/etcd.yaml", "node-a", reformatted).UID; got != base {
		t.Errorf("comments and layout changed the UID: %s, was %s", got, base)
	}
	for name, uid := range map[string]string{
		"another node":  string(decodeDefaulted(t, "/m/etcd.yaml", "node-b", etcdYAML).UID),
		"another file":  string(decodeDefaulted(t, "/m/etcd2.yaml", "node-a", etcdYAML).UID),
		"another image": string(decodeDefaulted(t, "/m/etcd.yaml", "node-a", strings.Replace(etcdYAML, "etcd:3.5", "etcd:3.6", 1)).UID),
	} {
		if uid == string(base) {
			t.Errorf("%s kept the UID %s", name, uid)
		}
	}
}

func TestNameTooLongWithTheNode(t *testing.T) {
	long := strings.Repeat("a", 250)
	pod, err := DecodeManifest("/m/long.yaml", []byte("apiVersion: v1\nkind: Pod\nmetadata: {name: "+long+"}\nspec: {containers: [{name: c, image: i}]}\n"))
	if err != nil {
		t.Fatal(err)
	}
	if err := applyDefaults(pod, "/m/long.yaml", "node-a"); err == nil || !strings.Contains(err.Error(), "metadata.name") {
		t.Errorf("a name too long with the node appended: %v", err)
	}
}

func TestIgnoredNames(t *testing.T) {
	for _, n := range []string{".etcd.yaml.swp", ".hidden", "etcd.yaml~", "#etcd.yaml#", "etcd.yaml.bak", "etcd.yaml.dpkg-old", "etcd.yaml.rpmnew"} {
		if !ignoredName(n) {
			t.Errorf("%s is read as a manifest", n)
		}
	}
	for _, n := range []string{"etcd.yaml", "etcd.json", "etcd", "kube-apiserver.manifest"} {
		if ignoredName(n) {
			t.Errorf("%s is skipped", n)
		}
	}
}
