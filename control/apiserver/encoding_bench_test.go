package apiserver

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer/streaming"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/dynamic"
	clientscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/rest"
	restclientwatch "k8s.io/client-go/rest/watch"
)

// BenchmarkNodeEncoding compares JSON and protobuf for one Node as a node agent
// reports it: the server writing a GET response and a watch event (and, for
// reference, a JSON watch event marshalled twice, as before), and client-go decoding
// each, as an informer's watch does:
//
//	go test -run '^$' -bench NodeEncoding -benchmem ./control/apiserver/
func BenchmarkNodeEncoding(b *testing.B) {
	nodes := &Resource{GroupVersion: schema.GroupVersion{Version: "v1"}, Plural: "nodes", Kind: "Node",
		New: func() runtime.Object { return &corev1.Node{} }}
	node := benchNode()
	out := &capturedResponse{header: http.Header{}}

	for _, f := range []struct {
		name   string
		format responseFormat
	}{{"json", formatJSON}, {"protobuf", formatProtobuf}} {
		b.Run("get/"+f.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				out.body.Reset()
				writeObject(out, f.format, http.StatusOK, nodes, node)
			}
			b.ReportMetric(float64(out.body.Len()), "wire-bytes")
		})
	}
	b.Run("watch-event/json-marshalled-twice", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			out.body.Reset()
			raw, err := json.Marshal(node)
			if err != nil {
				b.Fatal(err)
			}
			line, err := json.Marshal(metav1.WatchEvent{Type: string(watch.Modified), Object: runtime.RawExtension{Raw: raw}})
			if err != nil {
				b.Fatal(err)
			}
			_, _ = out.Write(append(line, '\n'))
		}
		b.ReportMetric(float64(out.body.Len()), "wire-bytes")
	})
	for _, f := range []struct {
		name   string
		format responseFormat
	}{{"json", formatJSON}, {"protobuf", formatProtobuf}} {
		b.Run("watch-event/"+f.name, func(b *testing.B) {
			enc := newWatchEncoder(out, out, nodes, f.format, "", time.Now)
			b.ReportAllocs()
			for b.Loop() {
				out.body.Reset()
				if err := enc.send(watch.Modified, node); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(out.body.Len()), "wire-bytes")
		})
	}

	// The client's side, with client-go's codecs for built-in kinds.
	negotiator := runtime.NewClientNegotiator(clientscheme.Codecs.WithoutConversion(), corev1.SchemeGroupVersion)
	for _, f := range []struct {
		name      string
		format    responseFormat
		mediaType string
	}{{"json", formatJSON, "application/json"}, {"protobuf", formatProtobuf, protobufContentType}} {
		b.Run("client-decode-get/"+f.name, func(b *testing.B) {
			out.body.Reset()
			writeObject(out, f.format, http.StatusOK, nodes, node)
			body := bytes.Clone(out.body.Bytes())
			decoder, err := negotiator.Decoder(f.mediaType, nil)
			if err != nil {
				b.Fatal(err)
			}
			b.ReportAllocs()
			for b.Loop() {
				if _, _, err := decoder.Decode(body, nil, &corev1.Node{}); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run("client-decode-watch-event/"+f.name, func(b *testing.B) {
			out.body.Reset()
			enc := newWatchEncoder(out, out, nodes, f.format, "", time.Now)
			if err := enc.send(watch.Modified, node); err != nil {
				b.Fatal(err)
			}
			objectDecoder, streamSerializer, framer, err := negotiator.StreamDecoder(f.mediaType, map[string]string{"stream": "watch"})
			if err != nil {
				b.Fatal(err)
			}
			frames := framer.NewFrameReader(&repeatedStream{data: bytes.Clone(out.body.Bytes())})
			events := restclientwatch.NewDecoder(streaming.NewDecoder(frames, streamSerializer), objectDecoder)
			b.ReportAllocs()
			for b.Loop() {
				t, obj, err := events.Decode()
				if err != nil || t != watch.Modified || obj.(*corev1.Node).Name != node.Name {
					b.Fatalf("decoded %s %T: %v", t, obj, err)
				}
			}
		})
	}
}

// benchNode is a Node with what plinthd reports about a worker.
func benchNode() *corev1.Node {
	now := metav1.NewTime(time.Date(2026, 11, 26, 12, 0, 0, 0, time.UTC))
	n := &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: "worker-0042", UID: "6f1c2a9e-1d1b-4c36-9c1e-0d3b5d0f8a42", ResourceVersion: "123456",
			CreationTimestamp: now, Labels: map[string]string{
				"kubernetes.io/hostname": "worker-0042", "kubernetes.io/os": "linux", "kubernetes.io/arch": "amd64",
				"topology.kubernetes.io/zone": "zone-b", "node.kubernetes.io/instance-type": "m5.large",
			},
			Annotations: map[string]string{"node.alpha.kubernetes.io/ttl": "0"}},
		Spec: corev1.NodeSpec{PodCIDR: "10.244.42.0/24", PodCIDRs: []string{"10.244.42.0/24", "fd00:10:244:2a::/64"}},
		Status: corev1.NodeStatus{
			Addresses:       []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: "10.0.0.42"}, {Type: corev1.NodeHostName, Address: "worker-0042"}},
			DaemonEndpoints: corev1.NodeDaemonEndpoints{KubeletEndpoint: corev1.DaemonEndpoint{Port: 10250}},
			NodeInfo: corev1.NodeSystemInfo{MachineID: "4a8b1d3e5f60718293a4b5c6d7e8f901", SystemUUID: "ec2a9e1f-0000-4000-8000-000000000042",
				BootID: "a1b2c3d4-e5f6-4789-9abc-def012345678", KernelVersion: "6.18.0", OSImage: "Debian GNU/Linux 12 (bookworm)",
				ContainerRuntimeVersion: "runc://1.1.5", KubeletVersion: "v1.33.0-plinth", OperatingSystem: "linux", Architecture: "amd64"},
		},
	}
	n.Status.Capacity = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("2"), corev1.ResourceMemory: resource.MustParse("8029348Ki"),
		corev1.ResourcePods: resource.MustParse("110"), corev1.ResourceEphemeralStorage: resource.MustParse("102687672Ki")}
	n.Status.Allocatable = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("2"), corev1.ResourceMemory: resource.MustParse("7926948Ki"),
		corev1.ResourcePods: resource.MustParse("110"), corev1.ResourceEphemeralStorage: resource.MustParse("94636958181")}
	for _, c := range []struct {
		t      corev1.NodeConditionType
		s      corev1.ConditionStatus
		reason string
	}{{corev1.NodeMemoryPressure, corev1.ConditionFalse, "KubeletHasSufficientMemory"}, {corev1.NodeDiskPressure, corev1.ConditionFalse, "KubeletHasNoDiskPressure"},
		{corev1.NodePIDPressure, corev1.ConditionFalse, "KubeletHasSufficientPID"}, {corev1.NodeReady, corev1.ConditionTrue, "KubeletReady"}} {
		n.Status.Conditions = append(n.Status.Conditions, corev1.NodeCondition{Type: c.t, Status: c.s, Reason: c.reason,
			Message: "plinthd reports " + c.reason, LastHeartbeatTime: now, LastTransitionTime: now})
	}
	for i := range 8 {
		n.Status.Images = append(n.Status.Images, corev1.ContainerImage{
			Names:     []string{fmt.Sprintf("registry.example/team/app-%d@sha256:%064d", i, i), fmt.Sprintf("registry.example/team/app-%d:v1.%d", i, i)},
			SizeBytes: int64(10+i) << 20,
		})
	}
	return n
}

// capturedResponse is an http.ResponseWriter and http.Flusher keeping the body.
type capturedResponse struct {
	header http.Header
	body   bytes.Buffer
}

func (c *capturedResponse) Header() http.Header         { return c.header }
func (c *capturedResponse) Write(p []byte) (int, error) { return c.body.Write(p) }
func (c *capturedResponse) WriteHeader(int)             {}
func (c *capturedResponse) Flush()                      {}

// repeatedStream reads data over and over: an endless watch stream of one event.
type repeatedStream struct {
	data []byte
	off  int
}

func (r *repeatedStream) Read(p []byte) (int, error) {
	n := copy(p, r.data[r.off:])
	r.off = (r.off + n) % len(r.data)
	return n, nil
}

func (r *repeatedStream) Close() error { return nil }

var _ io.ReadCloser = (*repeatedStream)(nil)

// BenchmarkCollectorLeaseEvent is a node's Lease renewal as the garbage collector
// receives it through its watch on every Lease: before, the whole Lease in JSON,
// decoded by client-go's dynamic client into an unstructured map; now, its metadata
// as PartialObjectMetadata in protobuf, decoded by client-go's metadata client. The
// server's encoding and the client's decoding of one event each:
//
//	go test -run '^$' -bench CollectorLeaseEvent -benchmem ./control/apiserver/
func BenchmarkCollectorLeaseEvent(b *testing.B) {
	leases := &Resource{GroupVersion: coordinationv1.SchemeGroupVersion, Plural: "leases", Kind: "Lease", Namespaced: true,
		New: func() runtime.Object { return &coordinationv1.Lease{} }}
	lease := benchLease()
	out := &capturedResponse{header: http.Header{}}
	for _, f := range []struct {
		name       string
		format     responseFormat
		mediaType  string
		serializer runtime.NegotiatedSerializer
	}{
		{"dynamic-json", formatJSON, "application/json", dynamic.ConfigFor(&rest.Config{}).NegotiatedSerializer},
		{"metadata-protobuf", formatMetadataProtobuf, protobufContentType, metadata.ConfigFor(&rest.Config{}).NegotiatedSerializer},
	} {
		enc := newWatchEncoder(out, out, leases, f.format, "", time.Now)
		b.Run("server-encode/"+f.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				out.body.Reset()
				if err := enc.send(watch.Modified, lease); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(out.body.Len()), "wire-bytes")
		})
		b.Run("client-decode/"+f.name, func(b *testing.B) {
			out.body.Reset()
			if err := enc.send(watch.Modified, lease); err != nil {
				b.Fatal(err)
			}
			negotiator := runtime.NewClientNegotiator(f.serializer, schema.GroupVersion{})
			objectDecoder, streamSerializer, framer, err := negotiator.StreamDecoder(f.mediaType, map[string]string{"stream": "watch"})
			if err != nil {
				b.Fatal(err)
			}
			frames := framer.NewFrameReader(&repeatedStream{data: bytes.Clone(out.body.Bytes())})
			events := restclientwatch.NewDecoder(streaming.NewDecoder(frames, streamSerializer), objectDecoder)
			b.ReportAllocs()
			for b.Loop() {
				t, obj, err := events.Decode()
				if err != nil || t != watch.Modified {
					b.Fatalf("decoded %s %T: %v", t, obj, err)
				}
				if acc, err := meta.Accessor(obj); err != nil || acc.GetName() != lease.Name || len(acc.GetOwnerReferences()) != 1 {
					b.Fatalf("decoded %T without the Lease's metadata: %v", obj, err)
				}
			}
		})
	}
}

// benchLease is a node's Lease as plinthd renews it, owned by its Node.
func benchLease() *coordinationv1.Lease {
	now := metav1.NewMicroTime(time.Date(2026, 11, 26, 12, 0, 0, 123456000, time.UTC))
	holder, duration := "worker-0042", int32(40)
	return &coordinationv1.Lease{
		ObjectMeta: metav1.ObjectMeta{Name: "worker-0042", Namespace: "kube-node-lease", UID: "0b7a4e1c-3d2f-4a5b-8c6d-7e8f9a0b1c2d",
			ResourceVersion: "123457", CreationTimestamp: metav1.NewTime(now.Time),
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "v1", Kind: "Node", Name: "worker-0042", UID: "6f1c2a9e-1d1b-4c36-9c1e-0d3b5d0f8a42"}}},
		Spec: coordinationv1.LeaseSpec{HolderIdentity: &holder, LeaseDurationSeconds: &duration, RenewTime: &now},
	}
}
