package plinthd

import (
	"github.com/plinth/plinth/controlclient/nodeclient"
	"github.com/plinth/plinth/daemon/proxy"
)

// proxyLabelSelector keeps what kube-proxy ignores out of the watches: Services handled
// by another proxy (service.kubernetes.io/service-proxy-name) and headless Services'
// slices (service.kubernetes.io/headless).
const proxyLabelSelector = "!service.kubernetes.io/service-proxy-name,!service.kubernetes.io/headless"

// proxySources builds the proxy's ListerWatchers from plinthd's API client.
func proxySources(client nodeclient.Interface, nodeName string) proxy.Sources {
	return proxy.Sources{
		Services:       nodeclient.ServicesListerWatcher(client, proxyLabelSelector),
		EndpointSlices: nodeclient.EndpointSlicesListerWatcher(client, proxyLabelSelector),
		Node:           nodeclient.NodeListerWatcher(client, nodeName),
	}
}
