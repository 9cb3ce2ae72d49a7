package ipalloc

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"sync"
	"testing"
)

func owner(name string) Owner { return Owner{Namespace: "default", Name: name, UID: "uid-" + name} }

func TestServiceIPBandSizes(t *testing.T) {
	for _, tc := range []struct {
		cidr          string
		lower, usable uint64
	}{
		{"10.96.0.0/12", 256, 1<<20 - 2},
		{"10.0.0.0/16", 256, 65534},
		{"10.0.0.0/20", 256, 4094},
		{"10.0.0.0/24", 16, 254}, // 256/16 = 16
		{"10.0.0.0/25", 16, 126}, // 128/16 = 8, raised to the minimum 16
		{"10.0.0.0/28", 0, 14},   // no larger than the minimum: no static band
		{"10.0.0.0/30", 0, 2},
		{"fd00::/112", 256, 65535}, // IPv6 keeps the last address
		{"fd00::/120", 16, 255},
	} {
		a, err := NewServiceIPs(newMemStore(), netip.MustParsePrefix(tc.cidr), Options{Seed: 1})
		if err != nil {
			t.Fatalf("%s: %v", tc.cidr, err)
		}
		if a.LowerBand() != tc.lower || a.Size() != tc.usable {
			t.Errorf("%s: lower band %d, usable %d; want %d and %d", tc.cidr, a.LowerBand(), a.Size(), tc.lower, tc.usable)
		}
	}
}

func TestServiceIPRangeLimits(t *testing.T) {
	for _, cidr := range []string{"10.0.0.0/8", "10.0.0.0/31", "10.0.0.1/32", "fd00::/64"} {
		if _, err := NewServiceIPs(newMemStore(), netip.MustParsePrefix(cidr), Options{}); err == nil {
			t.Errorf("%s: accepted, want an error naming the size limit", cidr)
		}
	}
}

func TestServiceIPsPreferUpperBandThenLowerThenFull(t *testing.T) {
	ctx := context.Background()
	store := newMemStore()
	a, err := NewServiceIPs(store, netip.MustParsePrefix("10.0.0.0/24"), Options{Seed: 42})
	if err != nil {
		t.Fatal(err)
	}
	// .1 to .16 are the static band; .17 to .254 the dynamic one.
	lowerLast := netip.MustParseAddr("10.0.0.16")
	seen := map[netip.Addr]bool{}
	for i := 0; i < 254-16; i++ {
		ip, err := a.Allocate(ctx, owner(fmt.Sprint("s", i)))
		if err != nil {
			t.Fatalf("allocation %d: %v", i, err)
		}
		if ip.Compare(lowerLast) <= 0 {
			t.Fatalf("allocation %d got %s from the static band while the dynamic band had room", i, ip)
		}
		if seen[ip] {
			t.Fatalf("allocation %d: %s handed out twice", i, ip)
		}
		seen[ip] = true
	}
	// The dynamic band is full: the static band is used next.
	ip, err := a.Allocate(ctx, owner("spill"))
	if err != nil {
		t.Fatal(err)
	}
	if ip.Compare(lowerLast) > 0 || ip.Compare(netip.MustParseAddr("10.0.0.1")) < 0 {
		t.Fatalf("spill allocation %s, want one in 10.0.0.1-10.0.0.16", ip)
	}
	for i := 0; i < 15; i++ {
		if _, err := a.Allocate(ctx, owner(fmt.Sprint("low", i))); err != nil {
			t.Fatalf("low allocation %d: %v", i, err)
		}
	}
	if _, err := a.Allocate(ctx, owner("one-too-many")); !errors.Is(err, ErrFull) {
		t.Fatalf("allocation from a full range: %v, want ErrFull", err)
	}
	if n := store.count(ServiceIPPrefix); n != 254 {
		t.Fatalf("%d claims stored, want 254", n)
	}
}

func TestServiceIPsExhaustSmallRange(t *testing.T) {
	ctx := context.Background()
	a, err := NewServiceIPs(newMemStore(), netip.MustParsePrefix("192.168.5.0/28"), Options{Seed: 7})
	if err != nil {
		t.Fatal(err)
	}
	got := map[netip.Addr]bool{}
	for i := 0; i < 14; i++ {
		ip, err := a.Allocate(ctx, owner(fmt.Sprint("s", i)))
		if err != nil {
			t.Fatalf("allocation %d: %v", i, err)
		}
		got[ip] = true
	}
	if len(got) != 14 || got[netip.MustParseAddr("192.168.5.0")] || got[netip.MustParseAddr("192.168.5.15")] {
		t.Fatalf("allocated %v: want the 14 addresses .1-.14 without network or broadcast", got)
	}
	if _, err := a.Allocate(ctx, owner("x")); !errors.Is(err, ErrFull) {
		t.Fatalf("15th allocation: %v, want ErrFull", err)
	}
	// Releasing one makes exactly that one available again.
	if err := a.Release(ctx, netip.MustParseAddr("192.168.5.9"), owner("s0")); err != nil {
		t.Fatal(err)
	}
	held, _ := a.Held(ctx)
	o := held[netip.MustParseAddr("192.168.5.9")]
	if err := a.Release(ctx, netip.MustParseAddr("192.168.5.9"), o); err != nil {
		t.Fatal(err)
	}
	ip, err := a.Allocate(ctx, owner("again"))
	if err != nil || ip != netip.MustParseAddr("192.168.5.9") {
		t.Fatalf("after release: %s, %v; want 192.168.5.9", ip, err)
	}
}

func TestServiceIPStaticClaims(t *testing.T) {
	ctx := context.Background()
	a, err := NewServiceIPs(newMemStore(), netip.MustParsePrefix("10.96.0.0/12"), Options{Seed: 3})
	if err != nil {
		t.Fatal(err)
	}
	dns := netip.MustParseAddr("10.96.0.10")
	if err := a.Claim(ctx, dns, owner("kube-dns")); err != nil {
		t.Fatalf("static claim in the lower band: %v", err)
	}
	if err := a.Claim(ctx, dns, owner("kube-dns")); err != nil {
		t.Fatalf("the same owner claiming again (a retried write): %v", err)
	}
	if err := a.Claim(ctx, dns, owner("other")); !errors.Is(err, ErrAllocated) {
		t.Fatalf("claim of a held address by another owner: %v, want ErrAllocated", err)
	}
	// A static claim from the upper band is honoured too.
	if err := a.Claim(ctx, netip.MustParseAddr("10.100.1.2"), owner("upper")); err != nil {
		t.Fatal(err)
	}
	for _, ip := range []string{"10.96.0.0", "10.111.255.255", "10.112.0.1", "192.168.0.1", "fd00::1"} {
		if err := a.Claim(ctx, netip.MustParseAddr(ip), owner("y")); !errors.Is(err, ErrNotInRange) {
			t.Errorf("claim of %s: %v, want ErrNotInRange", ip, err)
		}
	}
	// Another owner's release leaves the claim alone.
	if err := a.Release(ctx, dns, owner("other")); err != nil {
		t.Fatal(err)
	}
	if err := a.Claim(ctx, dns, owner("other")); !errors.Is(err, ErrAllocated) {
		t.Fatalf("after a foreign release: %v, want ErrAllocated still", err)
	}
	if err := a.Release(ctx, dns, owner("kube-dns")); err != nil {
		t.Fatal(err)
	}
	if err := a.Claim(ctx, dns, owner("other")); err != nil {
		t.Fatalf("after the owner released: %v", err)
	}
}

func TestAllocateReusesOwnersLeftoverClaim(t *testing.T) {
	ctx := context.Background()
	a, err := NewServiceIPs(newMemStore(), netip.MustParsePrefix("10.0.0.0/24"), Options{Seed: 9})
	if err != nil {
		t.Fatal(err)
	}
	first, err := a.Allocate(ctx, owner("svc"))
	if err != nil {
		t.Fatal(err)
	}
	// A retried create of the same object (same UID) gets the address it already holds
	// rather than leaking it.
	second, err := a.Allocate(ctx, owner("svc"))
	if err != nil || second != first {
		t.Fatalf("retry got %s, %v; want %s again", second, err, first)
	}
}

func TestIPv6Allocation(t *testing.T) {
	ctx := context.Background()
	a, err := NewServiceIPs(newMemStore(), netip.MustParsePrefix("fd00:10:96::/112"), Options{Seed: 5})
	if err != nil {
		t.Fatal(err)
	}
	ip, err := a.Allocate(ctx, owner("v6"))
	if err != nil {
		t.Fatal(err)
	}
	if !a.Range().Contains(ip) || ip == a.Range().Addr() {
		t.Fatalf("allocated %s outside %s or the network address", ip, a.Range())
	}
	if ip.Compare(netip.MustParseAddr("fd00:10:96::100")) <= 0 {
		t.Fatalf("allocated %s from the static band (first 256 addresses)", ip)
	}
}

func TestConcurrentAllocatorsNeverShareAnAddress(t *testing.T) {
	ctx := context.Background()
	store := newMemStore()
	cidr := netip.MustParsePrefix("10.0.0.0/26") // 62 usable, static band 16
	var wg sync.WaitGroup
	var mu sync.Mutex
	got := map[netip.Addr]string{}
	var errs []error
	for r := 0; r < 3; r++ {
		// Replicas with the same seed start their probes at the same place: the worst case.
		a, err := NewServiceIPs(store, cidr, Options{Seed: 11})
		if err != nil {
			t.Fatal(err)
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 20; i++ {
				o := owner(fmt.Sprintf("r%d-%d", r, i))
				ip, err := a.Allocate(ctx, o)
				mu.Lock()
				if err != nil {
					errs = append(errs, err)
				} else if prev, dup := got[ip]; dup {
					errs = append(errs, fmt.Errorf("%s given to %s and %s", ip, prev, o.Name))
				} else {
					got[ip] = o.Name
				}
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	if len(got) != 60 {
		t.Fatalf("%d distinct addresses, want 60", len(got))
	}
}
