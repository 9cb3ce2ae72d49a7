// Package endpointslice is plinth-control's EndpointSlice controller: for every Service
// with a selector it keeps discovery.k8s.io/v1 EndpointSlices listing the addresses of
// the pods the selector matches, so node proxies know where to send the Service's
// traffic.
//
// Each pod with an IP of the slice's family and a node the cache knows becomes one
// endpoint with the conditions kube-controller-manager gives it: ready (the pod is
// Ready and not terminating, or the Service publishes not-ready addresses), serving
// (the pod is Ready, terminating or not) and terminating (it has a deletionTimestamp);
// its nodeName, its node's topology.kubernetes.io/zone, a targetRef to the pod, and
// hints when the Service asks for a trafficDistribution (PreferSameZone and PreferClose:
// forZones is the endpoint's own zone; PreferSameNode: forNodes is its node, plus
// forZones). Pods of a node that went silent drop out of ready because the node
// lifecycle controller sets their Ready condition to False. Ports come from the
// Service's targetPort: a number as is, a name looked up among the pod's container
// ports, so pods that resolve a name differently land in different slices.
//
// Slices hold at most MaxEndpointsPerSlice endpoints (100, as kube-controller-manager's
// --max-endpoints-per-slice). A sync compares what the pods say with the slices the
// cache holds and writes as few slices as it can: endpoints stay in the slice they are
// in, new ones go first into slices that are written anyway, then into the fullest
// slice that takes all of them, and only then into new slices, which reuse slices that
// would otherwise be deleted. An unchanged Service and pod set writes nothing. A Service
// with no endpoints keeps one empty slice, as in Kubernetes.
//
// It owns the EndpointSlices labelled endpointslice.kubernetes.io/managed-by with
// ManagedBy; each has the kubernetes.io/service-name label and a controller owner
// reference to its Service, so the garbage collector removes them with the Service (the
// controller also deletes them itself when the Service is gone or loses its selector).
// Slices of Services without selectors, or managed by anyone else, are never touched.
// It reads Services, Pods, Nodes and EndpointSlices through the informers it is given,
// writes only its EndpointSlices, and records FailedToUpdateEndpointSlices events on
// Services whose sync fails. It remembers in memory the generation of every slice it
// wrote, so a sync never acts on a cache that has not yet seen its own writes.
//
// The decisions are pure functions — desiredEndpoints (what the pods say) and
// planSlices (which slices to create, update and delete) — tested with tables.
package endpointslice
