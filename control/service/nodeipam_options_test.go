package service

import (
	"strings"
	"testing"
)

func TestClusterCIDRFlags(t *testing.T) {
	o, err := parseFlags()
	if err != nil || o.NodeIPAM.Enabled() || o.NodeIPAM.NodeMaskSizeIPv4 != 24 || o.NodeIPAM.NodeMaskSizeIPv6 != 64 {
		t.Fatalf("default: %+v, %v; want off with /24 and /64", o.NodeIPAM, err)
	}
	o, err = parseFlags("--cluster-cidr=10.244.0.0/16,fd00:10:244::/56", "--node-cidr-mask-size=26")
	if err != nil || len(o.NodeIPAM.ClusterCIDRs) != 2 || o.NodeIPAM.NodeMaskSizeIPv4 != 26 {
		t.Errorf("dual-stack: %+v, %v", o.NodeIPAM, err)
	}
	for _, tc := range []struct{ args, want string }{
		{"--cluster-cidr=10.244.0.0/33", `--cluster-cidr: "10.244.0.0/33"`},
		{"--cluster-cidr=10.244.0.0/16 --node-cidr-mask-size=12", "--node-cidr-mask-size: /12"},
		{"--cluster-cidr=fd00::/56 --node-cidr-mask-size-ipv6=120", "--node-cidr-mask-size-ipv6: /120"},
		{"--cluster-cidr=10.0.0.0/8", "--cluster-cidr: 10.0.0.0/8 overlaps --service-cluster-ip-range 10.96.0.0/12"},
	} {
		if _, err := parseFlags(strings.Fields(tc.args)...); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want an error containing %q", tc.args, err, tc.want)
		}
	}
}
