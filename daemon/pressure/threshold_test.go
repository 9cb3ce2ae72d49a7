package pressure

import (
	"errors"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/util/validation/field"
)

func TestParseThresholdsDefaults(t *testing.T) {
	got, err := ParseThresholds(ThresholdSpec{Hard: DefaultEvictionHard()})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		"memory.available<100Mi",
		"pid.available<5%",
		"nodefs.available<10%",
		"nodefs.inodesFree<5%",
		"imagefs.available<15%",
		"imagefs.inodesFree<5%",
	}
	if len(got) != len(want) {
		t.Fatalf("got %d thresholds %v, want %v", len(got), got, want)
	}
	for i, th := range got {
		if th.String() != want[i] {
			t.Errorf("threshold %d = %s, want %s", i, th, want[i])
		}
		if th.Soft() || th.Kind() != "hard" || !th.MinReclaim.IsZero() {
			t.Errorf("%s: soft=%t kind=%s minReclaim=%s, want a plain hard threshold", th, th.Soft(), th.Kind(), th.MinReclaim)
		}
	}
}

func TestParseThresholdsSoftAndMinReclaim(t *testing.T) {
	got, err := ParseThresholds(ThresholdSpec{
		Hard:            map[string]string{"memory.available": "100Mi"},
		Soft:            map[string]string{"memory.available": "1Gi", "pid.available": "1000"},
		SoftGracePeriod: map[string]time.Duration{"memory.available": 90 * time.Second, "pid.available": time.Minute},
		MinimumReclaim:  map[string]string{"memory.available": "50Mi"},
	})
	if err != nil {
		t.Fatal(err)
	}
	type row struct {
		s     string
		grace time.Duration
		minR  int64
	}
	want := []row{{"memory.available<100Mi", 0, 50 << 20}, {"memory.available<1Gi", 90 * time.Second, 50 << 20}, {"pid.available<1000", time.Minute, 0}}
	if len(got) != len(want) {
		t.Fatalf("got %v, want %v", got, want)
	}
	for i, w := range want {
		g := got[i]
		if g.String() != w.s || g.GracePeriod != w.grace || g.MinReclaim.Resolve(1<<40) != w.minR {
			t.Errorf("threshold %d = %s grace %s minReclaim %d, want %+v", i, g, g.GracePeriod, g.MinReclaim.Resolve(1<<40), w)
		}
	}
	if got[1].Kind() != "soft" {
		t.Errorf("kind of %s = %s, want soft", got[1], got[1].Kind())
	}
}

func TestParseThresholdsTurnedOff(t *testing.T) {
	hard := DefaultEvictionHard()
	hard["imagefs.available"] = "0%"
	hard["imagefs.inodesFree"] = "100%"
	hard["pid.available"] = "0"
	got, err := ParseThresholds(ThresholdSpec{Hard: hard})
	if err != nil {
		t.Fatal(err)
	}
	for _, th := range got {
		switch th.Signal {
		case SignalImagefsAvailable, SignalImagefsInodesFree, SignalPIDAvailable:
			t.Errorf("threshold %s is present, want it turned off", th)
		}
	}
	if len(got) != 3 {
		t.Errorf("got %v, want the three thresholds left on", got)
	}
}

// TestValueResolve checks quantities and percentages against capacities.
func TestValueResolve(t *testing.T) {
	cases := []struct {
		signal   Signal
		text     string
		capacity int64
		want     int64
	}{
		{SignalMemoryAvailable, "100Mi", 8 << 30, 100 << 20},
		{SignalMemoryAvailable, "100Mi", 0, 100 << 20}, // a quantity ignores capacity
		{SignalMemoryAvailable, "1G", 8 << 30, 1_000_000_000},
		{SignalNodefsAvailable, "10%", 50 << 30, 5 << 30},
		{SignalNodefsAvailable, "10%", 1001, 100}, // rounds down
		{SignalNodefsAvailable, "7.5%", 1000, 75},
		{SignalNodefsAvailable, "100%", 1234, 1234},
		{SignalNodefsInodesFree, "5%", 3_276_800, 163_840},
		{SignalPIDAvailable, "5%", 4_194_304, 209_715},
		{SignalPIDAvailable, "1000", 4_194_304, 1000},
		{SignalPIDAvailable, "1k", 32768, 1000},
		{SignalMemoryAvailable, "0.5Ki", 1 << 30, 512},
	}
	for _, tc := range cases {
		v, err := parseValue(tc.signal, tc.text)
		if err != nil {
			t.Errorf("%s %q: %v", tc.signal, tc.text, err)
			continue
		}
		if got := v.Resolve(tc.capacity); got != tc.want {
			t.Errorf("%s %q of capacity %d = %d, want %d", tc.signal, tc.text, tc.capacity, got, tc.want)
		}
		if v.String() != tc.text {
			t.Errorf("%q prints as %q", tc.text, v.String())
		}
		if v.IsPercentage() != strings.HasSuffix(tc.text, "%") {
			t.Errorf("%q: IsPercentage = %t", tc.text, v.IsPercentage())
		}
	}
}

func TestParseThresholdsRefuses(t *testing.T) {
	cases := []struct {
		name  string
		spec  ThresholdSpec
		field string // the field the error names
		value string // text the error must show
	}{
		{"unknown signal", ThresholdSpec{Hard: map[string]string{"memory.free": "1Gi"}},
			"evictionHard[memory.free]", `"memory.free"`},
		{"signal case", ThresholdSpec{Hard: map[string]string{"Memory.Available": "1Gi"}},
			"evictionHard[Memory.Available]", "memory.available"},
		{"bad quantity", ThresholdSpec{Hard: map[string]string{"memory.available": "100MB"}},
			"evictionHard[memory.available]", `"100MB"`},
		{"operator in value", ThresholdSpec{Hard: map[string]string{"memory.available": "<100Mi"}},
			"evictionHard[memory.available]", `"<100Mi"`},
		{"negative quantity", ThresholdSpec{Hard: map[string]string{"memory.available": "-1Mi"}},
			"evictionHard[memory.available]", "negative"},
		{"fractional bytes", ThresholdSpec{Hard: map[string]string{"memory.available": "100m"}},
			"evictionHard[memory.available]", "whole number of bytes"},
		{"fractional pids", ThresholdSpec{Hard: map[string]string{"pid.available": "1.5"}},
			"evictionHard[pid.available]", "whole number of process IDs"},
		{"percentage above 100", ThresholdSpec{Hard: map[string]string{"nodefs.available": "101%"}},
			"evictionHard[nodefs.available]", `"101%"`},
		{"negative percentage", ThresholdSpec{Hard: map[string]string{"nodefs.available": "-5%"}},
			"evictionHard[nodefs.available]", `"-5%"`},
		{"double percent", ThresholdSpec{Hard: map[string]string{"nodefs.available": "10%%"}},
			"evictionHard[nodefs.available]", `"10%%"`},
		{"bare percent", ThresholdSpec{Hard: map[string]string{"nodefs.available": "%"}},
			"evictionHard[nodefs.available]", `"%"`},
		{"exponent percent", ThresholdSpec{Hard: map[string]string{"nodefs.available": "1e1%"}},
			"evictionHard[nodefs.available]", `"1e1%"`},
		{"NaN percent", ThresholdSpec{Hard: map[string]string{"nodefs.available": "NaN%"}},
			"evictionHard[nodefs.available]", `"NaN%"`},
		{"trailing dot percent", ThresholdSpec{Hard: map[string]string{"nodefs.available": "10.%"}},
			"evictionHard[nodefs.available]", `"10.%"`},
		{"empty value", ThresholdSpec{Hard: map[string]string{"nodefs.available": ""}},
			"evictionHard[nodefs.available]", `""`},
		{"soft bad value", ThresholdSpec{Soft: map[string]string{"memory.available": "lots"},
			SoftGracePeriod: map[string]time.Duration{"memory.available": time.Minute}},
			"evictionSoft[memory.available]", `"lots"`},
		{"soft without grace period", ThresholdSpec{Soft: map[string]string{"memory.available": "1Gi"}},
			"evictionSoft[memory.available]", "evictionSoftGracePeriod[memory.available]"},
		{"grace period without soft", ThresholdSpec{SoftGracePeriod: map[string]time.Duration{"nodefs.available": time.Minute}},
			"evictionSoftGracePeriod[nodefs.available]", `"1m0s"`},
		{"zero grace period", ThresholdSpec{Soft: map[string]string{"memory.available": "1Gi"},
			SoftGracePeriod: map[string]time.Duration{"memory.available": 0}},
			"evictionSoftGracePeriod[memory.available]", `"0s"`},
		{"negative grace period", ThresholdSpec{Soft: map[string]string{"memory.available": "1Gi"},
			SoftGracePeriod: map[string]time.Duration{"memory.available": -time.Second}},
			"evictionSoftGracePeriod[memory.available]", `"-1s"`},
		{"grace period unknown signal", ThresholdSpec{SoftGracePeriod: map[string]time.Duration{"cpu.available": time.Minute}},
			"evictionSoftGracePeriod[cpu.available]", `"cpu.available"`},
		{"minimum reclaim bad value", ThresholdSpec{MinimumReclaim: map[string]string{"memory.available": "half"}},
			"evictionMinimumReclaim[memory.available]", `"half"`},
		{"minimum reclaim unknown signal", ThresholdSpec{MinimumReclaim: map[string]string{"rootfs.available": "1Gi"}},
			"evictionMinimumReclaim[rootfs.available]", `"rootfs.available"`},
		{"minimum reclaim above 100%", ThresholdSpec{MinimumReclaim: map[string]string{"nodefs.available": "150%"}},
			"evictionMinimumReclaim[nodefs.available]", `"150%"`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ParseThresholds(tc.spec)
			if err == nil {
				t.Fatalf("accepted, giving %v", got)
			}
			var fe *field.Error
			if !errors.As(err, &fe) {
				t.Fatalf("error %v holds no *field.Error", err)
			}
			if !strings.HasPrefix(err.Error(), tc.field+": ") {
				t.Errorf("error %q does not start with the field %s", err, tc.field)
			}
			if !strings.Contains(err.Error(), tc.value) {
				t.Errorf("error %q does not show %s", err, tc.value)
			}
		})
	}
}

func TestParseThresholdsReportsEveryError(t *testing.T) {
	_, err := ParseThresholds(ThresholdSpec{
		Hard:           map[string]string{"memory.available": "x", "bogus": "1"},
		MinimumReclaim: map[string]string{"nodefs.available": "200%"},
	})
	for _, f := range []string{"evictionHard[memory.available]", "evictionHard[bogus]", "evictionMinimumReclaim[nodefs.available]"} {
		if err == nil || !strings.Contains(err.Error(), f+":") {
			t.Errorf("error %v does not name %s", err, f)
		}
	}
}

func TestDefaultEvictionHardIsFresh(t *testing.T) {
	a := DefaultEvictionHard()
	a["memory.available"] = "1Gi"
	if b := DefaultEvictionHard(); b["memory.available"] != "100Mi" {
		t.Errorf("changing one DefaultEvictionHard() result changed another: %v", b)
	}
}
