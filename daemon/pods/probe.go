package pods

import (
	"time"

	corev1 "k8s.io/api/core/v1"
)

// ProbeKind says which of a container's probes a tracker follows.
type ProbeKind int

const (
	StartupProbe ProbeKind = iota + 1
	LivenessProbe
	ReadinessProbe
)

func (k ProbeKind) String() string {
	switch k {
	case StartupProbe:
		return "startup"
	case LivenessProbe:
		return "liveness"
	case ReadinessProbe:
		return "readiness"
	}
	return "unknown"
}

// Probe defaults from the Probe API.
const (
	defaultPeriod           = 10 * time.Second
	defaultProbeTimeout     = time.Second
	defaultFailureThreshold = 3
	defaultSuccessThreshold = 1
)

// ProbeTracker applies one probe's timing and thresholds to its results for one run
// of a container: when to probe next, and the verdict. Readiness starts failed,
// liveness passed, startup failed (the container is not started until it succeeds).
type ProbeTracker struct {
	Kind                        ProbeKind
	period, timeout             time.Duration
	successThreshold, failThres int
	next                        time.Time
	successes, failures         int
	verdict                     bool
	finished                    bool
}

// NewProbeTracker follows p for a run that started at started.
func NewProbeTracker(kind ProbeKind, p *corev1.Probe, started time.Time) *ProbeTracker {
	t := &ProbeTracker{Kind: kind, period: defaultPeriod, timeout: defaultProbeTimeout,
		successThreshold: defaultSuccessThreshold, failThres: defaultFailureThreshold}
	if p.PeriodSeconds > 0 {
		t.period = time.Duration(p.PeriodSeconds) * time.Second
	}
	if p.TimeoutSeconds > 0 {
		t.timeout = time.Duration(p.TimeoutSeconds) * time.Second
	}
	if p.SuccessThreshold > 0 && kind == ReadinessProbe {
		// Liveness and startup probes must use 1 (the API enforces it).
		t.successThreshold = int(p.SuccessThreshold)
	}
	if p.FailureThreshold > 0 {
		t.failThres = int(p.FailureThreshold)
	}
	t.next = started.Add(time.Duration(p.InitialDelaySeconds) * time.Second)
	t.verdict = kind == LivenessProbe
	return t
}

// Next is when the probe should run next; the zero time once a startup probe
// succeeded (it never runs again for this run).
func (t *ProbeTracker) Next() time.Time {
	if t.finished {
		return time.Time{}
	}
	return t.next
}

// Timeout bounds one probe.
func (t *ProbeTracker) Timeout() time.Duration { return t.timeout }

// Verdict is the probe's current verdict: ready, alive, or started.
func (t *ProbeTracker) Verdict() bool { return t.verdict }

// Record applies one result obtained at now and returns the verdict and whether it
// changed. The verdict turns after successThreshold successes in a row or
// failureThreshold failures in a row.
func (t *ProbeTracker) Record(ok bool, now time.Time) (verdict, changed bool) {
	if t.finished {
		return t.verdict, false
	}
	t.next = now.Add(t.period)
	before := t.verdict
	if ok {
		t.successes, t.failures = t.successes+1, 0
		if t.successes >= t.successThreshold {
			t.verdict = true
		}
	} else {
		t.failures, t.successes = t.failures+1, 0
		if t.failures >= t.failThres {
			t.verdict = false
		}
	}
	if t.Kind == StartupProbe && t.verdict {
		t.finished = true
	}
	return t.verdict, t.verdict != before
}

// Failed tells whether the probe has failed for good (startup or liveness past its
// failure threshold): the container is to be killed and restarted by policy.
func (t *ProbeTracker) Failed() bool {
	return t.Kind != ReadinessProbe && t.failures >= t.failThres
}
