package registry_test

import (
	"net/netip"
	"testing"

	"k8s.io/client-go/kubernetes"

	"github.com/plinth/plinth/control/apiserver"
	"github.com/plinth/plinth/control/apiserver/apitest"
	"github.com/plinth/plinth/control/ipalloc"
	"github.com/plinth/plinth/control/registry"
	"github.com/plinth/plinth/control/storage"
)

type apiHarness struct {
	url    string
	client kubernetes.Interface
	store  *storage.Store
}

// newAPI serves every registry resource from a real embedded etcd over plain HTTP on
// loopback, with the default namespaces created and built-in namespaces protected.
func newAPI(t *testing.T, cfg registry.Config) apiHarness {
	t.Helper()
	s := apitest.Start(t, apitest.Options{Registry: cfg, Admitters: []apiserver.Admitter{registry.NamespaceDeletionGuard{}}})
	return apiHarness{url: s.URL, client: s.Client, store: s.Store}
}

func mustPrefix(s string) netip.Prefix { return netip.MustParsePrefix(s) }

func mustPorts(t *testing.T, s string) ipalloc.PortRange {
	t.Helper()
	r, err := ipalloc.ParsePortRange(s)
	if err != nil {
		t.Fatal(err)
	}
	return r
}
