package nodeclient

import (
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// NewScheme returns a scheme holding only the API groups plinthd speaks: core/v1
// (Nodes, Pods, Services, Events), coordination/v1 (Leases), policy/v1 (the Eviction
// posted to pods/eviction) and discovery/v1 (EndpointSlices), plus the unversioned
// meta types (options, Status, WatchEvent) every request and watch needs.
func NewScheme() (*runtime.Scheme, error) {
	s := runtime.NewScheme()
	// What client-go's scheme registers first: ListOptions and friends as query
	// parameters, Status for errors, WatchEvent for watch streams.
	metav1.AddToGroupVersion(s, schema.GroupVersion{Version: "v1"})
	for _, add := range []func(*runtime.Scheme) error{
		corev1.AddToScheme,
		coordinationv1.AddToScheme,
		policyv1.AddToScheme,
		discoveryv1.AddToScheme,
	} {
		if err := add(s); err != nil {
			return nil, err
		}
	}
	return s, nil
}
