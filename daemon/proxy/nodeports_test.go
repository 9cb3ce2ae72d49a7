package proxy

import (
	"net/netip"
	"slices"
	"strings"
	"testing"
)

func TestParseNodePortAddresses(t *testing.T) {
	for _, tc := range []struct {
		in      []string
		want    []string
		wantErr string
	}{
		{in: nil},
		{in: []string{"primary"}},
		{in: []string{" primary "}},
		{in: []string{"192.0.2.7/24", "2001:db8::1/64"}, want: []string{"192.0.2.0/24", "2001:db8::/64"}},
		{in: []string{"0.0.0.0/0", "::/0"}, want: []string{"0.0.0.0/0", "::/0"}},
		{in: []string{"primary", "10.0.0.0/8"}, wantErr: `[0]: "primary" cannot be combined`},
		{in: []string{"10.0.0.0/8", "primary"}, wantErr: `[1]: "primary" cannot be combined`},
		{in: []string{"10.0.0.1"}, wantErr: `[0]: "10.0.0.1" is neither "primary" nor a CIDR`},
		{in: []string{"127.0.0.0/8"}, wantErr: "loopback"},
		{in: []string{"127.0.0.1/32"}, wantErr: "loopback"},
		{in: []string{"::1/128"}, wantErr: "loopback"},
		{in: []string{"::ffff:10.0.0.0/104"}, wantErr: "IPv4 form"},
		{in: []string{"fe80::%eth0/64"}, wantErr: "CIDR"},
		{in: []string{"10.0.0.0/8", "10.1.0.0/8"}, wantErr: `[1]: "10.1.0.0/8" is given twice`},
	} {
		got, err := ParseNodePortAddresses(tc.in)
		if tc.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("%q: err = %v, want it to contain %q", tc.in, err, tc.wantErr)
			}
			continue
		}
		if err != nil {
			t.Errorf("%q: %v", tc.in, err)
			continue
		}
		var gotText []string
		for _, p := range got {
			gotText = append(gotText, p.String())
		}
		if !slices.Equal(gotText, tc.want) {
			t.Errorf("%q = %v, want %v", tc.in, gotText, tc.want)
		}
	}
}

// FuzzParseNodePortAddresses feeds arbitrary entries (split on newlines). Invariants:
// no panic; an accepted list is primary (nil) or masked, unique, non-loopback,
// unzoned CIDRs whose text parses back to the same list.
func FuzzParseNodePortAddresses(f *testing.F) {
	for _, seed := range []string{
		"", "primary", "192.0.2.0/24\n2001:db8::/64", "primary\n10.0.0.0/8", "127.0.0.1/8",
		"::1/128", "0.0.0.0/0", "10.0.0.1", "::ffff:1.2.3.4/128", "fe80::1%eth0/64", "10.0.0.0/8\n10.0.0.0/8",
		" 10.1.2.3/16 ", "1.2.3.4/33", "primary\nprimary",
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, text string) {
		var in []string
		if text != "" {
			in = strings.Split(text, "\n")
		}
		got, err := ParseNodePortAddresses(in)
		if err != nil {
			if !strings.HasPrefix(err.Error(), "[") {
				t.Fatalf("error %q does not name the entry", err)
			}
			return
		}
		seen := map[netip.Prefix]bool{}
		var again []string
		for _, p := range got {
			if p != p.Masked() || p.Addr().IsLoopback() || p.Addr().Zone() != "" || p.Addr().Is4In6() || seen[p] {
				t.Fatalf("accepted %q as %v", in, got)
			}
			seen[p] = true
			again = append(again, p.String())
		}
		back, err := ParseNodePortAddresses(again)
		if err != nil || !slices.Equal(back, got) {
			t.Fatalf("%v printed as %q parses to %v, %v", got, again, back, err)
		}
	})
}
