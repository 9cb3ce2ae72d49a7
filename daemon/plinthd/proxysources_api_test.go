package plinthd

import (
	"context"
	"net/netip"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/plinth/plinth/control/apiserver/apitest"
	"github.com/plinth/plinth/controlclient/nodeclient"
	"github.com/plinth/plinth/daemon/proxy"
	"github.com/plinth/plinth/daemon/proxy/desired"
	"github.com/plinth/plinth/kernel/conntrack"
)

// snapshotRecorder keeps every Snapshot a sync hands it.
type snapshotRecorder struct{ snaps chan *desired.Snapshot }

func (r snapshotRecorder) Sync(_ context.Context, s *desired.Snapshot, _ desired.Changes) error {
	select {
	case r.snaps <- s:
	default: // the test only needs the latest ones
	}
	return nil
}

type noConntrack struct{}

func (noConntrack) DeleteUDP(context.Context, []conntrack.Match) (int, error) { return 0, nil }

// TestProxySourcesAgainstTheAPI runs the proxy over the ListerWatchers plinthd builds,
// against the real API: it must see this node's addresses, a Service and its slice,
// and nothing that belongs to another proxy.
func TestProxySourcesAgainstTheAPI(t *testing.T) {
	api := apitest.Start(t, apitest.Options{})
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	c := api.Client
	mustCreate := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	for _, name := range []string{"node-a", "node-b"} {
		n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}}
		_, err := c.CoreV1().Nodes().Create(ctx, n, metav1.CreateOptions{})
		mustCreate(err)
		n.Status.Addresses = []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: map[string]string{"node-a": "192.0.2.1", "node-b": "192.0.2.2"}[name]}}
		_, err = c.CoreV1().Nodes().UpdateStatus(ctx, n, metav1.UpdateOptions{})
		mustCreate(err)
	}
	port := []corev1.ServicePort{{Name: "http", Port: 80, Protocol: corev1.ProtocolTCP}}
	_, err := c.CoreV1().Services("default").Create(ctx, &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: "web"}, Spec: corev1.ServiceSpec{Ports: port}}, metav1.CreateOptions{})
	mustCreate(err)
	_, err = c.CoreV1().Services("default").Create(ctx, &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: "other", Labels: map[string]string{"service.kubernetes.io/service-proxy-name": "elsewhere"}},
		Spec:       corev1.ServiceSpec{Ports: port}}, metav1.CreateOptions{})
	mustCreate(err)
	name, proto, num := "http", corev1.ProtocolTCP, int32(8080)
	_, err = c.DiscoveryV1().EndpointSlices("default").Create(ctx, &discoveryv1.EndpointSlice{
		ObjectMeta:  metav1.ObjectMeta{Name: "web-1", Labels: map[string]string{discoveryv1.LabelServiceName: "web"}},
		AddressType: discoveryv1.AddressTypeIPv4,
		Ports:       []discoveryv1.EndpointPort{{Name: &name, Protocol: &proto, Port: &num}},
		Endpoints:   []discoveryv1.Endpoint{{Addresses: []string{"10.244.0.7"}}},
	}, metav1.CreateOptions{})
	mustCreate(err)

	nc, err := nodeclient.New(api.RESTConfig())
	if err != nil {
		t.Fatal(err)
	}
	rec := snapshotRecorder{snaps: make(chan *desired.Snapshot, 64)}
	p, err := proxy.New(proxy.Config{
		NodeName: "node-a", Sources: proxySources(nc, "node-a"), Syncer: rec, Conntrack: noConntrack{},
		MinSyncPeriod: 10 * time.Millisecond, SyncPeriod: time.Minute,
	})
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- p.Run(ctx) }()
	defer func() {
		cancel()
		<-done
	}()
	web := desired.ServicePortName{Namespace: "default", Name: "web", Port: "http", Protocol: desired.TCP}
	for {
		var s *desired.Snapshot
		select {
		case s = <-rec.snaps:
		case <-ctx.Done():
			t.Fatal("no snapshot with the Service, its endpoint and this node's address within 60 s")
		}
		ports := s.Services[web]
		if len(ports) != 1 || len(ports[0].ClusterEndpoints) != 1 || !slices.Equal(s.NodeIPs, []netip.Addr{netip.MustParseAddr("192.0.2.1")}) {
			continue
		}
		if ports[0].ClusterEndpoints[0].Addr != netip.MustParseAddr("10.244.0.7") || !ports[0].ClusterIP.IsValid() {
			t.Fatalf("web = %+v", ports[0])
		}
		for n := range s.Services {
			if n.Name == "other" {
				t.Fatalf("a Service of another proxy reached the snapshot: %v", n)
			}
		}
		return
	}
}
