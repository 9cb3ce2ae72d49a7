package ipalloc

import (
	"context"
	"errors"
	"fmt"
	"testing"
)

func TestParsePortRange(t *testing.T) {
	for in, want := range map[string]PortRange{
		"30000-32767": {Base: 30000, Size: 2768},
		"30000+2767":  {Base: 30000, Size: 2768},
		" 8080 ":      {Base: 8080, Size: 1},
		"1-65535":     {Base: 1, Size: 65535},
	} {
		got, err := ParsePortRange(in)
		if err != nil || got != want {
			t.Errorf("ParsePortRange(%q) = %+v, %v; want %+v", in, got, err, want)
		}
	}
	for _, in := range []string{"", "0-10", "10-5", "30000-70000", "a-b", "30000+-1", "65535+1", "-5", "30000-", "+3", "1-2-3", "030000-32767"} {
		if got, err := ParsePortRange(in); err == nil {
			t.Errorf("ParsePortRange(%q) = %+v, want an error", in, got)
		}
	}
	if s := (PortRange{Base: 30000, Size: 2768}).String(); s != "30000-32767" {
		t.Errorf("String() = %q", s)
	}
}

func FuzzParsePortRange(f *testing.F) {
	for _, s := range []string{"30000-32767", "30000+2767", "80", "", "1-65535", "5-3", "99999", "1+65534"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		r, err := ParsePortRange(s)
		if err != nil {
			return
		}
		if r.Base < 1 || r.Size < 1 || r.Last() > 65535 {
			t.Fatalf("ParsePortRange(%q) = %+v, outside 1-65535", s, r)
		}
		// What String prints parses back to the same range.
		back, err := ParsePortRange(r.String())
		if err != nil || back != r {
			t.Fatalf("round trip of %q through %q: %+v, %v", s, r.String(), back, err)
		}
	})
}

func TestNodePortBands(t *testing.T) {
	for _, tc := range []struct {
		r     string
		lower int
	}{
		{"30000-32767", 86}, // 2768/32
		{"30000-30099", 16}, // 100/32 = 3, raised to 16
		{"30000-30015", 0},  // 16 ports: no static band
		{"20000-39999", 128},
	} {
		r, _ := ParsePortRange(tc.r)
		a, err := NewNodePorts(newMemStore(), r, Options{})
		if err != nil {
			t.Fatal(err)
		}
		if a.LowerBand() != tc.lower {
			t.Errorf("%s: static band %d, want %d", tc.r, a.LowerBand(), tc.lower)
		}
	}
}

func TestNodePortsAllocation(t *testing.T) {
	ctx := context.Background()
	r, _ := ParsePortRange("30000-30099") // static band 30000-30015
	a, err := NewNodePorts(newMemStore(), r, Options{Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 84; i++ {
		p, err := a.Allocate(ctx, owner(fmt.Sprint("s", i)), nil)
		if err != nil {
			t.Fatal(err)
		}
		if p < 30016 {
			t.Fatalf("allocation %d got %d from the static band while the dynamic band had room", i, p)
		}
	}
	if err := a.Claim(ctx, 30080, owner("static")); !errors.Is(err, ErrAllocated) {
		t.Fatalf("static claim of a port the dynamic band handed out: %v, want ErrAllocated", err)
	}
	if err := a.Claim(ctx, 30001, owner("static")); err != nil {
		t.Fatal(err)
	}
	if err := a.Claim(ctx, 32000, owner("static")); !errors.Is(err, ErrNotInRange) {
		t.Fatalf("claim outside the range: %v, want ErrNotInRange", err)
	}
	// A service that needs two ports passes the first as in use, so the second differs
	// even when it could reuse a leftover claim.
	p1, err := a.Allocate(ctx, owner("two"), nil)
	if err != nil {
		t.Fatal(err)
	}
	p2, err := a.Allocate(ctx, owner("two"), []int{p1})
	if err != nil || p2 == p1 {
		t.Fatalf("second port %d, %v; want a port other than %d", p2, err, p1)
	}
	for i := 0; i < 13; i++ {
		if _, err := a.Allocate(ctx, owner(fmt.Sprint("low", i)), nil); err != nil {
			t.Fatalf("low %d: %v", i, err)
		}
	}
	if _, err := a.Allocate(ctx, owner("full"), nil); !errors.Is(err, ErrFull) {
		t.Fatalf("allocation from a full range: %v, want ErrFull", err)
	}
}
