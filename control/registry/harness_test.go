package registry_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/version"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/plinth/plinth/control/apiserver"
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
// loopback, with the default namespaces created; cfg's Store is filled in.
func newAPI(t *testing.T, cfg registry.Config) apiHarness {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	etcd, err := storage.StartEmbedded(ctx, t.TempDir(), 20*time.Second, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(etcd.Close)
	store := storage.New(etcd.Client, "/registry")
	cfg.Store = store
	resources, err := registry.Resources(cfg)
	if err != nil {
		t.Fatal(err)
	}
	reg, err := apiserver.NewRegistry(resources...)
	if err != nil {
		t.Fatal(err)
	}
	srv, err := apiserver.New(apiserver.Config{
		Store: store, Registry: reg, Version: version.Info{GitVersion: "v1.33.0-plinth"},
		Authenticators: []apiserver.Authenticator{admin{}},
		Admitters:      []apiserver.Admitter{registry.NamespaceDeletionGuard{}},
	})
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(srv)
	t.Cleanup(hs.Close)
	client, err := kubernetes.NewForConfig(&rest.Config{Host: hs.URL})
	if err != nil {
		t.Fatal(err)
	}
	if err := registry.EnsureDefaultNamespaces(ctx, client.CoreV1()); err != nil {
		t.Fatal(err)
	}
	return apiHarness{url: hs.URL, client: client, store: store}
}

// admin authenticates every request as an administrator: authentication has its own
// tests in control/apiserver.
type admin struct{}

func (admin) Authenticate(*http.Request) (apiserver.User, bool, error) {
	return apiserver.User{Name: "test-admin", Groups: []string{"system:masters"}}, true, nil
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
