package nodelifecycle

import (
	"slices"
	"time"

	v1 "k8s.io/api/core/v1"
)

// zoneInfo is one zone's disruption state and its queue of nodes waiting for a
// NoExecute taint.
type zoneInfo struct {
	state zoneState
	count zoneCount
	// bucket paces the queue; its rate follows state (zoneRate), or 0 while every
	// zone is fully disrupted.
	bucket *tokenBucket
	// queue is FIFO, so nodes are tainted in the order they became due. Entries are
	// checked again when they reach the head: a node that recovered, went away or got
	// its taint some other way leaves without spending a token.
	queue  []string
	queued map[string]bool
}

// zoneLocked returns the zone's record, creating it in the Normal state with a full
// bucket. Callers hold c.mu.
func (c *Controller) zoneLocked(key string, now time.Time) *zoneInfo {
	z, ok := c.zones[key]
	if !ok {
		rate := c.opts.EvictionRate
		if c.allDisrupted {
			rate = 0
		}
		z = &zoneInfo{state: zoneNormal, bucket: newTokenBucket(rate, now), queued: make(map[string]bool)}
		c.zones[key] = z
		c.logger.Info("new zone", "zone", zoneLabel(key))
	}
	return z
}

// updateZonesLocked tallies the nodes' Ready conditions per zone, moves each zone to
// its new disruption state and sets its tainting rate. When every zone with counted
// nodes is in FullDisruption, it stops all tainting (and reconcileTaints removes the
// NoExecute taints); when that ends, every node gets a fresh grace period, because the
// controller could not tell dead nodes from its own isolation while it lasted. Callers
// hold c.mu.
func (c *Controller) updateZonesLocked(nodes []*v1.Node, now time.Time) {
	counts := make(map[string]zoneCount)
	seen := make(map[string]bool)
	for _, node := range nodes {
		key := zoneKey(node)
		seen[key] = true
		if excludedFromDisruption(node) {
			continue
		}
		n := counts[key]
		if readyStatus(node) == v1.ConditionTrue {
			n.ready++
		} else {
			n.notReady++
		}
		counts[key] = n
	}
	for key := range c.zones {
		if !seen[key] {
			delete(c.zones, key)
			c.metrics.forgetZone(zoneLabel(key))
			c.logger.Info("zone has no nodes left", "zone", zoneLabel(key))
		}
	}

	all := len(counts) > 0
	for key := range seen {
		z := c.zoneLocked(key, now)
		n := counts[key]
		state := n.state(c.opts.UnhealthyZoneThreshold)
		if state != z.state {
			c.logger.Info("zone changed state", "zone", zoneLabel(key), "from", z.state, "to", state,
				"ready", n.ready, "not_ready", n.notReady)
		}
		z.state, z.count = state, n
		if n.size() > 0 && state != zoneFullDisruption {
			all = false
		}
		c.metrics.setZone(zoneLabel(key), n)
	}

	switch {
	case all && !c.allDisrupted:
		c.allDisrupted = true
		c.logger.Warn("every zone is fully disrupted: removing NoExecute taints and evicting nothing until a node is Ready again", "zones", len(counts))
	case !all && c.allDisrupted:
		c.allDisrupted = false
		for _, h := range c.nodes {
			h.lastChange = now
			h.unknown = false
		}
		c.logger.Info("no longer every zone fully disrupted: every node gets a fresh grace period", "grace_period", c.opts.GracePeriod)
	}
	for _, z := range c.zones {
		rate := zoneRate(z.state, z.count.size(), c.opts)
		if c.allDisrupted {
			rate = 0
		}
		z.bucket.setRate(rate, now)
	}
}

// enqueueLocked puts a node in its zone's queue unless it is there. Callers hold c.mu.
func (c *Controller) enqueueLocked(node *v1.Node, now time.Time) {
	z := c.zoneLocked(zoneKey(node), now)
	if z.queued[node.Name] {
		return
	}
	z.queued[node.Name] = true
	z.queue = append(z.queue, node.Name)
}

// nextTaintTime is when a queued node can next be tainted: the earliest moment a zone
// with a queue has a token. ok is false when no queue can move.
func (c *Controller) nextTaintTime(now time.Time) (next time.Time, ok bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, z := range c.zones {
		if len(z.queue) == 0 {
			continue
		}
		if t, can := z.bucket.ready(now); can && (!ok || t.Before(next)) {
			next, ok = t, true
		}
	}
	return next, ok
}

// dueNode is a queued node whose zone gave it a token.
type dueNode struct {
	name, zone string
}

// takeDueLocked pops, zone by zone, the queued nodes that still need a NoExecute taint
// and that the zone's bucket lets through now. Nodes that no longer need one leave the
// queue without a token. fresh holds node objects newer than the cache (what a sweep
// has just written); nodes not in it are read from the cache. Callers hold c.mu.
func (c *Controller) takeDueLocked(now time.Time, fresh map[string]*v1.Node) []dueNode {
	var due []dueNode
	keys := make([]string, 0, len(c.zones))
	for k := range c.zones {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, key := range keys {
		z := c.zones[key]
		for len(z.queue) > 0 {
			name := z.queue[0]
			node, err := c.freshNode(name, fresh)
			if err != nil || !c.needsNoExecuteLocked(node, now) {
				z.pop()
				continue
			}
			if !z.bucket.take(now) {
				break
			}
			z.pop()
			due = append(due, dueNode{name: name, zone: key})
		}
	}
	return due
}

// freshNode is the node from fresh, else from the cache.
func (c *Controller) freshNode(name string, fresh map[string]*v1.Node) (*v1.Node, error) {
	if node, ok := fresh[name]; ok {
		return node, nil
	}
	return c.nodeLister.Get(name)
}

func (z *zoneInfo) pop() {
	delete(z.queued, z.queue[0])
	z.queue[0] = ""
	z.queue = z.queue[1:]
}

// needsNoExecuteLocked reports whether the node should be waiting for a NoExecute taint
// it does not have. Callers hold c.mu.
func (c *Controller) needsNoExecuteLocked(node *v1.Node, now time.Time) bool {
	intent, eligible := c.noExecuteIntentLocked(node, now)
	return eligible && intent.key != "" && !hasNoExecute(node, v1.TaintNodeNotReady) && !hasNoExecute(node, v1.TaintNodeUnreachable)
}

// noExecuteIntentLocked is the NoExecute taint the node should carry. eligible is
// whether a node without it may queue for it: a node that says it is not Ready may at
// once, but a node whose Ready is Unknown only once this controller has itself found it
// silent past its grace period — not when a previous instance did (a restart gives
// every node a fresh grace), nor while heartbeats are arriving again. Callers hold c.mu.
func (c *Controller) noExecuteIntentLocked(node *v1.Node, now time.Time) (intent noExecuteIntent, eligible bool) {
	if c.allDisrupted {
		return noExecuteIntent{}, false
	}
	intent.key = noExecuteFor(readyStatus(node))
	switch intent.key {
	case v1.TaintNodeNotReady:
		eligible = true
	case v1.TaintNodeUnreachable:
		h, ok := c.nodes[node.Name]
		eligible = ok && !decide(h, now, c.opts).healthy
	}
	return intent, eligible
}
