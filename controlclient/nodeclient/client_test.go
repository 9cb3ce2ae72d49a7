package nodeclient_test

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"

	"github.com/plinth/plinth/control/apiserver/apitest"
	"github.com/plinth/plinth/controlclient/nodeclient"
)

// startAPI serves the real API and returns nodeclient's Client for it, and an
// administrator's clientset to set the scene and check the results with.
func startAPI(t *testing.T) (*nodeclient.Client, kubernetes.Interface) {
	t.Helper()
	s := apitest.Start(t, apitest.Options{})
	c, err := nodeclient.New(s.RESTConfig())
	if err != nil {
		t.Fatal(err)
	}
	return c, s.Client
}

func testContext(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func TestNodeRequests(t *testing.T) {
	c, admin := startAPI(t)
	ctx := testContext(t)
	nodes := c.Nodes()

	if _, err := nodes.Get(ctx, "node-a", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Fatalf("Get of a missing Node: %v, want NotFound", err)
	}
	created, err := nodes.Create(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node-a"}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if created.UID == "" || created.ResourceVersion == "" {
		t.Fatalf("Create returned %+v, want the server's object with a UID and resourceVersion", created.ObjectMeta)
	}
	if _, err := nodes.Create(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node-a"}}, metav1.CreateOptions{}); !apierrors.IsAlreadyExists(err) {
		t.Fatalf("second Create: %v, want AlreadyExists", err)
	}

	labelled := created.DeepCopy()
	labelled.Labels = map[string]string{"plinth.dev/pool": "blue"}
	updated, err := nodes.Update(ctx, labelled, metav1.UpdateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if updated.Labels["plinth.dev/pool"] != "blue" {
		t.Errorf("Update returned labels %v", updated.Labels)
	}
	if _, err := nodes.Update(ctx, labelled, metav1.UpdateOptions{}); !apierrors.IsConflict(err) {
		t.Errorf("Update from a stale resourceVersion: %v, want Conflict", err)
	}

	ready := updated.DeepCopy()
	ready.Status.Conditions = []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue, Reason: "KubeletReady"}}
	if _, err := nodes.UpdateStatus(ctx, ready, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	patch, _ := json.Marshal(map[string]any{"status": map[string]any{"capacity": map[string]string{"pods": "110"}}})
	patched, err := nodes.Patch(ctx, "node-a", types.MergePatchType, patch, metav1.PatchOptions{}, "status")
	if err != nil {
		t.Fatal(err)
	}

	got, err := admin.CoreV1().Nodes().Get(ctx, "node-a", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got.Labels["plinth.dev/pool"] != "blue" || len(got.Status.Conditions) != 1 || got.Status.Conditions[0].Type != corev1.NodeReady {
		t.Errorf("stored Node: labels %v, conditions %+v", got.Labels, got.Status.Conditions)
	}
	if q := got.Status.Capacity[corev1.ResourcePods]; q.String() != "110" || patched.ResourceVersion != got.ResourceVersion {
		t.Errorf("stored capacity pods %s (rv %s), want 110 from the status patch (rv %s)", q.String(), got.ResourceVersion, patched.ResourceVersion)
	}
}

func TestLeaseRequests(t *testing.T) {
	c, admin := startAPI(t)
	ctx := testContext(t)
	leases := c.Leases("kube-node-lease")
	holder, seconds := "node-a", int32(40)
	lease := &coordinationv1.Lease{
		ObjectMeta: metav1.ObjectMeta{Name: "node-a", Namespace: "kube-node-lease"},
		Spec:       coordinationv1.LeaseSpec{HolderIdentity: &holder, LeaseDurationSeconds: &seconds},
	}
	created, err := leases.Create(ctx, lease, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	renew := metav1.NewMicroTime(time.Date(2026, 11, 26, 10, 0, 0, 0, time.UTC))
	created.Spec.RenewTime = &renew
	if _, err := leases.Update(ctx, created, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	got, err := leases.Get(ctx, "node-a", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got.Spec.RenewTime == nil || !got.Spec.RenewTime.Equal(&renew) || *got.Spec.HolderIdentity != holder {
		t.Errorf("Lease read back: %+v", got.Spec)
	}
	if _, err := admin.CoordinationV1().Leases("kube-node-lease").Get(ctx, "node-a", metav1.GetOptions{}); err != nil {
		t.Errorf("the clientset does not see the Lease: %v", err)
	}
}

func TestPodsOfNodeEvictionAndEvents(t *testing.T) {
	c, admin := startAPI(t)
	ctx := testContext(t)
	for _, p := range []struct{ ns, name, node string }{
		{"default", "web", "node-a"}, {"kube-system", "dns", "node-a"}, {"default", "db", "node-b"},
	} {
		if _, err := admin.CoreV1().Pods(p.ns).Create(ctx, testPod(p.ns, p.name, p.node), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	list, err := c.Pods(metav1.NamespaceAll).List(ctx, metav1.ListOptions{
		FieldSelector: fields.OneTermEqualSelector("spec.nodeName", "node-a").String(),
	})
	if err != nil {
		t.Fatal(err)
	}
	if got := podNames(list.Items); !slices.Equal(got, []string{"default/web", "kube-system/dns"}) {
		t.Errorf("pods on node-a: %v", got)
	}

	web, err := c.Pods("default").Get(ctx, "web", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	web.Status.Phase = corev1.PodRunning
	if _, err := c.Pods("default").UpdateStatus(ctx, web, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}

	uid := web.UID
	ev := &policyv1.Eviction{
		ObjectMeta:    metav1.ObjectMeta{Name: "web", Namespace: "default"},
		DeleteOptions: &metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &uid}},
	}
	if err := c.Evictions("kube-system").Evict(ctx, ev); err == nil || !strings.Contains(err.Error(), "namespace") {
		t.Errorf("eviction of default/web through a kube-system client: %v, want an error naming the namespaces", err)
	}
	if err := c.Evictions("default").Evict(ctx, ev); err != nil {
		t.Fatal(err)
	}
	after, err := admin.CoreV1().Pods("default").Get(ctx, "web", metav1.GetOptions{})
	if err == nil && after.DeletionTimestamp == nil {
		t.Errorf("evicted pod is neither gone nor being deleted: %+v", after.ObjectMeta)
	} else if err != nil && !apierrors.IsNotFound(err) {
		t.Fatal(err)
	}

	event := &corev1.Event{
		ObjectMeta:     metav1.ObjectMeta{Name: "node-a.oom", Namespace: "default"},
		InvolvedObject: corev1.ObjectReference{Kind: "Node", Name: "node-a", UID: "node-a"},
		Reason:         "SystemOOM", Message: "a process was killed", Type: corev1.EventTypeWarning,
		Source: corev1.EventSource{Component: "plinthd", Host: "node-a"},
	}
	if _, err := c.Events("default").Create(ctx, event, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	got, err := admin.CoreV1().Events("default").Get(ctx, "node-a.oom", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got.Reason != "SystemOOM" || got.InvolvedObject.Name != "node-a" {
		t.Errorf("stored event %+v", got)
	}
}

func TestServiceAndEndpointSliceLists(t *testing.T) {
	c, admin := startAPI(t)
	ctx := testContext(t)
	if _, err := admin.CoreV1().Services("default").Create(ctx, testService("web"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := admin.DiscoveryV1().EndpointSlices("default").Create(ctx, testSlice("web-1", "web"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	services, err := c.Services(metav1.NamespaceAll).List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, s := range services.Items {
		names = append(names, s.Namespace+"/"+s.Name)
	}
	if !slices.Contains(names, "default/web") {
		t.Errorf("services %v, want default/web among them", names)
	}
	slicesList, err := c.EndpointSlices("default").List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(slicesList.Items) != 1 || slicesList.Items[0].Endpoints[0].Addresses[0] != "10.0.0.1" {
		t.Errorf("endpointslices %+v", slicesList.Items)
	}
}

func testPod(ns, name, node string) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec: corev1.PodSpec{
			NodeName:   node,
			Containers: []corev1.Container{{Name: "app", Image: "registry.example/app:1"}},
		},
	}
}

func testService(name string) *corev1.Service {
	return &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default"},
		Spec: corev1.ServiceSpec{
			Selector: map[string]string{"app": name},
			Ports:    []corev1.ServicePort{{Name: "http", Port: 80, Protocol: corev1.ProtocolTCP}},
		},
	}
}

func testSlice(name, service string) *discoveryv1.EndpointSlice {
	port, portName := int32(8080), "http"
	return &discoveryv1.EndpointSlice{
		ObjectMeta:  metav1.ObjectMeta{Name: name, Namespace: "default", Labels: map[string]string{discoveryv1.LabelServiceName: service}},
		AddressType: discoveryv1.AddressTypeIPv4,
		Endpoints:   []discoveryv1.Endpoint{{Addresses: []string{"10.0.0.1"}}},
		Ports:       []discoveryv1.EndpointPort{{Name: &portName, Port: &port}},
	}
}

func podNames(pods []corev1.Pod) []string {
	var out []string
	for _, p := range pods {
		out = append(out, p.Namespace+"/"+p.Name)
	}
	slices.Sort(out)
	return out
}

func TestSecretAndConfigMapGets(t *testing.T) {
	c, admin := startAPI(t)
	ctx := testContext(t)
	if _, err := admin.CoreV1().Secrets("default").Create(ctx, &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: "pull"}, Type: corev1.SecretTypeDockerConfigJson,
		StringData: map[string]string{corev1.DockerConfigJsonKey: `{"auths":{"registry.example":{"auth":"dTpw"}}}`},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := admin.CoreV1().ConfigMaps("default").Create(ctx, &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: "settings"}, Data: map[string]string{"mode": "fast"},
		BinaryData: map[string][]byte{"blob": {0, 255}},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	secret, err := c.Secrets("default").Get(ctx, "pull", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if secret.Type != corev1.SecretTypeDockerConfigJson || !strings.Contains(string(secret.Data[corev1.DockerConfigJsonKey]), "registry.example") {
		t.Fatalf("secret: type %q data %q", secret.Type, secret.Data)
	}
	cm, err := c.ConfigMaps("default").Get(ctx, "settings", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if cm.Data["mode"] != "fast" || string(cm.BinaryData["blob"]) != "\x00\xff" {
		t.Fatalf("configmap: data %v binaryData %v", cm.Data, cm.BinaryData)
	}
	if _, err := c.Secrets("default").Get(ctx, "missing", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Fatalf("Get of a missing Secret: %v, want NotFound", err)
	}
	if _, err := c.ConfigMaps("kube-system").Get(ctx, "settings", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Fatalf("Get of a ConfigMap in the wrong namespace: %v, want NotFound", err)
	}
}

func TestPullSecrets(t *testing.T) {
	c, admin := startAPI(t)
	ctx := testContext(t)
	for _, name := range []string{"first", "second"} {
		if _, err := admin.CoreV1().Secrets("default").Create(ctx, &corev1.Secret{
			ObjectMeta: metav1.ObjectMeta{Name: name}, Type: corev1.SecretTypeDockerConfigJson,
			StringData: map[string]string{corev1.DockerConfigJsonKey: `{"auths":{}}`},
		}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	pod := testPod("default", "p", "node-a")
	pod.Spec.ImagePullSecrets = []corev1.LocalObjectReference{{Name: "second"}, {Name: "missing"}, {Name: ""}, {Name: "first"}}
	secrets, errs := nodeclient.PullSecrets(ctx, c, pod)
	var names []string
	for _, s := range secrets {
		names = append(names, s.Name)
	}
	if strings.Join(names, ",") != "second,first" {
		t.Fatalf("pull secrets %v, want second,first in the pod's order", names)
	}
	if len(errs) != 1 || !apierrors.IsNotFound(errs[0]) || !strings.Contains(errs[0].Error(), `spec.imagePullSecrets[1] "missing"`) {
		t.Fatalf("errors %v, want one NotFound naming spec.imagePullSecrets[1]", errs)
	}
}

func TestPodCreateAndDeleteWithUIDPrecondition(t *testing.T) {
	c, admin := startAPI(t)
	ctx := testContext(t)
	pods := c.Pods("kube-system")
	mirror := testPod("kube-system", "etcd-node-a", "node-a")
	mirror.Annotations = map[string]string{"kubernetes.io/config.mirror": "abc"}
	created, err := pods.Create(ctx, mirror, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if created.UID == "" || created.Annotations["kubernetes.io/config.mirror"] != "abc" {
		t.Fatalf("Create returned %+v, want the stored pod with its UID and annotation", created.ObjectMeta)
	}
	if _, err := pods.Create(ctx, mirror, metav1.CreateOptions{}); !apierrors.IsAlreadyExists(err) {
		t.Errorf("second Create: %v, want AlreadyExists", err)
	}

	stale := types.UID("not-" + string(created.UID))
	err = pods.Delete(ctx, "etcd-node-a", metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &stale}})
	if !apierrors.IsConflict(err) {
		t.Fatalf("Delete with another pod's UID: %v, want Conflict", err)
	}
	if _, err := admin.CoreV1().Pods("kube-system").Get(ctx, "etcd-node-a", metav1.GetOptions{}); err != nil {
		t.Fatalf("the pod is gone after a refused Delete: %v", err)
	}
	zero := int64(0)
	if err := pods.Delete(ctx, "etcd-node-a", metav1.DeleteOptions{GracePeriodSeconds: &zero,
		Preconditions: &metav1.Preconditions{UID: &created.UID}}); err != nil {
		t.Fatal(err)
	}
	if _, err := admin.CoreV1().Pods("kube-system").Get(ctx, "etcd-node-a", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("after Delete with grace 0: %v, want NotFound", err)
	}
	if err := pods.Delete(ctx, "etcd-node-a", metav1.DeleteOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("Delete of a missing pod: %v, want NotFound", err)
	}
}
