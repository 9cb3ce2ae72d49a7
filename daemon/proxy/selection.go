package proxy

import (
	"slices"

	"github.com/plinth/plinth/daemon/proxy/desired"
)

// topologyMode is how topology hints narrow the cluster endpoints.
type topologyMode int

const (
	topologyNone     topologyMode = iota // every usable endpoint
	topologySameZone                     // endpoints hinted for this node's zone
	topologySameNode                     // endpoints hinted for this node
)

// selection is the endpoints one service port may use on this node.
type selection struct {
	// cluster serves traffic under a Cluster policy: ready endpoints narrowed by
	// topology hints, else serving-and-terminating ones. Nil when no policy of the
	// service is Cluster.
	cluster []desired.Endpoint
	// local serves traffic under a Local policy: this node's ready endpoints, else its
	// serving-and-terminating ones. Nil when no policy of the service is Local.
	local []desired.Endpoint
	// hasAny is true when some endpoint anywhere could serve (ready, or serving and
	// terminating): a Local policy without local endpoints then drops, not rejects.
	hasAny bool
}

// selectEndpoints decides, as kube-proxy does, which endpoints this node uses.
// usesCluster and usesLocal say whether some traffic of the service follows a Cluster
// or a Local policy; zone is this node's topology.kubernetes.io/zone label.
//
// Terminating endpoints are used only when no ready one remains (for cluster traffic:
// none anywhere; for local traffic: none on this node). Topology hints apply only to
// cluster traffic, and only when every ready endpoint carries a hint of the kind and at
// least one names this node (PreferSameNode) or its zone (PreferSameZone, PreferClose);
// otherwise every ready endpoint is used.
func selectEndpoints(cands []candidate, usesCluster, usesLocal bool, nodeName, zone string) selection {
	var s selection
	if len(cands) == 0 {
		return s
	}
	if usesCluster {
		mode := topologyFromHints(cands, nodeName, zone)
		s.cluster = filterEndpoints(cands, func(c candidate) bool { return c.Ready && availableFor(c, mode, nodeName, zone) })
		if len(s.cluster) == 0 {
			// A mode is chosen only when it keeps some ready endpoint, so an empty list
			// here means no endpoint anywhere is ready.
			s.cluster = filterEndpoints(cands, func(c candidate) bool { return c.Serving && c.Terminating })
		}
		s.hasAny = len(s.cluster) > 0
	}
	if !usesLocal {
		return s
	}
	var localReady, localServingTerminating bool
	for _, c := range cands {
		switch {
		case c.Ready:
			s.hasAny = true
			localReady = localReady || c.IsLocal
		case c.Serving && c.Terminating:
			s.hasAny = true
			localServingTerminating = localServingTerminating || c.IsLocal
		}
	}
	switch {
	case localReady:
		s.local = filterEndpoints(cands, func(c candidate) bool { return c.IsLocal && c.Ready })
	case localServingTerminating:
		s.local = filterEndpoints(cands, func(c candidate) bool { return c.IsLocal && c.Serving && c.Terminating })
	default:
		s.local = []desired.Endpoint{}
	}
	return s
}

// topologyFromHints picks the narrowest mode the hints of the ready endpoints allow.
func topologyFromHints(cands []candidate, nodeName, zone string) topologyMode {
	anyReady := false
	allNodeHinted, forThisNode := true, false
	allZoneHinted, forThisZone := true, false
	for _, c := range cands {
		if !c.Ready {
			continue
		}
		anyReady = true
		if len(c.nodeHints) == 0 {
			allNodeHinted = false
		} else if slices.Contains(c.nodeHints, nodeName) {
			forThisNode = true
		}
		if len(c.zoneHints) == 0 {
			allZoneHinted = false
		} else if zone != "" && slices.Contains(c.zoneHints, zone) {
			forThisZone = true
		}
	}
	switch {
	case !anyReady:
		return topologyNone
	case allNodeHinted && forThisNode:
		return topologySameNode
	case allZoneHinted && forThisZone:
		return topologySameZone
	}
	return topologyNone
}

func availableFor(c candidate, mode topologyMode, nodeName, zone string) bool {
	switch mode {
	case topologySameNode:
		return slices.Contains(c.nodeHints, nodeName)
	case topologySameZone:
		return slices.Contains(c.zoneHints, zone)
	}
	return true
}

// filterEndpoints keeps the candidates keep accepts; the result is never nil, so
// "selected nothing" and "not asked" (nil) stay distinguishable.
func filterEndpoints(cands []candidate, keep func(candidate) bool) []desired.Endpoint {
	out := []desired.Endpoint{}
	for _, c := range cands {
		if keep(c) {
			out = append(out, c.Endpoint)
		}
	}
	return out
}
