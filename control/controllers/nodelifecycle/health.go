package nodelifecycle

import (
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	v1 "k8s.io/api/core/v1"
)

// readyReading is the Ready condition's heartbeat as the node posted it. The time is the
// node's own clock: it is compared for change only, never for age.
type readyReading struct {
	// posted is whether the node itself has a Ready condition. One this controller added
	// as NodeStatusNeverUpdated is not the node's, so it does not count.
	posted    bool
	heartbeat time.Time
}

// readReady takes the Ready heartbeat reading from a node object.
func readReady(node *v1.Node) readyReading {
	for i := range node.Status.Conditions {
		c := &node.Status.Conditions[i]
		if c.Type != v1.NodeReady {
			continue
		}
		if c.Reason == reasonNeverUpdated {
			return readyReading{}
		}
		return readyReading{posted: true, heartbeat: c.LastHeartbeatTime.Time}
	}
	return readyReading{}
}

// readLeaseRenew returns the Lease's spec.renewTime, zero when there is no Lease or it
// has never been renewed. Like readReady's time it is the node's clock.
func readLeaseRenew(lease *coordinationv1.Lease) time.Time {
	if lease == nil || lease.Spec.RenewTime == nil {
		return time.Time{}
	}
	return lease.Spec.RenewTime.Time
}

// nodeHealth is the controller's record of one node's liveness. firstSeen and lastChange
// are the controller's clock; ready and leaseRenew are the node's, kept only to notice
// when they change.
type nodeHealth struct {
	firstSeen time.Time
	// lastChange is when the controller last saw either heartbeat change, or firstSeen
	// until it has seen one: a node met for the first time gets a whole grace period.
	lastChange time.Time
	// everPostedReady picks the grace period: a node that has never posted Ready is
	// still starting and gets StartupGracePeriod.
	everPostedReady bool
	ready           readyReading
	leaseRenew      time.Time
	// unknown is whether the controller has decided the node is silent past its grace.
	// It is cleared by the next observed heartbeat. Deadlines are only armed for nodes
	// not yet decided, so a node whose Unknown write failed is retried by the periodic
	// sweep instead of in a tight loop.
	unknown bool
}

// newNodeHealth starts a record from the first readings. The first readings are a
// baseline, not a heartbeat: nothing is known about how old they are.
func newNodeHealth(ready readyReading, leaseRenew, now time.Time) *nodeHealth {
	return &nodeHealth{
		firstSeen:       now,
		lastChange:      now,
		everPostedReady: ready.posted,
		ready:           ready,
		leaseRenew:      leaseRenew,
	}
}

// observation says what one reading did to a record.
type observation struct {
	// heartbeat: a heartbeat changed, so lastChange moved to now.
	heartbeat bool
	// recovered: the heartbeat came from a node that had been decided Unknown.
	recovered bool
}

// observeReady records a reading of the Ready condition. A heartbeat is the node posting
// Ready for the first time or posting a different lastHeartbeatTime; the condition going
// away is not a sign of life.
func (h *nodeHealth) observeReady(r readyReading, now time.Time) observation {
	changed := r.posted && (!h.ready.posted || !r.heartbeat.Equal(h.ready.heartbeat))
	h.ready = r
	if r.posted {
		h.everPostedReady = true
	}
	return h.stamp(changed, now)
}

// observeLease records a reading of the Lease's renewTime. A heartbeat is a renewTime
// different from the last one seen; a Lease that disappears is not a sign of life.
func (h *nodeHealth) observeLease(renew, now time.Time) observation {
	changed := !renew.IsZero() && !renew.Equal(h.leaseRenew)
	h.leaseRenew = renew
	return h.stamp(changed, now)
}

func (h *nodeHealth) stamp(changed bool, now time.Time) observation {
	if !changed {
		return observation{}
	}
	// Both signals arrive through separate informers; never let a late reading move
	// lastChange backwards.
	if now.After(h.lastChange) {
		h.lastChange = now
	}
	o := observation{heartbeat: true, recovered: h.unknown}
	h.unknown = false
	return o
}

// gracePeriod is the silence allowed to this node.
func (h *nodeHealth) gracePeriod(opts Options) time.Duration {
	if h.everPostedReady {
		return opts.GracePeriod
	}
	return opts.StartupGracePeriod
}

// deadline is when the node's grace runs out unless a heartbeat is seen first.
func (h *nodeHealth) deadline(opts Options) time.Time {
	return h.lastChange.Add(h.gracePeriod(opts))
}

// verdict is the decision about one node at one moment.
type verdict struct {
	healthy  bool
	grace    time.Duration
	silent   time.Duration // since the last observed heartbeat, or since first sight
	deadline time.Time
}

// decide is the health decision: a node is healthy until no heartbeat has been observed
// for its whole grace period; at the deadline itself it is not.
func decide(h *nodeHealth, now time.Time, opts Options) verdict {
	d := h.deadline(opts)
	return verdict{
		healthy:  now.Before(d),
		grace:    h.gracePeriod(opts),
		silent:   now.Sub(h.lastChange),
		deadline: d,
	}
}

// earliestDeadline is the next moment a decision may change without a new reading: the
// earliest deadline of the nodes not yet decided Unknown. ok is false when there is none.
// The deadline may already have passed if a node went silent after the last sweep.
func earliestDeadline(records map[string]*nodeHealth, opts Options) (next time.Time, ok bool) {
	for _, h := range records {
		if h.unknown {
			continue
		}
		if d := h.deadline(opts); !ok || d.Before(next) {
			next, ok = d, true
		}
	}
	return next, ok
}
