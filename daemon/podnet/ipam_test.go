package podnet

import (
	"errors"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func mustPrefixes(ss ...string) []netip.Prefix {
	var out []netip.Prefix
	for _, s := range ss {
		out = append(out, netip.MustParsePrefix(s))
	}
	return out
}

func TestAllocatorSkipsReservedAddressesAndFills(t *testing.T) {
	a, err := OpenAllocator("", mustPrefixes("10.1.2.0/29"))
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for i := range 5 {
		r, err := a.Allocate("pod-"+string(rune('a'+i)), "")
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, r.IPs[0].String())
	}
	// .0 network, .1 gateway, .7 broadcast.
	if want := []string{"10.1.2.2", "10.1.2.3", "10.1.2.4", "10.1.2.5", "10.1.2.6"}; !slices.Equal(got, want) {
		t.Errorf("addresses %v, want %v", got, want)
	}
	if _, err := a.Allocate("pod-f", ""); !errors.Is(err, ErrNoAddress) || !strings.Contains(err.Error(), "10.1.2.0/29") {
		t.Errorf("sixth pod: %v, want ErrNoAddress naming the CIDR", err)
	}
	// A released address comes back, after the search wraps.
	if err := a.Release("pod-b"); err != nil {
		t.Fatal(err)
	}
	if r, err := a.Allocate("pod-f", ""); err != nil || r.IPs[0].String() != "10.1.2.3" {
		t.Errorf("after a release: %v, %v; want 10.1.2.3", r, err)
	}
}

func TestAllocatorIsIdempotentAndDualStack(t *testing.T) {
	a, err := OpenAllocator("", mustPrefixes("10.1.0.0/24", "fd00:1::/64"))
	if err != nil {
		t.Fatal(err)
	}
	r1, err := a.Allocate("uid-1", "ns-1")
	if err != nil {
		t.Fatal(err)
	}
	r2, err := a.Allocate("uid-1", "ns-1")
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(r1.IPs, r2.IPs) || len(r1.IPs) != 2 || r1.IPs[0].String() != "10.1.0.2" || r1.IPs[1].String() != "fd00:1::2" {
		t.Errorf("allocations %v then %v; want 10.1.0.2 and fd00:1::2 twice", r1.IPs, r2.IPs)
	}
	other, err := a.Allocate("uid-2", "")
	if err != nil || other.IPs[0] == r1.IPs[0] || other.IPs[1] == r1.IPs[1] {
		t.Errorf("second pod %v, %v; want addresses distinct from %v", other.IPs, err, r1.IPs)
	}
	if err := a.Release("never-there"); err != nil {
		t.Errorf("releasing an unknown pod: %v", err)
	}
}

func TestAllocatorStateSurvivesReopen(t *testing.T) {
	path := filepath.Join(t.TempDir(), "ipam.json")
	cidrs := mustPrefixes("10.9.0.0/24")
	a, err := OpenAllocator(path, cidrs)
	if err != nil {
		t.Fatal(err)
	}
	kept, _ := a.Allocate("kept", "kept-ns")
	gone, _ := a.Allocate("gone", "")
	if err := a.Release("gone"); err != nil {
		t.Fatal(err)
	}
	info, err := os.Stat(path)
	if err != nil || info.Mode().Perm() != 0o600 {
		t.Fatalf("state file: %v, %v; want mode 0600", info, err)
	}

	b, err := OpenAllocator(path, cidrs)
	if err != nil {
		t.Fatal(err)
	}
	r, ok := b.Lookup("kept")
	if !ok || !slices.Equal(r.IPs, kept.IPs) || r.NetNS != "kept-ns" {
		t.Errorf("after reopening: %v %v, want %v in kept-ns", r, ok, kept.IPs)
	}
	if _, ok := b.Lookup("gone"); ok {
		t.Error("a released pod is back after reopening")
	}
	next, err := b.Allocate("new", "")
	if err != nil || next.IPs[0] == kept.IPs[0] || next.IPs[0] == gone.IPs[0] {
		t.Errorf("new pod after reopening got %v, %v; want neither %v (in use) nor %v (released last)", next.IPs, err, kept.IPs, gone.IPs)
	}
	// Another pod CIDR (the Node was re-created): the kept pod gets a new address.
	c, err := OpenAllocator(path, mustPrefixes("10.10.0.0/24"))
	if err != nil {
		t.Fatal(err)
	}
	moved, err := c.Allocate("kept", "kept-ns")
	if err != nil || !netip.MustParsePrefix("10.10.0.0/24").Contains(moved.IPs[0]) {
		t.Errorf("pod from an old CIDR: %v, %v; want an address in 10.10.0.0/24", moved.IPs, err)
	}
}

func TestAllocatorRefusesBadState(t *testing.T) {
	for name, content := range map[string]string{
		"not json":      "{",
		"unknown field": `{"version":1,"pods":{},"extra":1}`,
		"version":       `{"version":2,"pods":{}}`,
		"duplicate ip":  `{"version":1,"pods":{"a":{"netns":"a","ips":["10.0.0.2"]},"b":{"netns":"b","ips":["10.0.0.2"]}}}`,
		"bad uid":       `{"version":1,"pods":{"../x":{"netns":"a","ips":["10.0.0.2"]}}}`,
		"no ips":        `{"version":1,"pods":{"a":{"netns":"a","ips":[]}}}`,
	} {
		path := filepath.Join(t.TempDir(), "ipam.json")
		if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		if _, err := OpenAllocator(path, mustPrefixes("10.0.0.0/24")); err == nil || !strings.Contains(err.Error(), path) {
			t.Errorf("%s: %v, want an error naming %s", name, err, path)
		}
	}
}

func TestAllocatorRefusesBadRanges(t *testing.T) {
	for _, cidrs := range [][]netip.Prefix{
		nil,
		mustPrefixes("10.0.0.0/24", "10.1.0.0/24"),
		mustPrefixes("10.0.0.0/31"),
		{netip.PrefixFrom(netip.MustParseAddr("10.0.0.1"), 24)},
	} {
		if _, err := OpenAllocator("", cidrs); err == nil {
			t.Errorf("%v: accepted", cidrs)
		}
	}
}

func FuzzParseIPAMState(f *testing.F) {
	for _, s := range []string{
		`{"version":1,"pods":{"a":{"netns":"a","ips":["10.0.0.2","fd00::2"]}},"last":{"10.0.0.0/24":"10.0.0.2"}}`,
		`{"version":1,"pods":{}}`, `{"version":1}`, `{}`, `null`, `{"version":1,"pods":{"a":{"ips":["x"]}}}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		st, err := parseIPAMState(data)
		if err != nil {
			return
		}
		// Whatever parses opens as an allocator whose pods keep their addresses.
		path := filepath.Join(t.TempDir(), "ipam.json")
		if err := os.WriteFile(path, data, 0o600); err != nil {
			t.Fatal(err)
		}
		a, err := OpenAllocator(path, mustPrefixes("10.0.0.0/24"))
		if err != nil {
			t.Fatalf("parsed but does not open: %v", err)
		}
		for uid, r := range st.Pods {
			got, ok := a.Lookup(uid)
			if !ok || !slices.Equal(got.IPs, r.IPs) {
				t.Fatalf("pod %s: %v, want %v", uid, got.IPs, r.IPs)
			}
		}
		if r, err := a.Allocate("fuzz-new-pod", ""); err == nil {
			for uid, other := range st.Pods {
				if slices.Contains(other.IPs, r.IPs[0]) && uid != "fuzz-new-pod" {
					t.Fatalf("handed out %s, which pod %s holds", r.IPs[0], uid)
				}
			}
		}
	})
}

// BenchmarkAllocateRelease is one pod's address reserved and released with the state
// on disk (two crash-safe writes).
func BenchmarkAllocateRelease(b *testing.B) {
	a, err := OpenAllocator(filepath.Join(b.TempDir(), "ipam.json"), mustPrefixes("10.0.0.0/16"))
	if err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		if _, err := a.Allocate("bench", ""); err != nil {
			b.Fatal(err)
		}
		if err := a.Release("bench"); err != nil {
			b.Fatal(err)
		}
	}
}
