package pressure

import (
	"strings"
	"testing"
	"time"
)

// FuzzParseThresholds feeds arbitrary signal names and values to the parser, as hard,
// soft and minimum-reclaim entries. Invariants: no panic; an accepted threshold names a
// known signal, prints back to the text it came from, resolves to a non-negative
// amount no larger than capacity for a percentage, and parses again to the same value.
func FuzzParseThresholds(f *testing.F) {
	for _, seed := range []struct{ signal, value, minReclaim string }{
		{"memory.available", "100Mi", "50Mi"},
		{"nodefs.available", "10%", "1Gi"},
		{"nodefs.inodesFree", "5%", "5%"},
		{"pid.available", "1000", "0"},
		{"pid.available", "1.5", ""},
		{"imagefs.available", "100%", "0%"},
		{"allocatableMemory.available", "0.5Ki", "1e3"},
		{"memory.available", "-1", "-1%"},
		{"memory.available", "7.25%", "NaN%"},
		{"memory.available", "99999999999999999999Ei", "1e308"},
		{"bogus", "1", "1"},
		{"memory.available", "%", "10%%"},
		{"memory.available", " 1Gi", "0x10%"},
	} {
		f.Add(seed.signal, seed.value, seed.minReclaim, int64(time.Minute))
	}
	f.Fuzz(func(t *testing.T, signal, value, minReclaim string, grace int64) {
		spec := ThresholdSpec{
			Hard:            map[string]string{signal: value},
			Soft:            map[string]string{signal: value},
			SoftGracePeriod: map[string]time.Duration{signal: time.Duration(grace)},
			MinimumReclaim:  map[string]string{signal: minReclaim},
		}
		got, err := ParseThresholds(spec)
		if err != nil {
			if !strings.Contains(err.Error(), "eviction") {
				t.Fatalf("error %q names no field", err)
			}
			return
		}
		if grace <= 0 {
			t.Fatalf("grace period %d accepted", grace)
		}
		for _, th := range got {
			if !th.Signal.Known() || string(th.Signal) != signal {
				t.Fatalf("threshold %v for signal %q", th, signal)
			}
			if th.Value.String() != value || th.String() != signal+"<"+value {
				t.Fatalf("value %q prints as %q (%s)", value, th.Value.String(), th)
			}
			const capacity = 1 << 40
			v := th.Value.Resolve(capacity)
			if v < 0 || (th.Value.IsPercentage() && v > capacity) {
				t.Fatalf("%s resolves to %d of %d", th, v, int64(capacity))
			}
			if th.MinReclaim.Resolve(capacity) < 0 {
				t.Fatalf("minimum reclaim %s resolves negative", th.MinReclaim)
			}
			again, err := parseValue(th.Signal, th.Value.String())
			if err != nil || again.Resolve(capacity) != v {
				t.Fatalf("%s printed back does not parse to the same value: %v", th, err)
			}
		}
	})
}
