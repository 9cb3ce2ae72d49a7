package staticpods

import (
	"encoding/json"
	"reflect"
	"testing"

	corev1 "k8s.io/api/core/v1"
)

var manifestSeeds = []string{
	etcdYAML,
	webJSON,
	"",
	"null\n",
	"---\n",
	"- a\n",
	"apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec: {containers: [{name: c, image: i}]}\n",
	"apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec: {containers: [{name: c, image: i}]}\n---\napiVersion: v1\nkind: Pod\n",
	"apiVersion: v1\nkind: Pod\nmetadata: {name: p, namespace: kube-system, labels: {on: x}}\nspec: {containers: [{name: c, image: i}]}\n",
	"apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nmetadata: {name: q}\n",
	"apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec: {containers: [{name: c, image: i, resources: {limits: {memory: 1Gi, cpu: 250m}}}]}\n",
	"apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec: {containers: [{name: c, image: i, resources: {limits: {memory: lots}}}]}\n",
	"apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec: {volumes: [{name: s, secret: {secretName: x}}], containers: [{name: c, image: i}]}\n",
	"apiVersion: v1\nkind: Pod\nmetadata: {name: p, uid: x, annotations: {kubernetes.io/config.mirror: h}}\nspec: {containers: [{name: c, image: i}]}\n",
	"apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec: {priorityClassName: system-cluster-critical, containers: [{name: c, image: i}], tolerations: [{operator: Exists}]}\n",
	`{"apiVersion":"v1","kind":"Pod","metadata":{"name":"p","creationTimestamp":"not a time"},"spec":{"containers":[{"name":"c","image":"i"}]}}`,
	`{"apiVersion":"v1","kind":"Pod","metadata":{"name":"p"},"spec":{"containers":[{"name":"c","image":"i","ports":[{"containerPort":1e99}]}]}}`,
	"apiVersion: v1\nkind: Pod\nmetadata: &m {name: p}\nspec: {containers: [{name: c, image: i}]}\nstatus: {phase: *m}\n",
	"\xef\xbb\xbfapiVersion: v1\nkind: Pod\n",
}

// FuzzDecodeManifest feeds arbitrary bytes to the manifest decoder. Invariants: no
// panic; an accepted manifest has a name and containers, can be defaulted for a node,
// and its pod survives a round trip through JSON unchanged (what the decoder keeps is
// exactly what it understood); defaulting is deterministic (the same UID twice).
func FuzzDecodeManifest(f *testing.F) {
	for _, s := range manifestSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		pod, err := DecodeManifest("/m/fuzz.yaml", data)
		if err != nil {
			if pod != nil {
				t.Fatal("a pod returned with an error")
			}
			return
		}
		if pod.Name == "" || len(pod.Spec.Containers) == 0 {
			t.Fatalf("accepted a pod without a name or containers: %+v", pod)
		}
		js, err := json.Marshal(pod)
		if err != nil {
			t.Fatalf("accepted pod does not encode: %v", err)
		}
		var again corev1.Pod
		if err := json.Unmarshal(js, &again); err != nil {
			t.Fatalf("accepted pod does not decode again: %v", err)
		}
		if !reflect.DeepEqual(pod.Spec, again.Spec) {
			t.Fatalf("round trip changed the spec:\n%+v\n%+v", pod.Spec, again.Spec)
		}
		a, b := pod.DeepCopy(), pod.DeepCopy()
		errA, errB := applyDefaults(a, "/m/fuzz.yaml", "node-a"), applyDefaults(b, "/m/fuzz.yaml", "node-a")
		if (errA == nil) != (errB == nil) || a.UID != b.UID {
			t.Fatalf("defaulting is not deterministic: %v/%v, %s/%s", errA, errB, a.UID, b.UID)
		}
		if errA == nil && (a.Spec.NodeName != "node-a" || a.Namespace == "" || a.Annotations[AnnotationConfigHash] != string(a.UID)) {
			t.Fatalf("defaulted pod %+v", a.ObjectMeta)
		}
	})
}
