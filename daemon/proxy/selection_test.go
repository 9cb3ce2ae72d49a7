package proxy

import (
	"slices"
	"testing"
)

func TestSelectEndpoints(t *testing.T) {
	local := func(addr string) ep { return ep{addr: addr, node: testNode, zone: "z1"} }
	remote := func(addr string) ep { return ep{addr: addr, node: "node-b", zone: "z2"} }
	term := func(e ep) ep { e.notReady, e.terminating = true, true; return e }
	termNotServing := func(e ep) ep { e.notReady, e.notServing, e.terminating = true, true, true; return e }
	notReady := func(e ep) ep { e.notReady, e.notServing = true, true; return e }
	zones := func(e ep, z ...string) ep { e.forZones = z; return e }
	nodes := func(e ep, n ...string) ep { e.forNodes = n; return e }

	for _, tc := range []struct {
		name        string
		eps         []ep
		usesCluster bool
		usesLocal   bool
		zone        string
		wantCluster []string // nil: not asked
		wantLocal   []string
		wantAny     bool
	}{
		{name: "no endpoints", usesCluster: true, usesLocal: true},
		{name: "all ready", eps: []ep{remote("10.0.0.2"), local("10.0.0.1")}, usesCluster: true,
			wantCluster: []string{"10.0.0.1", "10.0.0.2"}, wantAny: true},
		{name: "not ready endpoints are skipped", eps: []ep{remote("10.0.0.2"), notReady(local("10.0.0.1"))}, usesCluster: true,
			wantCluster: []string{"10.0.0.2"}, wantAny: true},
		{name: "terminating unused while a ready endpoint remains", eps: []ep{term(local("10.0.0.1")), remote("10.0.0.2")}, usesCluster: true,
			wantCluster: []string{"10.0.0.2"}, wantAny: true},
		{name: "serving terminating used when none is ready", eps: []ep{term(local("10.0.0.1")), termNotServing(remote("10.0.0.2")), term(remote("10.0.0.3"))},
			usesCluster: true, wantCluster: []string{"10.0.0.1", "10.0.0.3"}, wantAny: true},
		{name: "nothing serving anywhere", eps: []ep{termNotServing(local("10.0.0.1")), notReady(remote("10.0.0.2"))},
			usesCluster: true, usesLocal: true, wantCluster: []string{}, wantLocal: []string{}},
		{name: "zone hints narrow to this zone", zone: "z1", usesCluster: true,
			eps:         []ep{zones(local("10.0.0.1"), "z1"), zones(remote("10.0.0.2"), "z2"), zones(remote("10.0.0.3"), "z1", "z2")},
			wantCluster: []string{"10.0.0.1", "10.0.0.3"}, wantAny: true},
		{name: "zone hints for other zones only fall back to all", zone: "z3", usesCluster: true,
			eps:         []ep{zones(local("10.0.0.1"), "z1"), zones(remote("10.0.0.2"), "z2")},
			wantCluster: []string{"10.0.0.1", "10.0.0.2"}, wantAny: true},
		{name: "one ready endpoint without a zone hint falls back to all", zone: "z1", usesCluster: true,
			eps:         []ep{zones(local("10.0.0.1"), "z1"), remote("10.0.0.2")},
			wantCluster: []string{"10.0.0.1", "10.0.0.2"}, wantAny: true},
		{name: "a not-ready endpoint without hints does not disable hints", zone: "z1", usesCluster: true,
			eps:         []ep{zones(local("10.0.0.1"), "z1"), zones(remote("10.0.0.2"), "z2"), notReady(remote("10.0.0.3"))},
			wantCluster: []string{"10.0.0.1"}, wantAny: true},
		{name: "node without a zone label ignores zone hints", zone: "", usesCluster: true,
			eps:         []ep{zones(local("10.0.0.1"), "z1"), zones(remote("10.0.0.2"), "z2")},
			wantCluster: []string{"10.0.0.1", "10.0.0.2"}, wantAny: true},
		{name: "node hints narrow to this node", zone: "z1", usesCluster: true,
			eps:         []ep{nodes(zones(local("10.0.0.1"), "z1"), testNode), nodes(zones(remote("10.0.0.2"), "z1"), "node-b")},
			wantCluster: []string{"10.0.0.1"}, wantAny: true},
		{name: "node hints for other nodes fall back to zone hints", zone: "z1", usesCluster: true,
			eps:         []ep{nodes(zones(remote("10.0.0.1"), "z1"), "node-c"), nodes(zones(remote("10.0.0.2"), "z2"), "node-b")},
			wantCluster: []string{"10.0.0.1"}, wantAny: true},
		{name: "incomplete node hints fall back to zone hints", zone: "z2", usesCluster: true,
			eps:         []ep{nodes(zones(local("10.0.0.1"), "z1"), testNode), zones(remote("10.0.0.2"), "z2")},
			wantCluster: []string{"10.0.0.2"}, wantAny: true},
		{name: "node hints without zone hints and none for this node use all", zone: "z1", usesCluster: true,
			eps:         []ep{nodes(remote("10.0.0.1"), "node-b"), nodes(remote("10.0.0.2"), "node-c")},
			wantCluster: []string{"10.0.0.1", "10.0.0.2"}, wantAny: true},
		{name: "hints are ignored when falling back to terminating endpoints", zone: "z1", usesCluster: true,
			eps:         []ep{term(zones(remote("10.0.0.1"), "z2")), term(zones(remote("10.0.0.2"), "z1"))},
			wantCluster: []string{"10.0.0.1", "10.0.0.2"}, wantAny: true},
		{name: "local ready endpoints", usesLocal: true,
			eps:       []ep{local("10.0.0.1"), remote("10.0.0.2"), term(local("10.0.0.3"))},
			wantLocal: []string{"10.0.0.1"}, wantAny: true},
		{name: "local serving terminating when no local one is ready", usesLocal: true,
			eps:       []ep{term(local("10.0.0.1")), remote("10.0.0.2"), notReady(local("10.0.0.3"))},
			wantLocal: []string{"10.0.0.1"}, wantAny: true},
		{name: "no local endpoints but some elsewhere", usesLocal: true,
			eps:       []ep{remote("10.0.0.2"), notReady(local("10.0.0.1"))},
			wantLocal: []string{}, wantAny: true},
		{name: "no local endpoints, only terminating elsewhere", usesLocal: true,
			eps:       []ep{term(remote("10.0.0.2"))},
			wantLocal: []string{}, wantAny: true},
		{name: "cluster and local together: hints narrow cluster, not local", zone: "z2", usesCluster: true, usesLocal: true,
			eps:         []ep{zones(local("10.0.0.1"), "z1"), zones(remote("10.0.0.2"), "z2")},
			wantCluster: []string{"10.0.0.2"}, wantLocal: []string{"10.0.0.1"}, wantAny: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var cands []candidate
			for _, e := range tc.eps {
				cands = append(cands, e.cand())
			}
			slices.SortFunc(cands, func(a, b candidate) int { return compareEndpoints(a.Endpoint, b.Endpoint) })
			got := selectEndpoints(cands, tc.usesCluster, tc.usesLocal, testNode, tc.zone)
			check := func(what string, gotEps []string, gotNil bool, want []string) {
				t.Helper()
				if want == nil {
					if !gotNil {
						t.Errorf("%s = %v, want nil (not asked)", what, gotEps)
					}
					return
				}
				if !slices.Equal(gotEps, want) {
					t.Errorf("%s = %v, want %v", what, gotEps, want)
				}
			}
			if len(tc.eps) > 0 || tc.wantCluster != nil {
				check("cluster", addrs(got.cluster), got.cluster == nil, tc.wantCluster)
				check("local", addrs(got.local), got.local == nil, tc.wantLocal)
			} else if got.cluster != nil || got.local != nil {
				t.Errorf("no endpoints selected %v / %v", got.cluster, got.local)
			}
			if got.hasAny != tc.wantAny {
				t.Errorf("hasAny = %v, want %v", got.hasAny, tc.wantAny)
			}
		})
	}
}
