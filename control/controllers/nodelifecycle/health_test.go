package nodelifecycle

import (
	"strings"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

var t0 = time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)

func sec(n int) time.Duration { return time.Duration(n) * time.Second }

func TestDecide(t *testing.T) {
	opts := DefaultOptions()
	tests := []struct {
		name        string
		h           nodeHealth
		now         time.Time
		wantHealthy bool
		wantGrace   time.Duration
	}{
		{
			name:        "posted Ready, just inside the grace period",
			h:           nodeHealth{firstSeen: t0, lastChange: t0.Add(sec(10)), everPostedReady: true},
			now:         t0.Add(sec(59)),
			wantHealthy: true,
			wantGrace:   opts.GracePeriod,
		},
		{
			name:        "posted Ready, grace ends exactly now",
			h:           nodeHealth{firstSeen: t0, lastChange: t0.Add(sec(10)), everPostedReady: true},
			now:         t0.Add(sec(60)),
			wantHealthy: false,
			wantGrace:   opts.GracePeriod,
		},
		{
			name:        "posted Ready, long silent",
			h:           nodeHealth{firstSeen: t0, lastChange: t0, everPostedReady: true},
			now:         t0.Add(time.Hour),
			wantHealthy: false,
			wantGrace:   opts.GracePeriod,
		},
		{
			name:        "never posted Ready, past the normal grace but inside the startup grace",
			h:           nodeHealth{firstSeen: t0, lastChange: t0},
			now:         t0.Add(sec(55)),
			wantHealthy: true,
			wantGrace:   opts.StartupGracePeriod,
		},
		{
			name:        "never posted Ready, startup grace over",
			h:           nodeHealth{firstSeen: t0, lastChange: t0},
			now:         t0.Add(sec(60)),
			wantHealthy: false,
			wantGrace:   opts.StartupGracePeriod,
		},
		{
			name:        "never posted Ready but Lease renewing: measured from the renewal",
			h:           nodeHealth{firstSeen: t0, lastChange: t0.Add(sec(30))},
			now:         t0.Add(sec(80)),
			wantHealthy: true,
			wantGrace:   opts.StartupGracePeriod,
		},
		{
			name:        "already decided Unknown stays unknown without a heartbeat",
			h:           nodeHealth{firstSeen: t0, lastChange: t0, everPostedReady: true, unknown: true},
			now:         t0.Add(sec(120)),
			wantHealthy: false,
			wantGrace:   opts.GracePeriod,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			v := decide(&tt.h, tt.now, opts)
			if v.healthy != tt.wantHealthy {
				t.Errorf("healthy = %v, want %v", v.healthy, tt.wantHealthy)
			}
			if v.grace != tt.wantGrace {
				t.Errorf("grace = %v, want %v", v.grace, tt.wantGrace)
			}
			if want := tt.h.lastChange.Add(tt.wantGrace); !v.deadline.Equal(want) {
				t.Errorf("deadline = %v, want %v", v.deadline, want)
			}
			if want := tt.now.Sub(tt.h.lastChange); v.silent != want {
				t.Errorf("silent = %v, want %v", v.silent, want)
			}
		})
	}
}

func TestObserveStampsChangesWithControllerClock(t *testing.T) {
	// The node's clock is an hour behind and its timestamps are ancient: only whether
	// they change may matter.
	nodeClock := t0.Add(-time.Hour)
	h := newNodeHealth(readyReading{posted: true, heartbeat: nodeClock}, nodeClock, t0)
	if !h.lastChange.Equal(t0) || !h.firstSeen.Equal(t0) {
		t.Fatalf("new record: lastChange %v firstSeen %v, want both %v (first readings are a baseline)", h.lastChange, h.firstSeen, t0)
	}

	steps := []struct {
		name          string
		ready         *readyReading
		lease         *time.Time
		at            time.Time
		wantHeartbeat bool
		wantChange    time.Time
	}{
		{"same Ready heartbeat", &readyReading{posted: true, heartbeat: nodeClock}, nil, t0.Add(sec(5)), false, t0},
		{"same lease renewal", nil, &nodeClock, t0.Add(sec(6)), false, t0},
		{"lease renewed", nil, ptr(nodeClock.Add(sec(10))), t0.Add(sec(12)), true, t0.Add(sec(12))},
		{"Ready heartbeat moved backwards still counts as a change", &readyReading{posted: true, heartbeat: nodeClock.Add(-sec(100))}, nil, t0.Add(sec(20)), true, t0.Add(sec(20))},
		{"lease gone is no heartbeat", nil, &time.Time{}, t0.Add(sec(25)), false, t0.Add(sec(20))},
		{"lease back", nil, ptr(nodeClock.Add(sec(40))), t0.Add(sec(30)), true, t0.Add(sec(30))},
		{"Ready gone is no heartbeat", &readyReading{}, nil, t0.Add(sec(35)), false, t0.Add(sec(30))},
		{"Ready posted again with the old time counts", &readyReading{posted: true, heartbeat: nodeClock.Add(-sec(100))}, nil, t0.Add(sec(40)), true, t0.Add(sec(40))},
		{"a late reading never moves lastChange back", nil, ptr(nodeClock.Add(sec(50))), t0.Add(sec(39)), true, t0.Add(sec(40))},
	}
	for _, s := range steps {
		var o observation
		if s.ready != nil {
			o = h.observeReady(*s.ready, s.at)
		} else {
			o = h.observeLease(*s.lease, s.at)
		}
		if o.heartbeat != s.wantHeartbeat {
			t.Errorf("%s: heartbeat = %v, want %v", s.name, o.heartbeat, s.wantHeartbeat)
		}
		if !h.lastChange.Equal(s.wantChange) {
			t.Errorf("%s: lastChange = %v, want %v", s.name, h.lastChange, s.wantChange)
		}
	}
}

func TestObserveRecovery(t *testing.T) {
	h := newNodeHealth(readyReading{}, time.Time{}, t0)
	if h.everPostedReady {
		t.Fatal("a node without Ready must start as never posted")
	}
	h.unknown = true
	if o := h.observeLease(time.Time{}, t0.Add(sec(1))); o.recovered || !h.unknown {
		t.Fatalf("no lease is no heartbeat, yet recovered=%v unknown=%v", o.recovered, h.unknown)
	}
	o := h.observeReady(readyReading{posted: true, heartbeat: t0}, t0.Add(sec(2)))
	if !o.heartbeat || !o.recovered || h.unknown {
		t.Fatalf("first Ready after Unknown: %+v unknown=%v, want heartbeat and recovered, unknown cleared", o, h.unknown)
	}
	if !h.everPostedReady {
		t.Fatal("everPostedReady not set by a posted Ready")
	}
	// Posting Ready is sticky for the grace period choice.
	h.observeReady(readyReading{}, t0.Add(sec(3)))
	if got := h.gracePeriod(DefaultOptions()); got != DefaultOptions().GracePeriod {
		t.Fatalf("grace after Ready disappeared = %v, want the normal %v", got, DefaultOptions().GracePeriod)
	}
}

func TestReadReadyIgnoresControllerWrittenNeverUpdated(t *testing.T) {
	hb := metav1.NewTime(t0)
	tests := []struct {
		name  string
		conds []v1.NodeCondition
		want  readyReading
	}{
		{"no conditions", nil, readyReading{}},
		{"only pressure", []v1.NodeCondition{{Type: v1.NodeMemoryPressure, Status: v1.ConditionFalse, LastHeartbeatTime: hb}}, readyReading{}},
		{"posted Ready", []v1.NodeCondition{{Type: v1.NodeReady, Status: v1.ConditionTrue, LastHeartbeatTime: hb}}, readyReading{posted: true, heartbeat: t0}},
		{"Ready marked Unknown by us keeps the node's heartbeat", []v1.NodeCondition{{Type: v1.NodeReady, Status: v1.ConditionUnknown, Reason: reasonUnknown, LastHeartbeatTime: hb}}, readyReading{posted: true, heartbeat: t0}},
		{"Ready we added as never updated", []v1.NodeCondition{{Type: v1.NodeReady, Status: v1.ConditionUnknown, Reason: reasonNeverUpdated, LastHeartbeatTime: hb}}, readyReading{}},
	}
	for _, tt := range tests {
		got := readReady(&v1.Node{Status: v1.NodeStatus{Conditions: tt.conds}})
		if got.posted != tt.want.posted || !got.heartbeat.Equal(tt.want.heartbeat) {
			t.Errorf("%s: got %+v, want %+v", tt.name, got, tt.want)
		}
	}
	if !readLeaseRenew(nil).IsZero() || !readLeaseRenew(&coordinationv1.Lease{}).IsZero() {
		t.Error("a missing Lease or renewTime must read as zero")
	}
	rt := metav1.NewMicroTime(t0)
	if got := readLeaseRenew(&coordinationv1.Lease{Spec: coordinationv1.LeaseSpec{RenewTime: &rt}}); !got.Equal(t0) {
		t.Errorf("renewTime read as %v, want %v", got, t0)
	}
}

func TestEarliestDeadline(t *testing.T) {
	opts := DefaultOptions()
	records := map[string]*nodeHealth{
		// deadline t0+60 (startup grace from first sight)
		"starting": {firstSeen: t0, lastChange: t0},
		// deadline t0+55
		"running": {firstSeen: t0, lastChange: t0.Add(sec(5)), everPostedReady: true},
		// deadline t0+50, but already decided: no timer for it
		"dead": {firstSeen: t0, lastChange: t0, everPostedReady: true, unknown: true},
	}
	next, ok := earliestDeadline(records, opts)
	if !ok || !next.Equal(t0.Add(sec(55))) {
		t.Fatalf("earliest = %v, %v; want %v", next, ok, t0.Add(sec(55)))
	}
	// A heartbeat moves "running" to t0+70: "starting" is now first.
	records["running"].observeLease(t0, t0.Add(sec(20)))
	next, ok = earliestDeadline(records, opts)
	if !ok || !next.Equal(t0.Add(sec(60))) {
		t.Fatalf("after heartbeat: earliest = %v, %v; want %v", next, ok, t0.Add(sec(60)))
	}
	// A node whose deadline already passed but is not yet decided is returned as is,
	// so Run sweeps at once instead of waiting for the ticker.
	records["late"] = &nodeHealth{firstSeen: t0.Add(-time.Hour), lastChange: t0.Add(-time.Hour), everPostedReady: true}
	next, ok = earliestDeadline(records, opts)
	if want := t0.Add(-time.Hour + opts.GracePeriod); !ok || !next.Equal(want) {
		t.Fatalf("with an overdue node: earliest = %v, %v; want %v", next, ok, want)
	}
	if _, ok := earliestDeadline(map[string]*nodeHealth{"dead": records["dead"]}, opts); ok {
		t.Fatal("only decided nodes: want no deadline")
	}
}

func TestOptionsValidate(t *testing.T) {
	if err := DefaultOptions().Validate(); err != nil {
		t.Fatalf("defaults: %v", err)
	}
	o := DefaultOptions()
	o.StartupGracePeriod = 0
	err := o.Validate()
	if err == nil {
		t.Fatal("zero StartupGracePeriod accepted")
	}
	if got := err.Error(); !strings.Contains(got, "StartupGracePeriod") || !strings.Contains(got, "1m0s") {
		t.Errorf("error %q should name the field and the default", got)
	}
}

func ptr[T any](v T) *T { return &v }
