package registry_test

import (
	"context"
	"encoding/json"
	"strconv"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/plinth/plinth/control/ipalloc"
	"github.com/plinth/plinth/control/registry"
)

func TestRepairServiceClaims(t *testing.T) {
	cfg := registry.Config{ServiceClusterIPRange: mustPrefix("10.0.0.0/24"), ServiceNodePortRange: mustPorts(t, "30000-30099")}
	api := newAPI(t, cfg)
	cfg.Store = api.store
	ctx := context.Background()
	svcs := api.client.CoreV1().Services("default")
	s, err := svcs.Create(ctx, &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: "web"},
		Spec:       corev1.ServiceSpec{Type: corev1.ServiceTypeNodePort, Ports: []corev1.ServicePort{{Port: 80}}},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	claim := func(key string, o ipalloc.Owner) {
		data, _ := json.Marshal(o)
		if _, err := api.store.Create(ctx, key, data); err != nil {
			t.Fatal(err)
		}
	}
	// A leak from a write that failed long ago, and one from a write still in flight, at
	// an address and a port the service was not given at random (a planted claim on the
	// service's own would make the test fail by chance).
	leakedIP, leakedPort := "10.0.0.77", "30077"
	if s.Spec.ClusterIP == leakedIP {
		leakedIP = "10.0.0.78"
	}
	if itoa(s.Spec.Ports[0].NodePort) == leakedPort {
		leakedPort = "30078"
	}
	claim(ipalloc.ServiceIPPrefix+leakedIP, ipalloc.Owner{Namespace: "default", Name: "gone", UID: "u-gone", Claimed: time.Now().Add(-time.Hour)})
	claim(ipalloc.NodePortPrefix+leakedPort, ipalloc.Owner{Namespace: "default", Name: "new", UID: "u-new", Claimed: time.Now()})
	// The service's own cluster IP claim went missing.
	if _, err := api.store.Delete(ctx, ipalloc.ServiceIPPrefix+s.Spec.ClusterIP, 0); err != nil {
		t.Fatal(err)
	}

	list, err := svcs.List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	rep, err := registry.RepairServiceClaims(ctx, cfg, list.Items, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if rep.Released != 1 || rep.Reclaimed != 1 || len(rep.Conflicts) != 0 {
		t.Fatalf("repair: %+v; want the old leak released and the missing claim made again", rep)
	}
	for key, want := range map[string]bool{
		ipalloc.ServiceIPPrefix + leakedIP:                      false,
		ipalloc.NodePortPrefix + leakedPort:                     true, // too young to tell
		ipalloc.ServiceIPPrefix + s.Spec.ClusterIP:              true,
		ipalloc.NodePortPrefix + itoa(s.Spec.Ports[0].NodePort): true,
	} {
		_, err := api.store.Get(ctx, key)
		if (err == nil) != want {
			t.Errorf("claim %s present=%v after repair, want %v", key, err == nil, want)
		}
	}
	// Nothing left to do: a second run changes nothing.
	if rep, err := registry.RepairServiceClaims(ctx, cfg, list.Items, time.Minute); err != nil || rep.Released+rep.Reclaimed != 0 {
		t.Fatalf("second repair: %+v, %v", rep, err)
	}
	// Another service holding the same address is reported, not silently fixed.
	twin := list.Items[0].DeepCopy()
	twin.Name, twin.UID = "twin", "u-twin"
	rep, err = registry.RepairServiceClaims(ctx, cfg, append(list.Items, *twin), time.Minute)
	if err != nil || len(rep.Conflicts) != 2 {
		t.Fatalf("repair with a duplicate: %+v, %v; want the address and the node port reported", rep, err)
	}
}

func itoa(n int32) string { return strconv.Itoa(int(n)) }
