// Package apitest serves the control service's API for other packages' tests: a real
// embedded etcd in a temporary directory, the generic API server with the registry's
// resources, plain HTTP on loopback, and every request authenticated as an
// administrator (authentication and authorization have their own tests), unless the
// test gives its own authenticators and authorizer.
//
// It owns the etcd and the HTTP server it starts and stops both in t.Cleanup.
package apitest

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/version"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/plinth/plinth/control/apiserver"
	"github.com/plinth/plinth/control/registry"
	"github.com/plinth/plinth/control/storage"
)

// Options change what Start serves. The zero value serves every registry resource with
// the default namespaces created.
type Options struct {
	// Registry configures the resources; its Store is filled in.
	Registry registry.Config
	// Resources, when set, replaces the registry's resources.
	Resources func(store *storage.Store) ([]*apiserver.Resource, error)
	// Admitters check writes, as in the control service.
	Admitters []apiserver.Admitter
	// BookmarkInterval for watches; 0 means 200 ms, so informers sync quickly.
	BookmarkInterval time.Duration
	// SkipDefaultNamespaces leaves the namespaces out (for resources without them).
	SkipDefaultNamespaces bool
	// Authenticators replace the default, which makes every request an administrator's.
	Authenticators []apiserver.Authenticator
	// Authorizer decides requests; nil allows everything. Bind, when set, runs once the
	// server exists and before it serves, as the control service binds its authorizer
	// and admission to the stored pods.
	Authorizer apiserver.Authorizer
	Bind       func(api *apiserver.Server, reg *apiserver.Registry)
	// Inflight caps the requests served at once; the zero value limits nothing.
	Inflight apiserver.InflightLimits
	// ObjectCacheBytes is the API's setting: 0 the default, negative off.
	ObjectCacheBytes int64
}

// Server is a running API.
type Server struct {
	URL    string
	Config *rest.Config // a fresh copy per call of RESTConfig is safer to modify
	Client kubernetes.Interface
	Store  *storage.Store
}

// RESTConfig returns a copy of the client configuration, without client-side rate limits.
func (s *Server) RESTConfig() *rest.Config { return rest.CopyConfig(s.Config) }

// admin authenticates every request as an administrator.
type admin struct{}

func (admin) Authenticate(*http.Request) (apiserver.User, bool, error) {
	return apiserver.User{Name: "test-admin", Groups: []string{"system:masters"}}, true, nil
}

// Start serves the API until the test ends.
func Start(t testing.TB, opts Options) *Server {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	etcd, err := storage.StartEmbedded(ctx, t.TempDir(), 20*time.Second, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(etcd.Close)
	store := storage.New(etcd.Client, "/registry")
	var resources []*apiserver.Resource
	if opts.Resources != nil {
		resources, err = opts.Resources(store)
	} else {
		opts.Registry.Store = store
		resources, err = registry.Resources(opts.Registry)
	}
	if err != nil {
		t.Fatal(err)
	}
	reg, err := apiserver.NewRegistry(resources...)
	if err != nil {
		t.Fatal(err)
	}
	if opts.BookmarkInterval == 0 {
		opts.BookmarkInterval = 200 * time.Millisecond
	}
	authenticators := opts.Authenticators
	if authenticators == nil {
		authenticators = []apiserver.Authenticator{admin{}}
	}
	srv, err := apiserver.New(apiserver.Config{
		Store: store, Registry: reg, Version: version.Info{GitVersion: "v1.33.0-plinth"},
		BookmarkInterval: opts.BookmarkInterval, OpenAPI: true,
		Authenticators: authenticators, Authorizer: opts.Authorizer, Admitters: opts.Admitters,
		Inflight: opts.Inflight, ObjectCacheBytes: opts.ObjectCacheBytes,
	})
	if err != nil {
		t.Fatal(err)
	}
	if opts.Bind != nil {
		opts.Bind(srv, reg)
	}
	hs := httptest.NewServer(srv)
	t.Cleanup(hs.Close)
	cfg := &rest.Config{Host: hs.URL, QPS: -1}
	client, err := kubernetes.NewForConfig(rest.CopyConfig(cfg))
	if err != nil {
		t.Fatal(err)
	}
	if opts.Resources == nil && !opts.SkipDefaultNamespaces {
		if err := registry.EnsureDefaultNamespaces(ctx, client.CoreV1()); err != nil {
			t.Fatal(err)
		}
	}
	return &Server{URL: hs.URL, Config: cfg, Client: client, Store: store}
}
