package conntrack

import (
	"net/netip"
	"testing"
)

func TestMatchSetSelects(t *testing.T) {
	ap := netip.MustParseAddrPort
	set, err := newMatchSet([]Match{
		{Dst: ap("10.96.0.10:53"), DNATTo: ap("10.244.0.7:5353")},
		{DstPort: 30053, DNATTo: ap("10.244.0.7:5353")},
		{Dst: ap("10.96.0.11:53")},
		{DstPort: 30054},
		{Dst: ap("[fd00:96::10]:53"), DNATTo: ap("[fd00:244::7]:5353")},
	})
	if err != nil {
		t.Fatal(err)
	}
	if !set.v4 || !set.v6 {
		t.Fatalf("families v4 %v v6 %v, want both", set.v4, set.v6)
	}
	for _, tc := range []struct {
		name string
		flow Flow
		want bool
	}{
		{"DNATed to the stale endpoint", Flow{protoUDP, ap("10.96.0.10:53"), ap("10.244.0.7:5353")}, true},
		{"DNATed to another endpoint", Flow{protoUDP, ap("10.96.0.10:53"), ap("10.244.0.8:5353")}, false},
		{"stale endpoint, other port", Flow{protoUDP, ap("10.96.0.10:53"), ap("10.244.0.7:5354")}, false},
		{"TCP is never selected", Flow{6, ap("10.96.0.10:53"), ap("10.244.0.7:5353")}, false},
		{"node port to the stale endpoint", Flow{protoUDP, ap("192.0.2.1:30053"), ap("10.244.0.7:5353")}, true},
		{"node port to another endpoint", Flow{protoUDP, ap("192.0.2.1:30053"), ap("10.244.0.8:5353")}, false},
		{"whole service", Flow{protoUDP, ap("10.96.0.11:53"), ap("10.244.0.9:53")}, true},
		{"whole service, never DNATed", Flow{protoUDP, ap("10.96.0.11:53"), ap("10.96.0.11:53")}, true},
		{"whole node port", Flow{protoUDP, ap("[2001:db8::1]:30054"), ap("[fd00::9]:53")}, true},
		{"IPv6 stale endpoint", Flow{protoUDP, ap("[fd00:96::10]:53"), ap("[fd00:244::7]:5353")}, true},
		{"IPv4-mapped form of a selected flow", Flow{protoUDP, ap("[::ffff:10.96.0.11]:53"), ap("10.244.0.9:53")}, true},
		{"unrelated", Flow{protoUDP, ap("10.96.0.12:53"), ap("10.244.0.7:5353")}, false},
	} {
		if got := set.selects(tc.flow); got != tc.want {
			t.Errorf("%s: selects = %v, want %v", tc.name, got, tc.want)
		}
	}
}

func TestMatchSetFamilies(t *testing.T) {
	ap := netip.MustParseAddrPort
	set, err := newMatchSet([]Match{{Dst: ap("10.96.0.10:53")}, {DstPort: 30053, DNATTo: ap("10.244.0.7:53")}})
	if err != nil {
		t.Fatal(err)
	}
	if !set.v4 || set.v6 {
		t.Fatalf("IPv4-only matches dump v4 %v v6 %v", set.v4, set.v6)
	}
}

func TestMatchNeedsExactlyOneDestination(t *testing.T) {
	for _, m := range []Match{{}, {Dst: netip.MustParseAddrPort("10.96.0.10:53"), DstPort: 53}} {
		if _, err := newMatchSet([]Match{m}); err == nil {
			t.Errorf("match %+v accepted", m)
		}
	}
}
