package nodeipam

import (
	"net/netip"
	"strings"
	"testing"
)

func TestParseClusterCIDRs(t *testing.T) {
	for _, tc := range []struct {
		in      string
		want    []string
		wantErr string
	}{
		{in: "", want: nil},
		{in: "10.244.0.0/16", want: []string{"10.244.0.0/16"}},
		{in: " fd00::/48 , 10.244.0.0/16", want: []string{"fd00::/48", "10.244.0.0/16"}},
		{in: "10.244.0.0/16,10.245.0.0/16", wantErr: "--cluster-cidr: \"10.244.0.0/16,10.245.0.0/16\": at most one CIDR per IP family"},
		{in: "10.244.0.1/16", wantErr: "--cluster-cidr: \"10.244.0.1/16\" has host bits set (did you mean 10.244.0.0/16?)"},
		{in: "banana", wantErr: "--cluster-cidr: \"banana\" is not a CIDR"},
		{in: "::ffff:10.0.0.0/104", wantErr: "IPv4-mapped"},
	} {
		got, err := ParseClusterCIDRs(tc.in)
		if tc.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("%q: err = %v, want %q", tc.in, err, tc.wantErr)
			}
			continue
		}
		if err != nil {
			t.Errorf("%q: %v", tc.in, err)
			continue
		}
		var s []string
		for _, p := range got {
			s = append(s, p.String())
		}
		if strings.Join(s, ",") != strings.Join(tc.want, ",") {
			t.Errorf("%q = %v, want %v", tc.in, s, tc.want)
		}
	}
}

func TestValidateNamesTheFlag(t *testing.T) {
	v4, v6 := netip.MustParsePrefix("10.244.0.0/16"), netip.MustParsePrefix("fd00::/56")
	for _, tc := range []struct {
		o       Options
		wantErr string
	}{
		{Options{ClusterCIDRs: []netip.Prefix{v4, v6}, NodeMaskSizeIPv4: 24, NodeMaskSizeIPv6: 64}, ""},
		{Options{NodeMaskSizeIPv4: 99}, ""}, // off: nothing to check a mask against
		{Options{ClusterCIDRs: []netip.Prefix{v4}, NodeMaskSizeIPv4: 8}, "--node-cidr-mask-size: /8 is larger than the cluster CIDR 10.244.0.0/16"},
		{Options{ClusterCIDRs: []netip.Prefix{v4}, NodeMaskSizeIPv4: 33}, "--node-cidr-mask-size: 33 is not a IPv4 prefix length"},
		{Options{ClusterCIDRs: []netip.Prefix{netip.MustParsePrefix("10.0.0.0/8")}, NodeMaskSizeIPv4: 30}, "--node-cidr-mask-size: /30 would cut 10.0.0.0/8"},
		{Options{ClusterCIDRs: []netip.Prefix{v6}, NodeMaskSizeIPv6: 96}, "--node-cidr-mask-size-ipv6: /96 would cut fd00::/56 (--cluster-cidr) into 2^40"},
	} {
		err := tc.o.Validate()
		if tc.wantErr == "" {
			if err != nil {
				t.Errorf("%+v: %v", tc.o, err)
			}
			continue
		}
		if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
			t.Errorf("%+v: err = %v, want %q", tc.o, err, tc.wantErr)
		}
	}
}

// FuzzParseClusterCIDRs: whatever --cluster-cidr says, the parse either fails with an
// error naming the flag, or yields masked CIDRs, at most one per family, that the
// controller's validation accepts with masks as long as the CIDRs themselves.
func FuzzParseClusterCIDRs(f *testing.F) {
	for _, s := range []string{"", "10.244.0.0/16", "10.244.0.0/16,fd00::/48", "10.0.0.1/8", ",", "a,b", "::ffff:1.2.3.4/128", "0.0.0.0/0,::/0"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, in string) {
		got, err := ParseClusterCIDRs(in)
		if err != nil {
			if !strings.HasPrefix(err.Error(), "--cluster-cidr: ") {
				t.Fatalf("error does not name the flag: %v", err)
			}
			return
		}
		if len(got) > 2 {
			t.Fatalf("%d CIDRs", len(got))
		}
		o := Options{ClusterCIDRs: got}
		for _, p := range got {
			if p != p.Masked() {
				t.Fatalf("%s not masked", p)
			}
			if p.Addr().Is4() {
				o.NodeMaskSizeIPv4 = max(p.Bits(), 1)
			} else {
				o.NodeMaskSizeIPv6 = max(p.Bits(), 1)
			}
		}
		if err := o.Validate(); err != nil && !strings.Contains(err.Error(), "prefix length") {
			t.Fatalf("parsed %v but Validate says %v", got, err)
		}
	})
}
