package nodelifecycle

import (
	"strings"

	v1 "k8s.io/api/core/v1"
)

// labelExcludeDisruption marks a node that does not count toward its zone's health (a
// node expected to come and go, such as a control-plane machine being replaced). It is
// still tainted like any other node.
const labelExcludeDisruption = "node.kubernetes.io/exclude-disruption"

// zoneKeySeparator joins region and zone in a zone key, as the Kubernetes node
// controller does; a NUL cannot appear in a label value, so keys never collide.
const zoneKeySeparator = ":\x00:"

// zoneKey is the zone a node belongs to for disruption accounting: its region and zone
// labels. Nodes with neither share the zone "".
func zoneKey(node *v1.Node) string {
	region := node.Labels[v1.LabelTopologyRegion]
	zone := node.Labels[v1.LabelTopologyZone]
	if region == "" && zone == "" {
		return ""
	}
	return region + zoneKeySeparator + zone
}

// zoneLabel is a zone key as it appears in metrics and logs: region:zone, without the NUL
// that would make the text exposition awkward to read.
func zoneLabel(key string) string {
	return strings.Replace(key, zoneKeySeparator, ":", 1)
}

// excludedFromDisruption reports whether a node is left out of zone health.
func excludedFromDisruption(node *v1.Node) bool {
	_, ok := node.Labels[labelExcludeDisruption]
	return ok
}

// zoneState is a zone's disruption state, which picks how fast its nodes are tainted.
type zoneState int

const (
	// zoneNormal: few nodes are down; taint at EvictionRate.
	zoneNormal zoneState = iota
	// zonePartialDisruption: many nodes are down at once, which looks more like a
	// network problem than dead machines; slow down (large zones) or stop (small ones).
	zonePartialDisruption
	// zoneFullDisruption: no node of the zone is Ready. Alone it is taken as a dead zone
	// and tainted at EvictionRate; when every zone is in it, nothing is evicted.
	zoneFullDisruption
)

func (s zoneState) String() string {
	switch s {
	case zoneNormal:
		return "Normal"
	case zonePartialDisruption:
		return "PartialDisruption"
	case zoneFullDisruption:
		return "FullDisruption"
	}
	return "Unknown"
}

// zoneCount is the Ready tally of one zone's counted nodes.
type zoneCount struct {
	ready, notReady int
}

func (c zoneCount) size() int { return c.ready + c.notReady }

// state decides a zone's disruption state from its tally. A node without a Ready
// condition, or with one that is not True, is not Ready.
func (c zoneCount) state(threshold float64) zoneState {
	switch {
	case c.ready == 0 && c.notReady > 0:
		return zoneFullDisruption
	case c.notReady > 2 && float64(c.notReady)/float64(c.size()) >= threshold:
		return zonePartialDisruption
	default:
		return zoneNormal
	}
}

// healthPercent is the share of Ready nodes, 100 for an empty zone.
func (c zoneCount) healthPercent() float64 {
	if c.size() == 0 {
		return 100
	}
	return 100 * float64(c.ready) / float64(c.size())
}

// zoneRate is the tainting rate of a zone in state s with size counted nodes.
func zoneRate(s zoneState, size int, opts Options) float64 {
	if s == zonePartialDisruption {
		if size > opts.LargeClusterSizeThreshold {
			return opts.SecondaryEvictionRate
		}
		return 0
	}
	return opts.EvictionRate
}

// readyStatus is the status of the node's Ready condition, "" when it has none.
func readyStatus(node *v1.Node) v1.ConditionStatus {
	if i := conditionIndex(node.Status.Conditions, v1.NodeReady); i >= 0 {
		return node.Status.Conditions[i].Status
	}
	return ""
}
