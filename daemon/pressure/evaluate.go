package pressure

import (
	"time"

	corev1 "k8s.io/api/core/v1"
)

// evaluator holds what one evaluation needs from the ones before it: since when each
// threshold has been crossed (grace periods, minimum reclaim) and when each condition
// last saw a crossing (the pressure transition period). It is owned by one goroutine.
type evaluator struct {
	thresholds []Threshold
	transition time.Duration
	// since[i] is when thresholds[i] was first seen crossed in its current run of
	// crossings; zero when it was not crossed at the last evaluation.
	since []time.Time
	last  map[corev1.NodeConditionType]lastCrossing
}

// lastCrossing is the last evaluation in which a condition had a crossed threshold.
type lastCrossing struct {
	at   time.Time
	what string // the crossings, described
}

func newEvaluator(thresholds []Threshold, transition time.Duration) *evaluator {
	return &evaluator{
		thresholds: thresholds,
		transition: transition,
		since:      make([]time.Time, len(thresholds)),
		last:       map[corev1.NodeConditionType]lastCrossing{},
	}
}

// ThresholdState is one threshold's state after an evaluation.
type ThresholdState struct {
	Threshold
	// Observed is false when the signal had no sample; nothing else is then set.
	Observed bool
	Sample   Sample
	// Target is the threshold resolved against the sample's capacity.
	Target int64
	// Crossed: Sample.Available < Target, or the threshold was crossed before and the
	// available amount has not yet reached Target + MinReclaim (Holding).
	Crossed bool
	Holding bool
	// NewlyCrossed: crossed now and not at the evaluation before.
	NewlyCrossed bool
	// Since is when the current run of crossings began.
	Since time.Time
	// Actionable: crossed and hard, or soft and crossed for its whole grace period;
	// eviction acts only on these.
	Actionable bool
}

// minReclaimTarget is the amount a crossed threshold must be cleared by.
func (r ThresholdState) minReclaimTarget() int64 {
	return r.Target + r.MinReclaim.Resolve(r.Sample.Capacity)
}

// evaluation is the outcome of one evaluation.
type evaluation struct {
	seq        uint64 // order of evaluations; see Manager.startedSeq
	at         time.Time
	trigger    Trigger
	samples    map[Signal]Sample
	results    []ThresholdState
	feeds      []Feed
	conditions []corev1.NodeCondition
	// shape is what makes a change worth telling the node agent about at once: each
	// condition's status and reason, which thresholds are crossed, which feeds work.
	// Values in messages change on every evaluation and are left out.
	shape string
}

// evaluate compares obs with the thresholds at time now. Kubelet's semantics:
//   - a threshold is crossed when the available amount is below it, and stays crossed
//     until the amount reaches threshold + minimum reclaim;
//   - a condition is True while any of its thresholds is crossed, soft ones included
//     from the first crossing, and for the transition period after the last crossing;
//   - eviction acts on hard thresholds at once and on soft ones after they stayed
//     crossed for their grace period; a soft threshold that stops being crossed starts
//     its grace period again the next time.
//
// A threshold whose signal is missing from obs counts as not crossed.
func (e *evaluator) evaluate(now time.Time, obs Observations) evaluation {
	ev := evaluation{at: now, samples: obs.Samples(), feeds: obs.Feeds}
	ev.results = make([]ThresholdState, len(e.thresholds))
	for i, t := range e.thresholds {
		r := ThresholdState{Threshold: t}
		s, ok := ev.samples[t.Signal]
		if ok {
			r.Observed, r.Sample = true, s
			r.Target = t.Value.Resolve(s.Capacity)
			wasCrossed := !e.since[i].IsZero()
			switch {
			case s.Available < r.Target:
				r.Crossed = true
			case wasCrossed && s.Available < r.minReclaimTarget():
				r.Crossed, r.Holding = true, true
			}
			if r.Crossed && !wasCrossed {
				e.since[i], r.NewlyCrossed = now, true
			}
		}
		if !r.Crossed {
			e.since[i] = time.Time{}
		} else {
			r.Since = e.since[i]
			r.Actionable = !t.Soft() || now.Sub(r.Since) >= t.GracePeriod
		}
		ev.results[i] = r
	}
	ev.conditions, ev.shape = e.conditions(now, ev.results, obs.Feeds)
	return ev
}
