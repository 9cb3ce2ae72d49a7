package registry_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/plinth/plinth/control/ipalloc"
	"github.com/plinth/plinth/control/registry"
	"github.com/plinth/plinth/control/storage"
)

func table(t *testing.T, url string) metav1.Table {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, url, nil)
	req.Header.Set("Accept", "application/json;as=Table;v=v1;g=meta.k8s.io")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %d %s", url, resp.StatusCode, body)
	}
	var tab metav1.Table
	if err := json.Unmarshal(body, &tab); err != nil {
		t.Fatal(err)
	}
	return tab
}

func columnNames(tab metav1.Table, wide bool) []string {
	var out []string
	for _, c := range tab.ColumnDefinitions {
		if wide || c.Priority == 0 {
			out = append(out, strings.ToUpper(c.Name))
		}
	}
	return out
}

// cell returns row's value in the named column.
func cell(t *testing.T, tab metav1.Table, row int, column string) any {
	t.Helper()
	for i, c := range tab.ColumnDefinitions {
		if c.Name == column {
			return tab.Rows[row].Cells[i]
		}
	}
	t.Fatalf("no column %q in %v", column, columnNames(tab, true))
	return nil
}

// statusCause finds the field cause of a 422.
func statusCause(err error, fieldName string) (metav1.StatusCause, bool) {
	var se *apierrors.StatusError
	if !errors.As(err, &se) || se.ErrStatus.Details == nil {
		return metav1.StatusCause{}, false
	}
	for _, c := range se.ErrStatus.Details.Causes {
		if c.Field == fieldName {
			return c, true
		}
	}
	return metav1.StatusCause{}, false
}

func TestDiscoveryListsSubresources(t *testing.T) {
	api := newAPI(t, registry.Config{})
	list, err := api.client.Discovery().ServerResourcesForGroupVersion("v1")
	if err != nil {
		t.Fatal(err)
	}
	byName := map[string]metav1.APIResource{}
	for _, r := range list.APIResources {
		byName[r.Name] = r
	}
	ev, ok := byName["pods/eviction"]
	if !ok || ev.Group != "policy" || ev.Version != "v1" || ev.Kind != "Eviction" {
		t.Fatalf("pods/eviction in discovery: %+v (found %v); kubectl drain needs group policy, version v1, kind Eviction", ev, ok)
	}
	for _, name := range []string{"namespaces", "namespaces/status", "pods", "pods/status", "pods/binding", "services", "services/status", "events", "nodes"} {
		if _, ok := byName[name]; !ok {
			t.Errorf("/api/v1 does not list %s", name)
		}
	}
	slices, err := api.client.Discovery().ServerResourcesForGroupVersion("discovery.k8s.io/v1")
	if err != nil || len(slices.APIResources) == 0 || slices.APIResources[0].Name != "endpointslices" {
		t.Fatalf("discovery.k8s.io/v1: %+v, %v", slices, err)
	}
}

func TestNamespaceLifecycle(t *testing.T) {
	api := newAPI(t, registry.Config{})
	ctx := context.Background()
	nss := api.client.CoreV1().Namespaces()
	for _, name := range registry.DefaultNamespaces {
		ns, err := nss.Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			t.Fatalf("default namespace %s: %v", name, err)
		}
		if ns.Status.Phase != corev1.NamespaceActive || !slices.Contains(ns.Spec.Finalizers, corev1.FinalizerKubernetes) || ns.Labels[corev1.LabelMetadataName] != name {
			t.Fatalf("namespace %s: phase %q finalizers %v labels %v", name, ns.Status.Phase, ns.Spec.Finalizers, ns.Labels)
		}
	}
	for _, name := range registry.ImmortalNamespaces {
		if err := nss.Delete(ctx, name, metav1.DeleteOptions{}); !apierrors.IsForbidden(err) {
			t.Fatalf("DELETE of namespace %s: %v, want Forbidden", name, err)
		}
	}
	// Running it again finds them and changes nothing.
	if err := registry.EnsureDefaultNamespaces(ctx, api.client.CoreV1()); err != nil {
		t.Fatal(err)
	}

	if _, err := nss.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "Not_A_Label"}}, metav1.CreateOptions{}); !apierrors.IsInvalid(err) {
		t.Fatalf("namespace with an invalid name: %v, want Invalid", err)
	}
	pod := testPod("p")
	if _, err := api.client.CoreV1().Pods("missing").Create(ctx, pod, metav1.CreateOptions{}); !apierrors.IsNotFound(err) {
		t.Fatalf("pod in a missing namespace: %v, want NotFound", err)
	}

	// A client can neither set the phase nor drop the finalizer of a live namespace.
	ns, err := nss.Create(ctx, &corev1.Namespace{
		ObjectMeta: metav1.ObjectMeta{Name: "doomed"},
		Status:     corev1.NamespaceStatus{Phase: corev1.NamespaceTerminating},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if ns.Status.Phase != corev1.NamespaceActive {
		t.Fatalf("created namespace phase %q, want Active", ns.Status.Phase)
	}
	ns.Spec.Finalizers = nil
	if ns, err = nss.Update(ctx, ns, metav1.UpdateOptions{}); err != nil || !slices.Contains(ns.Spec.Finalizers, corev1.FinalizerKubernetes) {
		t.Fatalf("update dropping the finalizer: %v, finalizers %v; want it kept", err, ns.Spec.Finalizers)
	}
	if _, err := api.client.CoreV1().Pods("doomed").Create(ctx, pod, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}

	tab := table(t, api.url+"/api/v1/namespaces/doomed")
	if got := columnNames(tab, true); !slices.Equal(got, []string{"NAME", "STATUS", "AGE"}) {
		t.Fatalf("namespace columns %v", got)
	}
	if s := cell(t, tab, 0, "Status"); s != "Active" {
		t.Fatalf("STATUS %v, want Active", s)
	}
}

func testPod(name string) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{
			Name: "app", Image: "busybox:1.36",
		}}},
	}
}

func TestPodsThroughTheAPI(t *testing.T) {
	api := newAPI(t, registry.Config{})
	ctx := context.Background()
	pods := api.client.CoreV1().Pods("default")

	in := testPod("web")
	in.Status.Phase = corev1.PodRunning // the server owns a new pod's status
	p, err := pods.Create(ctx, in, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if p.Status.Phase != corev1.PodPending || p.Status.QOSClass != corev1.PodQOSBestEffort {
		t.Fatalf("new pod status %+v, want Pending and BestEffort", p.Status)
	}
	if p.Spec.RestartPolicy != corev1.RestartPolicyAlways || p.Spec.SchedulerName != "default-scheduler" ||
		*p.Spec.TerminationGracePeriodSeconds != 30 || p.Spec.Containers[0].ImagePullPolicy != corev1.PullIfNotPresent {
		t.Fatalf("pod defaults missing: %+v", p.Spec)
	}
	if len(p.Spec.Tolerations) != 2 || *p.Spec.Tolerations[0].TolerationSeconds != 300 {
		t.Fatalf("tolerations %+v, want not-ready and unreachable for 300s", p.Spec.Tolerations)
	}

	// Invalid pods are refused with the field named.
	bad := testPod("bad")
	bad.Spec.Containers = append(bad.Spec.Containers, corev1.Container{Name: "app"})
	_, err = pods.Create(ctx, bad, metav1.CreateOptions{})
	if _, ok := statusCause(err, "spec.containers[1].name"); !apierrors.IsInvalid(err) || !ok {
		t.Fatalf("duplicate container name: %v", err)
	}
	if _, ok := statusCause(err, "spec.containers[1].image"); !ok {
		t.Fatalf("missing image not reported: %v", err)
	}

	// Only pods/binding sets the node.
	p.Spec.NodeName = "n1"
	_, err = pods.Update(ctx, p, metav1.UpdateOptions{})
	if _, ok := statusCause(err, "spec.nodeName"); !ok {
		t.Fatalf("update setting spec.nodeName: %v, want 422 on spec.nodeName", err)
	}
	p.Spec.NodeName = ""

	// The image may change; the rest of the spec may not.
	p.Spec.Containers[0].Image = "busybox:1.37"
	if p, err = pods.Update(ctx, p, metav1.UpdateOptions{}); err != nil {
		t.Fatalf("image update: %v", err)
	}
	changed := p.DeepCopy()
	changed.Spec.RestartPolicy = corev1.RestartPolicyNever
	if _, err := pods.Update(ctx, changed, metav1.UpdateOptions{}); !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), "spec.restartPolicy") {
		t.Fatalf("restartPolicy update: %v, want 422 naming spec.restartPolicy", err)
	}

	// A pod created on a node (as static pods are) is bound from the start.
	bound := testPod("on-n1")
	bound.Spec.NodeName = "n1"
	if p, err = pods.Create(ctx, bound, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	// The node reports it running; describe node's selector finds it.
	p.Status.Phase = corev1.PodRunning
	p.Status.PodIP = "10.244.0.5"
	if p, err = pods.UpdateStatus(ctx, p, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	list, err := pods.List(ctx, metav1.ListOptions{FieldSelector: "spec.nodeName=n1,status.phase!=Succeeded,status.phase!=Failed"})
	if err != nil || len(list.Items) != 1 {
		t.Fatalf("describe node's field selector: %v, %v", list, err)
	}
	tab := table(t, api.url+"/api/v1/namespaces/default/pods")
	if got := columnNames(tab, true); !slices.Equal(got, []string{"NAME", "READY", "STATUS", "RESTARTS", "AGE", "IP", "NODE", "NOMINATED NODE", "READINESS GATES"}) {
		t.Fatalf("pod columns %v", got)
	}
	if cell(t, tab, 0, "Status") != "Running" || cell(t, tab, 0, "IP") != "10.244.0.5" || cell(t, tab, 0, "Node") != "n1" || cell(t, tab, 0, "Ready") != "0/1" {
		t.Fatalf("pod row %v", tab.Rows[0].Cells)
	}

	// A pod no node runs goes at once.
	if _, err := pods.Create(ctx, testPod("pending"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := pods.Delete(ctx, "pending", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := pods.Get(ctx, "pending", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Fatalf("unbound pod after delete: %v, want NotFound", err)
	}
}

func TestServiceAllocationThroughTheAPI(t *testing.T) {
	api := newAPI(t, registry.Config{
		ServiceClusterIPRange: mustPrefix("10.0.0.0/28"),
		ServiceNodePortRange:  mustPorts(t, "30000-30099"),
		AllocationSeed:        1,
	})
	ctx := context.Background()
	svcs := api.client.CoreV1().Services("default")
	svc := func(name string) *corev1.Service {
		return &corev1.Service{
			ObjectMeta: metav1.ObjectMeta{Name: name},
			Spec:       corev1.ServiceSpec{Selector: map[string]string{"app": name}, Ports: []corev1.ServicePort{{Port: 80}}},
		}
	}

	// A static address is honoured; the same address again is a 422 on spec.clusterIP.
	static := svc("dns")
	static.Spec.ClusterIP = "10.0.0.10"
	s, err := svcs.Create(ctx, static, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if s.Spec.ClusterIP != "10.0.0.10" || s.Spec.ClusterIPs[0] != "10.0.0.10" || s.Spec.Type != corev1.ServiceTypeClusterIP ||
		s.Spec.Ports[0].TargetPort != intstr.FromInt32(80) || s.Spec.Ports[0].Protocol != corev1.ProtocolTCP ||
		s.Spec.SessionAffinity != corev1.ServiceAffinityNone || *s.Spec.IPFamilyPolicy != corev1.IPFamilyPolicySingleStack ||
		s.Spec.IPFamilies[0] != corev1.IPv4Protocol || *s.Spec.InternalTrafficPolicy != corev1.ServiceInternalTrafficPolicyCluster {
		t.Fatalf("service defaults: %+v", s.Spec)
	}
	dup := svc("dup")
	dup.Spec.ClusterIP = "10.0.0.10"
	_, err = svcs.Create(ctx, dup, metav1.CreateOptions{})
	if c, ok := statusCause(err, "spec.clusterIP"); !ok || !strings.Contains(c.Message, "10.0.0.10") || !strings.Contains(c.Message, "already allocated") {
		t.Fatalf("second service on 10.0.0.10: %v, want 422 on spec.clusterIP naming the value", err)
	}
	out := svc("out")
	out.Spec.ClusterIP = "10.1.0.1"
	if _, err = svcs.Create(ctx, out, metav1.CreateOptions{}); !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), "10.0.0.0/28") {
		t.Fatalf("address out of range: %v, want 422 naming the range", err)
	}

	// The rest of the /28 (14 usable) is handed out dynamically, then the range is full.
	seen := map[string]bool{"10.0.0.10": true}
	for i := 0; i < 13; i++ {
		s, err := svcs.Create(ctx, svc(fmt.Sprint("s", i)), metav1.CreateOptions{})
		if err != nil {
			t.Fatalf("service %d: %v", i, err)
		}
		if seen[s.Spec.ClusterIP] {
			t.Fatalf("%s handed out twice", s.Spec.ClusterIP)
		}
		seen[s.Spec.ClusterIP] = true
	}
	_, err = svcs.Create(ctx, svc("full"), metav1.CreateOptions{})
	if !apierrors.IsInternalError(err) || !strings.Contains(err.Error(), "full") {
		t.Fatalf("service in a full range: %v, want an internal error saying the range is full", err)
	}
	if claims := countKeys(t, api.store, ipalloc.ServiceIPPrefix); claims != 14 {
		t.Fatalf("%d cluster IP claims stored, want 14", claims)
	}
	// A failed create leaves no claim behind, and deleting a service frees its address.
	if err := svcs.Delete(ctx, "dns", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := svcs.Create(ctx, dup, metav1.CreateOptions{}); err != nil {
		t.Fatalf("10.0.0.10 after its service was deleted: %v", err)
	}

	// The cluster IP is immutable; an update without it keeps it.
	s, _ = svcs.Get(ctx, "dup", metav1.GetOptions{})
	moved := s.DeepCopy()
	moved.Spec.ClusterIP, moved.Spec.ClusterIPs = "10.0.0.11", nil
	if _, err := svcs.Update(ctx, moved, metav1.UpdateOptions{}); !apierrors.IsInvalid(err) {
		t.Fatalf("cluster IP change: %v, want Invalid", err)
	}
	kept := s.DeepCopy()
	kept.Spec.ClusterIP, kept.Spec.ClusterIPs = "", nil
	if kept, err = svcs.Update(ctx, kept, metav1.UpdateOptions{}); err != nil || kept.Spec.ClusterIP != "10.0.0.10" {
		t.Fatalf("update without a cluster IP: %v, %q; want 10.0.0.10 kept", err, kept.Spec.ClusterIP)
	}
}

func countKeys(t *testing.T, store *storage.Store, prefix string) int {
	t.Helper()
	res, err := store.List(context.Background(), prefix, storage.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return len(res.Items)
}

func TestNodePortsThroughTheAPI(t *testing.T) {
	api := newAPI(t, registry.Config{ServiceNodePortRange: mustPorts(t, "30000-30099"), AllocationSeed: 2})
	ctx := context.Background()
	svcs := api.client.CoreV1().Services("default")
	np := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: "web"},
		Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeNodePort, Ports: []corev1.ServicePort{
			{Name: "http", Port: 80, NodePort: 30005},
			{Name: "dns", Port: 53, Protocol: corev1.ProtocolUDP},
			{Name: "dns-tcp", Port: 53, Protocol: corev1.ProtocolTCP},
		}},
	}
	s, err := svcs.Create(ctx, np, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	p := s.Spec.Ports
	if p[0].NodePort != 30005 || p[1].NodePort < 30016 || p[2].NodePort != p[1].NodePort || s.Spec.ExternalTrafficPolicy != corev1.ServiceExternalTrafficPolicyCluster {
		t.Fatalf("node ports %+v ETP %q: want 30005 kept, one dynamic port from the upper band shared by 53/UDP and 53/TCP", p, s.Spec.ExternalTrafficPolicy)
	}
	if n := countKeys(t, api.store, ipalloc.NodePortPrefix); n != 2 {
		t.Fatalf("%d node port claims, want 2", n)
	}
	tab := table(t, api.url+"/api/v1/namespaces/default/services/web")
	if got := columnNames(tab, true); !slices.Equal(got, []string{"NAME", "TYPE", "CLUSTER-IP", "EXTERNAL-IP", "PORT(S)", "AGE", "SELECTOR"}) {
		t.Fatalf("service columns %v", got)
	}
	want := fmt.Sprintf("80:30005/TCP,53:%d/UDP,53:%d/TCP", p[1].NodePort, p[1].NodePort)
	if got := cell(t, tab, 0, "Port(s)"); got != want || cell(t, tab, 0, "External-IP") != "<none>" {
		t.Fatalf("PORT(S) %v, want %s", got, want)
	}

	clash := np.DeepCopy()
	clash.Name = "clash"
	clash.Spec.Ports = clash.Spec.Ports[:1]
	_, err = svcs.Create(ctx, clash, metav1.CreateOptions{})
	if c, ok := statusCause(err, "spec.ports[0].nodePort"); !ok || !strings.Contains(c.Message, "30005") {
		t.Fatalf("node port collision: %v, want 422 on spec.ports[0].nodePort naming 30005", err)
	}
	if n := countKeys(t, api.store, ipalloc.ServiceIPPrefix); n != 1 {
		t.Fatalf("the refused service left its cluster IP claimed: %d claims, want 1", n)
	}
	clash.Spec.Ports[0].NodePort = 31000
	if _, err = svcs.Create(ctx, clash, metav1.CreateOptions{}); !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), "30000-30099") {
		t.Fatalf("node port out of range: %v, want 422 naming the range", err)
	}

	// Dropping a port releases its node port; adding one allocates.
	s.Spec.Ports = []corev1.ServicePort{s.Spec.Ports[0], {Name: "https", Port: 443}}
	s, err = svcs.Update(ctx, s, metav1.UpdateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if s.Spec.Ports[1].NodePort == 0 || s.Spec.Ports[0].NodePort != 30005 {
		t.Fatalf("after update: %+v", s.Spec.Ports)
	}
	if n := countKeys(t, api.store, ipalloc.NodePortPrefix); n != 2 {
		t.Fatalf("%d node port claims after the update, want 2 (30005 and the new one)", n)
	}
	// To ClusterIP: the client clears the node ports and they are released.
	s.Spec.Type = corev1.ServiceTypeClusterIP
	for i := range s.Spec.Ports {
		s.Spec.Ports[i].NodePort = 0
	}
	if s, err = svcs.Update(ctx, s, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	if n := countKeys(t, api.store, ipalloc.NodePortPrefix); n != 0 || s.Spec.ExternalTrafficPolicy != "" {
		t.Fatalf("%d node port claims after switching to ClusterIP, ETP %q; want none", n, s.Spec.ExternalTrafficPolicy)
	}
	if err := svcs.Delete(ctx, "web", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	if n := countKeys(t, api.store, ipalloc.ServiceIPPrefix); n != 0 {
		t.Fatalf("%d cluster IP claims after the last service went, want 0", n)
	}

	// Headless and ExternalName services claim nothing.
	headless := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "headless"}, Spec: corev1.ServiceSpec{ClusterIP: "None"}}
	ext := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "ext"}, Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeExternalName, ExternalName: "example.com"}}
	for _, s := range []*corev1.Service{headless, ext} {
		if _, err := svcs.Create(ctx, s, metav1.CreateOptions{}); err != nil {
			t.Fatalf("%s: %v", s.Name, err)
		}
	}
	if n := countKeys(t, api.store, ipalloc.ServiceIPPrefix); n != 0 {
		t.Fatalf("headless and ExternalName services claimed %d addresses", n)
	}
}

func TestEventsExpireAndSelectByInvolvedObject(t *testing.T) {
	api := newAPI(t, registry.Config{EventTTL: 2 * time.Second})
	ctx := context.Background()
	events := api.client.CoreV1().Events("default")
	now := metav1.Now()
	ev := &corev1.Event{
		ObjectMeta:     metav1.ObjectMeta{Name: "n1.1"},
		InvolvedObject: corev1.ObjectReference{Kind: "Node", Name: "n1", UID: "u1"},
		Reason:         "NodeReady", Message: "Node n1 status is now: NodeReady", Type: corev1.EventTypeNormal,
		Source: corev1.EventSource{Component: "plinthd", Host: "n1"}, FirstTimestamp: now, LastTimestamp: now, Count: 1,
	}
	if _, err := events.Create(ctx, ev, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	other := ev.DeepCopy()
	other.Name, other.InvolvedObject.Name = "n2.1", "n2"
	if _, err := events.Create(ctx, other, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	list, err := events.List(ctx, metav1.ListOptions{FieldSelector: "involvedObject.kind=Node,involvedObject.name=n1,involvedObject.namespace=,source=plinthd,type=Normal"})
	if err != nil || len(list.Items) != 1 || list.Items[0].Name != "n1.1" {
		t.Fatalf("describe's involvedObject selector: %v, %v", list, err)
	}
	tab := table(t, api.url+"/api/v1/namespaces/default/events/n1.1")
	if cell(t, tab, 0, "Object") != "node/n1" || cell(t, tab, 0, "Reason") != "NodeReady" || cell(t, tab, 0, "Source") != "plinthd, n1" {
		t.Fatalf("event row %v", tab.Rows[0].Cells)
	}
	// An event about a node belongs in default.
	wrong := ev.DeepCopy()
	wrong.Name = "misplaced"
	if _, err := api.client.CoreV1().Events("kube-system").Create(ctx, wrong, metav1.CreateOptions{}); !apierrors.IsInvalid(err) {
		t.Fatalf("node event in kube-system: %v, want Invalid", err)
	}

	deadline := time.Now().Add(20 * time.Second)
	for {
		_, err := events.Get(ctx, "n1.1", metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("event still there 20s after a 2s TTL: %v", err)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

func TestEndpointSlicesThroughTheAPI(t *testing.T) {
	api := newAPI(t, registry.Config{})
	ctx := context.Background()
	slices := api.client.DiscoveryV1().EndpointSlices("default")
	port := int32(8080)
	s := &discoveryv1.EndpointSlice{
		ObjectMeta:  metav1.ObjectMeta{Name: "web-abc", Labels: map[string]string{discoveryv1.LabelServiceName: "web"}},
		AddressType: discoveryv1.AddressTypeIPv4,
		Endpoints: []discoveryv1.Endpoint{
			{Addresses: []string{"10.244.0.5"}}, {Addresses: []string{"10.244.0.6"}},
			{Addresses: []string{"10.244.0.7"}}, {Addresses: []string{"10.244.0.8"}},
		},
		Ports: []discoveryv1.EndpointPort{{Port: &port}},
	}
	created, err := slices.Create(ctx, s, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if created.Ports[0].Protocol == nil || *created.Ports[0].Protocol != corev1.ProtocolTCP {
		t.Fatalf("port protocol not defaulted: %+v", created.Ports[0])
	}
	list, err := slices.List(ctx, metav1.ListOptions{LabelSelector: discoveryv1.LabelServiceName + "=web"})
	if err != nil || len(list.Items) != 1 {
		t.Fatalf("slices of service web: %v, %v", list, err)
	}
	tab := table(t, api.url+"/apis/discovery.k8s.io/v1/namespaces/default/endpointslices")
	if got := columnNames(tab, true); !equal(got, []string{"NAME", "ADDRESSTYPE", "PORTS", "ENDPOINTS", "AGE"}) {
		t.Fatalf("endpointslice columns %v", got)
	}
	if got := cell(t, tab, 0, "Endpoints"); got != "10.244.0.5,10.244.0.6,10.244.0.7 + 1 more..." {
		t.Fatalf("ENDPOINTS %v", got)
	}
	bad := s.DeepCopy()
	bad.Name = "bad"
	bad.Endpoints[0].Addresses = []string{"fd00::1"}
	_, err = slices.Create(ctx, bad, metav1.CreateOptions{})
	if _, ok := statusCause(err, "endpoints[0].addresses[0]"); !ok {
		t.Fatalf("IPv6 address in an IPv4 slice: %v, want 422 on endpoints[0].addresses[0]", err)
	}
	created.AddressType = discoveryv1.AddressTypeIPv6
	created.Endpoints = []discoveryv1.Endpoint{{Addresses: []string{"fd00::1"}}}
	if _, err := slices.Update(ctx, created, metav1.UpdateOptions{}); !apierrors.IsInvalid(err) {
		t.Fatalf("addressType change: %v, want Invalid (immutable)", err)
	}
}

func equal(a, b []string) bool { return slices.Equal(a, b) }
