package pressure

import (
	"testing"
)

func TestSamplesMemoryTakesTheSmaller(t *testing.T) {
	const gi = 1 << 30
	cases := []struct {
		name      string
		m         MemoryStats
		want      int64
		wantBasis string
		absent    bool
	}{
		{"MemAvailable smaller", MemoryStats{CapacityBytes: 8 * gi, MemAvailableBytes: 1 * gi, HasMemAvailable: true, WorkingSetBytes: 2 * gi, HasWorkingSet: true},
			1 * gi, BasisMemAvailable, false},
		{"working set view smaller", MemoryStats{CapacityBytes: 8 * gi, MemAvailableBytes: 5 * gi, HasMemAvailable: true, WorkingSetBytes: 6 * gi, HasWorkingSet: true},
			2 * gi, BasisWorkingSet, false},
		{"only MemAvailable", MemoryStats{CapacityBytes: 8 * gi, MemAvailableBytes: 3 * gi, HasMemAvailable: true, WorkingSetBytes: 7 * gi},
			3 * gi, BasisMemAvailable, false},
		{"only working set", MemoryStats{CapacityBytes: 8 * gi, MemAvailableBytes: 1, WorkingSetBytes: 7 * gi, HasWorkingSet: true},
			1 * gi, BasisWorkingSet, false},
		{"neither", MemoryStats{CapacityBytes: 8 * gi}, 0, "", true},
		{"no capacity", MemoryStats{MemAvailableBytes: gi, HasMemAvailable: true}, 0, "", true},
		{"working set above capacity", MemoryStats{CapacityBytes: 1 * gi, WorkingSetBytes: 2 * gi, HasWorkingSet: true},
			-1 * gi, BasisWorkingSet, false},
	}
	for _, tc := range cases {
		m := tc.m
		s, ok := Observations{Memory: &m}.Samples()[SignalMemoryAvailable]
		if ok == tc.absent {
			t.Errorf("%s: sample present = %t, want %t", tc.name, ok, !tc.absent)
			continue
		}
		if ok && (s.Available != tc.want || s.Basis != tc.wantBasis || s.Capacity != int64(m.CapacityBytes)) {
			t.Errorf("%s: sample %+v, want available %d by %q of capacity %d", tc.name, s, tc.want, tc.wantBasis, m.CapacityBytes)
		}
	}
}

func TestSamplesOtherSignals(t *testing.T) {
	obs := Observations{
		AllocatableMemory: &AllocatableMemoryStats{AllocatableBytes: 6 << 30, WorkingSetBytes: 5 << 30},
		Nodefs:            &FilesystemStats{CapacityBytes: 100, AvailableBytes: 7, Inodes: 1000, InodesFree: 30},
		Imagefs:           &FilesystemStats{CapacityBytes: 200, AvailableBytes: 50}, // no inode count (btrfs)
		PIDs:              &PIDStats{PIDMax: 4194304, ThreadsMax: 63000, Tasks: 900},
	}
	got := obs.Samples()
	want := map[Signal]Sample{
		SignalAllocatableMemoryAvailable: {Available: 1 << 30, Capacity: 6 << 30},
		SignalNodefsAvailable:            {Available: 7, Capacity: 100},
		SignalNodefsInodesFree:           {Available: 30, Capacity: 1000},
		SignalImagefsAvailable:           {Available: 50, Capacity: 200},
		SignalPIDAvailable:               {Available: 63000 - 900, Capacity: 63000},
	}
	if len(got) != len(want) {
		t.Errorf("samples %v, want %v", got, want)
	}
	for s, w := range want {
		if got[s] != w {
			t.Errorf("%s = %+v, want %+v", s, got[s], w)
		}
	}
}

func TestSamplesPIDLimit(t *testing.T) {
	cases := []struct {
		p       PIDStats
		want    int64
		present bool
	}{
		{PIDStats{PIDMax: 32768, ThreadsMax: 100000, Tasks: 100}, 32768 - 100, true},
		{PIDStats{PIDMax: 4194304, ThreadsMax: 50000, Tasks: 100}, 50000 - 100, true},
		{PIDStats{PIDMax: 32768, Tasks: 100}, 32768 - 100, true},
		{PIDStats{ThreadsMax: 1000, Tasks: 100}, 900, true},
		{PIDStats{Tasks: 100}, 0, false},
	}
	for _, tc := range cases {
		p := tc.p
		s, ok := Observations{PIDs: &p}.Samples()[SignalPIDAvailable]
		if ok != tc.present || (ok && s.Available != tc.want) {
			t.Errorf("%+v: sample %+v present %t, want available %d present %t", p, s, ok, tc.want, tc.present)
		}
	}
}

func TestSamplesClampHugeCounters(t *testing.T) {
	s := Observations{Nodefs: &FilesystemStats{CapacityBytes: 1 << 63, AvailableBytes: 1<<64 - 1}}.Samples()[SignalNodefsAvailable]
	if s.Available < 0 || s.Capacity < 0 {
		t.Errorf("huge counters wrapped negative: %+v", s)
	}
}
