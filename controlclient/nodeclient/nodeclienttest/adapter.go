// Package nodeclienttest hands a client-go clientset to code that takes a
// nodeclient.Interface: in tests usually k8s.io/client-go/kubernetes/fake, with its
// reactors and recorded actions. Only tests may import it, because it links the
// clientset that plinthd is kept free of.
//
// It owns nothing; every call goes to the clientset it wraps.
package nodeclienttest

import (
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/util/watchlist"

	"github.com/plinth/plinth/controlclient/nodeclient"
)

// FromClientset returns cs as a nodeclient.Interface.
func FromClientset(cs kubernetes.Interface) nodeclient.Interface { return clientset{cs} }

type clientset struct{ cs kubernetes.Interface }

func (c clientset) Nodes() nodeclient.NodeClient { return c.cs.CoreV1().Nodes() }

func (c clientset) Leases(namespace string) nodeclient.LeaseClient {
	return c.cs.CoordinationV1().Leases(namespace)
}

func (c clientset) Pods(namespace string) nodeclient.PodClient { return c.cs.CoreV1().Pods(namespace) }

func (c clientset) Evictions(namespace string) nodeclient.EvictionClient {
	return c.cs.PolicyV1().Evictions(namespace)
}

func (c clientset) Events(namespace string) nodeclient.EventClient {
	return c.cs.CoreV1().Events(namespace)
}

func (c clientset) Services(namespace string) nodeclient.ServiceClient {
	return c.cs.CoreV1().Services(namespace)
}

func (c clientset) EndpointSlices(namespace string) nodeclient.EndpointSliceClient {
	return c.cs.DiscoveryV1().EndpointSlices(namespace)
}

func (c clientset) Secrets(namespace string) nodeclient.SecretClient {
	return c.cs.CoreV1().Secrets(namespace)
}

func (c clientset) ConfigMaps(namespace string) nodeclient.ConfigMapClient {
	return c.cs.CoreV1().ConfigMaps(namespace)
}

// IsWatchListSemanticsUnSupported passes on the clientset's answer, so that
// nodeclient's ListerWatchers tell a reflector over a fake clientset (which cannot
// stream watch lists) to list and then watch.
func (c clientset) IsWatchListSemanticsUnSupported() bool {
	return watchlist.DoesClientNotSupportWatchListSemantics(c.cs)
}
