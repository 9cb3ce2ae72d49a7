package plinthd

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"

	"github.com/plinth/plinth/daemon/proxy"
)

// proxyLabelSelector keeps what kube-proxy ignores out of the watches: Services handled
// by another proxy (service.kubernetes.io/service-proxy-name) and headless Services'
// slices (service.kubernetes.io/headless).
const proxyLabelSelector = "!service.kubernetes.io/service-proxy-name,!service.kubernetes.io/headless"

// proxySources builds the proxy's ListerWatchers from the client plinthd has. This is
// the one place to change when plinthd's client changes.
func proxySources(client kubernetes.Interface, nodeName string) proxy.Sources {
	withLabels := func(o *metav1.ListOptions) { o.LabelSelector = proxyLabelSelector }
	thisNode := func(o *metav1.ListOptions) {
		o.FieldSelector = fields.OneTermEqualSelector("metadata.name", nodeName).String()
	}
	return proxy.Sources{
		Services: cache.NewFilteredListWatchFromClient(client.CoreV1().RESTClient(), "services", metav1.NamespaceAll, withLabels),
		EndpointSlices: cache.NewFilteredListWatchFromClient(client.DiscoveryV1().RESTClient(), "endpointslices",
			metav1.NamespaceAll, withLabels),
		Node: cache.NewFilteredListWatchFromClient(client.CoreV1().RESTClient(), "nodes", metav1.NamespaceAll, thisNode),
	}
}
