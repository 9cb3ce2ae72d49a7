package nftrules

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	clocktesting "k8s.io/utils/clock/testing"

	"github.com/plinth/plinth/daemon/proxy/desired"
	"github.com/plinth/plinth/kernel/nft"
	"github.com/plinth/plinth/kernel/nft/nftsim"
)

var update = flag.Bool("update", false, "rewrite testdata/*.golden from the current output")

func golden(t *testing.T, name, got string) {
	t.Helper()
	path := filepath.Join("testdata", name+".golden")
	if *update {
		if err := os.MkdirAll("testdata", 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run with -update to create it)", err)
	}
	if got != string(want) {
		t.Errorf("%s differs (run with -update after checking):\n--- got ---\n%s\n--- want ---\n%s", path, got, want)
	}
}

var both = []nft.TableRef{tableRef(desired.IPv4), tableRef(desired.IPv6)}

func newTestSyncer() (*Syncer, *nft.Recorder, *clocktesting.FakeClock) {
	rec := nft.NewRecorder()
	clk := clocktesting.NewFakeClock(time.Date(2026, 11, 26, 10, 0, 0, 0, time.UTC))
	return New(rec, clk), rec, clk
}

// Every shape alone, as golden text: what each kind of Service becomes.
func TestGoldenPerShape(t *testing.T) {
	for name, sp := range shapes() {
		t.Run(name, func(t *testing.T) {
			s, rec, _ := newTestSyncer()
			snap := snapshotOf(map[string]desired.ServicePort{name: sp})
			if err := s.Sync(context.Background(), snap, desired.Changes{Full: true}); err != nil {
				t.Fatal(err)
			}
			golden(t, "shape-"+name, serviceText(rec.Text(both...)))
		})
	}
}

// The whole table with every shape, including the fixed chains.
func TestGoldenAllShapes(t *testing.T) {
	s, rec, _ := newTestSyncer()
	if err := s.Sync(context.Background(), snapshotOf(shapes()), desired.Changes{Full: true}); err != nil {
		t.Fatal(err)
	}
	golden(t, "all-shapes", rec.Text(both...))
	ops := rec.Batches()[0]
	if ops[0] != "add table ip plinth" || ops[1] != "delete table ip plinth" {
		t.Errorf("the first sync does not start from a clean table: %v", ops[:3])
	}
}

// serviceText keeps what a service adds to the tables: its own chains (their names
// carry namespace/name) and the sets and maps that hold elements, so each shape's
// golden file shows just that shape.
func serviceText(s string) string {
	var out []string
	lines := strings.Split(s, "\n")
	for i := 0; i < len(lines); i++ {
		line := lines[i]
		f := strings.Fields(line)
		if len(f) < 2 || !strings.HasPrefix(line, "\t") || strings.HasPrefix(line, "\t\t") {
			if strings.HasPrefix(line, "table ") || line == "}" {
				out = append(out, line)
			}
			continue
		}
		j := i
		for j < len(lines) && lines[j] != "\t}" {
			j++
		}
		block := lines[i : j+1]
		keep := false
		switch f[0] {
		case "chain":
			keep = strings.Contains(f[1], "/")
		case "set", "map":
			keep = strings.Contains(f[1], "/") || strings.Contains(strings.Join(block, "\n"), "elements = {")
		}
		if keep {
			out = append(out, block...)
		}
		i = j
	}
	return strings.Join(out, "\n") + "\n"
}

// A chain of partial syncs ends with exactly the table a full sync of the final state
// writes, and each partial sync sends only what changed.
func TestPartialSyncsConvergeOnFullSync(t *testing.T) {
	ctx := context.Background()
	s, rec, clk := newTestSyncer()
	all := shapes()
	if err := s.Sync(ctx, snapshotOf(all), desired.Changes{Full: true}); err != nil {
		t.Fatal(err)
	}
	steps := []struct {
		name   string
		mutate func(m map[string]desired.ServicePort)
		change []string
	}{
		{"scale clusterip to one endpoint", func(m map[string]desired.ServicePort) {
			sp := m["clusterip"]
			sp.ClusterEndpoints = sp.ClusterEndpoints[:1]
			sp.ExternalEndpoints = sp.ExternalEndpoints[:1]
			m["clusterip"] = sp
		}, []string{"clusterip"}},
		{"give no-endpoints an endpoint", func(m map[string]desired.ServicePort) {
			sp := m["no-endpoints"]
			sp.ClusterEndpoints = []desired.Endpoint{ep("10.244.2.7", 80, "node-a", false)}
			sp.ExternalEndpoints = sp.ClusterEndpoints
			m["no-endpoints"] = sp
		}, []string{"no-endpoints"}},
		{"delete the load balancer", func(m map[string]desired.ServicePort) { delete(m, "loadbalancer") }, []string{"loadbalancer"}},
		{"add a service", func(m map[string]desired.ServicePort) {
			m["new"] = desired.ServicePort{ClusterIP: a("10.96.0.99"), Port: 8443, NodePort: 31000,
				ClusterEndpoints: []desired.Endpoint{ep("10.244.3.9", 8443, "node-b", false)}, ExternalEndpoints: []desired.Endpoint{ep("10.244.3.9", 8443, "node-b", false)}}
		}, []string{"new"}},
		{"change affinity timeout", func(m map[string]desired.ServicePort) {
			sp := m["affinity"]
			sp.SessionAffinity = time.Minute
			m["affinity"] = sp
		}, []string{"affinity"}},
		{"nothing changed but listed", func(map[string]desired.ServicePort) {}, []string{"udp-dns"}},
	}
	for _, step := range steps {
		step.mutate(all)
		changed := map[desired.ServicePortName]bool{}
		for _, n := range step.change {
			changed[pn(n, "http", protoOfShape(n))] = true
		}
		before := len(rec.Batches())
		if err := s.Sync(ctx, snapshotOf(all), desired.Changes{Changed: changed}); err != nil {
			t.Fatalf("%s: %v", step.name, err)
		}
		if len(rec.Batches()) != before+1 {
			t.Fatalf("%s: want exactly one batch", step.name)
		}
		ops := rec.Batches()[len(rec.Batches())-1]
		for _, op := range ops {
			if strings.Contains(op, "add table") || strings.Contains(op, "flush set") {
				t.Errorf("%s: a partial sync rewrote more than the change: %q", step.name, op)
			}
		}
		if step.name == "nothing changed but listed" && len(ops) != 0 {
			t.Errorf("%s: sent %d operations: %v", step.name, len(ops), ops)
		}

		// Later the cleanup drops replaced rules, stale chains and elements; then the
		// table equals a fresh full sync of the same state.
		clk.Step(garbageMaxAge)
		if err := s.Sync(ctx, snapshotOf(all), desired.Changes{}); err != nil {
			t.Fatalf("%s: cleanup: %v", step.name, err)
		}
		fresh, frec, _ := newTestSyncer()
		if err := fresh.Sync(ctx, snapshotOf(all), desired.Changes{Full: true}); err != nil {
			t.Fatal(err)
		}
		got := resolveEndpointBlocks(withoutStale(rec.Text(both...), s))
		if want := resolveEndpointBlocks(frec.Text(both...)); got != want {
			t.Fatalf("%s: partial syncs diverged from a full sync:\n--- partial ---\n%s\n--- full ---\n%s", step.name, got, want)
		}
		clk.Step(300 * time.Millisecond)
	}
	// After a second, the stale chains and sets go on the next sync.
	clk.Step(StaleChainDelay)
	if err := s.Sync(ctx, snapshotOf(all), desired.Changes{}); err != nil {
		t.Fatal(err)
	}
	fresh, frec, _ := newTestSyncer()
	if err := fresh.Sync(ctx, snapshotOf(all), desired.Changes{Full: true}); err != nil {
		t.Fatal(err)
	}
	if got, want := resolveEndpointBlocks(rec.Text(both...)), resolveEndpointBlocks(frec.Text(both...)); got != want {
		t.Fatalf("stale chains were not deleted after %v:\n%s", StaleChainDelay, got)
	}
}

func protoOfShape(n string) desired.Protocol {
	switch n {
	case "udp-dns":
		return desired.UDP
	case "sctp":
		return desired.SCTP
	}
	return desired.TCP
}

// resolveEndpointBlocks rewrites "numgen random mod N offset O map @service-endpoints"
// into the endpoints it picks from and drops the map, so tables that number their
// endpoint blocks differently (partial syncs reuse and append, a full sync renumbers)
// compare equal when they choose among the same endpoints.
func resolveEndpointBlocks(text string) string {
	var sections []string
	for _, sec := range strings.SplitAfter(text, "\n}\n") {
		sections = append(sections, resolveTableBlocks(sec))
	}
	return strings.Join(sections, "")
}

func resolveTableBlocks(text string) string {
	var out []string
	lines := strings.Split(text, "\n")
	table := map[string]string{}
	var body []string
	for i := 0; i < len(lines); i++ {
		line := lines[i]
		if f := strings.Fields(line); len(f) == 3 && f[0] == "map" && strings.HasPrefix(f[1], endpointMapPrefix) {
			name := f[1]
			for ; i < len(lines) && lines[i] != "\t}"; i++ {
				f := strings.SplitN(strings.TrimSpace(strings.TrimSuffix(lines[i], ",")), " : ", 2)
				if len(f) == 2 && strings.HasPrefix(f[0], "0x") {
					k, _ := strconv.ParseUint(f[0][2:], 16, 32)
					table[fmt.Sprintf("%s/%d", name, k)] = f[1]
				}
			}
			i++ // blank line
			continue
		}
		body = append(body, line)
	}
	for _, line := range body {
		if i := strings.Index(line, "numgen random mod "); i >= 0 && strings.Contains(line, "map @"+endpointMapPrefix) {
			var n, off uint64
			var m string
			fmt.Sscanf(line[i:], "numgen random mod %d offset %d map @%s", &n, &off, &m)
			var eps []string
			for k := off; k < off+n; k++ {
				eps = append(eps, table[fmt.Sprintf("%s/%d", m, k)])
			}
			line = line[:i] + "one of {" + strings.Join(eps, ", ") + "}"
		}
		out = append(out, line)
	}
	return strings.Join(out, "\n")
}

// withoutStale removes the (flushed, empty) stale chains and sets from the text.
func withoutStale(text string, s *Syncer) string {
	stale := map[string]bool{}
	for _, ct := range s.tables {
		for c := range ct.stale {
			stale[c] = true
		}
		for c := range ct.staleSets {
			stale[c] = true
		}
	}
	var out []string
	lines := strings.Split(text, "\n")
	for i := 0; i < len(lines); i++ {
		trim := strings.TrimSpace(lines[i])
		f := strings.Fields(trim)
		if len(f) >= 2 && (f[0] == "chain" || f[0] == "set") && stale[f[1]] {
			for i < len(lines) && lines[i] != "\t}" {
				i++
			}
			i++ // the blank line after
			continue
		}
		out = append(out, lines[i])
	}
	return strings.Join(out, "\n")
}

// A failed apply leaves the committed record unused: the next sync is a full one.
func TestFailedSyncForcesFullSync(t *testing.T) {
	ctx := context.Background()
	s, rec, _ := newTestSyncer()
	all := shapes()
	if err := s.Sync(ctx, snapshotOf(all), desired.Changes{Full: true}); err != nil {
		t.Fatal(err)
	}
	rec.FailNext = errors.New("injected")
	delete(all, "clusterip")
	changed := map[desired.ServicePortName]bool{pn("clusterip", "http", desired.TCP): true}
	if err := s.Sync(ctx, snapshotOf(all), desired.Changes{Changed: changed}); err == nil {
		t.Fatal("want the injected error")
	}
	if err := s.Sync(ctx, snapshotOf(all), desired.Changes{}); err != nil {
		t.Fatal(err)
	}
	ops := rec.Batches()[len(rec.Batches())-1]
	if ops[1] != "delete table ip plinth" {
		t.Errorf("the sync after a failure was not a full rebuild: %v", ops[:2])
	}
	if strings.Contains(rec.Text(both...), "10.96.0.10") {
		t.Error("the deleted service is still programmed")
	}
}

func TestCleanup(t *testing.T) {
	ctx := context.Background()
	s, rec, _ := newTestSyncer()
	if err := s.Cleanup(ctx); err != nil {
		t.Fatalf("cleanup without tables: %v", err)
	}
	if err := s.Sync(ctx, snapshotOf(shapes()), desired.Changes{Full: true}); err != nil {
		t.Fatal(err)
	}
	if err := s.Cleanup(ctx); err != nil {
		t.Fatal(err)
	}
	if txt := rec.Text(both...); txt != "" {
		t.Fatalf("tables left after cleanup:\n%s", txt)
	}
	var out strings.Builder
	if err := Dump(ctx, rec, &out); err != nil || !strings.Contains(out.String(), "no plinth tables") {
		t.Fatalf("Dump after cleanup: %q %v", out.String(), err)
	}
}

// Shrinking the service count shrinks the number of endpoint maps; the extra maps are
// emptied at once and deleted a second later, and every step is valid for the kernel's
// rules (the Recorder refuses deleting a set a rule still uses).
func TestEndpointMapsFollowTheServiceCount(t *testing.T) {
	ctx := context.Background()
	s, rec, clk := newTestSyncer()
	many := map[string]desired.ServicePort{}
	for i := 0; i < 3*servicesPerEndpointMap; i++ {
		many[fmt.Sprintf("svc%d", i)] = desired.ServicePort{ClusterIP: netip.AddrFrom4([4]byte{10, 96, 1, byte(i)}), Port: 80,
			ClusterEndpoints: []desired.Endpoint{ep("10.244.2.7", 8080, "node-a", false)}}
	}
	if err := s.Sync(ctx, snapshotOf(many), desired.Changes{Full: true}); err != nil {
		t.Fatal(err)
	}
	countMaps := func() int {
		return strings.Count(rec.Text(tableRef(desired.IPv4)), "map "+endpointMapPrefix)
	}
	if got := countMaps(); got != 3 {
		t.Fatalf("%d endpoint maps for %d service ports, want 3", got, len(many))
	}
	few := map[string]desired.ServicePort{"svc1": many["svc1"]}
	if err := s.Sync(ctx, snapshotOf(few), desired.Changes{Full: true}); err != nil {
		t.Fatal(err)
	}
	clk.Step(StaleChainDelay)
	if err := s.Sync(ctx, snapshotOf(few), desired.Changes{}); err != nil {
		t.Fatal(err)
	}
	if got := countMaps(); got != 1 {
		t.Fatalf("%d endpoint maps after shrinking to one service, want 1", got)
	}
}

// Two services claiming one external address and port: the first by name keeps it,
// the sync succeeds, and the other takes it over once the first lets go.
func TestConflictingAddressesFirstWins(t *testing.T) {
	ctx := context.Background()
	s, rec, _ := newTestSyncer()
	ext := []netip.Addr{a("198.51.100.9")}
	eps := []desired.Endpoint{ep("10.244.2.7", 8080, "node-a", false)}
	svcs := map[string]desired.ServicePort{
		"a": {ClusterIP: a("10.96.0.1"), Port: 80, ExternalIPs: ext, ClusterEndpoints: eps, ExternalEndpoints: eps},
		"b": {ClusterIP: a("10.96.0.2"), Port: 80, ExternalIPs: ext, ClusterEndpoints: eps, ExternalEndpoints: eps},
	}
	if err := s.Sync(ctx, snapshotOf(svcs), desired.Changes{Full: true}); err != nil {
		t.Fatal(err)
	}
	if txt := rec.Text(tableRef(desired.IPv4)); !strings.Contains(txt, "198.51.100.9 . tcp . 80 : goto external-") || !strings.Contains(txt, "ns/a/") {
		t.Fatalf("external IP not programmed for the first service:\n%s", txt)
	}
	delete(svcs, "a")
	changed := map[desired.ServicePortName]bool{pn("a", "http", desired.TCP): true, pn("b", "http", desired.TCP): true}
	if err := s.Sync(ctx, snapshotOf(svcs), desired.Changes{Changed: changed}); err != nil {
		t.Fatal(err)
	}
	sim := nftsim.New(rec.Tables(), nft.IPv4)
	sim.Local = []netip.Addr{nodeIP}
	res := sim.Send(tcp(otherHost, a("198.51.100.9"), 80), nftsim.FromNetwork)
	if !res.DNAT || !strings.Contains(nftsim.TraceText(res), "ns/b/") {
		t.Fatalf("after a went away, the external IP does not reach b: %s via %s", res, nftsim.TraceText(res))
	}
}

// A periodic full resync over a live table (with stale chains pending and affinity
// sets in use) is valid, keeps the affinity sets, and converges.
func TestFullResyncOverLiveTable(t *testing.T) {
	ctx := context.Background()
	s, rec, clk := newTestSyncer()
	all := shapes()
	if err := s.Sync(ctx, snapshotOf(all), desired.Changes{Full: true}); err != nil {
		t.Fatal(err)
	}
	delete(all, "loadbalancer")
	changed := map[desired.ServicePortName]bool{pn("loadbalancer", "http", desired.TCP): true}
	if err := s.Sync(ctx, snapshotOf(all), desired.Changes{Changed: changed}); err != nil {
		t.Fatal(err)
	}
	if err := s.Sync(ctx, snapshotOf(all), desired.Changes{Full: true}); err != nil {
		t.Fatalf("full resync with stale chains pending: %v", err)
	}
	for _, op := range rec.Batches()[len(rec.Batches())-1] {
		if strings.HasPrefix(op, "delete table") || (strings.HasPrefix(op, "flush set") && strings.Contains(op, affinityPrefix)) {
			t.Errorf("a full resync over a live table sent %q", op)
		}
	}
	clk.Step(StaleChainDelay)
	if err := s.Sync(ctx, snapshotOf(all), desired.Changes{Full: true}); err != nil {
		t.Fatal(err)
	}
	fresh, frec, _ := newTestSyncer()
	if err := fresh.Sync(ctx, snapshotOf(all), desired.Changes{Full: true}); err != nil {
		t.Fatal(err)
	}
	if got, want := resolveEndpointBlocks(rec.Text(both...)), resolveEndpointBlocks(frec.Text(both...)); got != want {
		t.Fatalf("full resyncs did not converge:\n--- resynced ---\n%s\n--- fresh ---\n%s", got, want)
	}
}

// Bad input is refused with the port, the field and the value, and changes nothing.
func TestBadInputChangesNothing(t *testing.T) {
	ctx := context.Background()
	s, rec, _ := newTestSyncer()
	all := shapes()
	if err := s.Sync(ctx, snapshotOf(all), desired.Changes{Full: true}); err != nil {
		t.Fatal(err)
	}
	before := len(rec.Batches())
	cases := map[string]func(sp *desired.ServicePort){
		"field Family: 0":                      func(sp *desired.ServicePort) { sp.Family = 0 },
		`field Protocol: "ICMP"`:               func(sp *desired.ServicePort) { sp.Protocol = "ICMP" },
		"field ClusterIP: fd00::1":             func(sp *desired.ServicePort) { sp.ClusterIP = a("fd00::1") },
		"field Port: 0":                        func(sp *desired.ServicePort) { sp.Port = 0 },
		"field endpoints[0]: invalid AddrPort": func(sp *desired.ServicePort) { sp.ClusterEndpoints = []desired.Endpoint{{Port: 8080}} },
	}
	for want, mutate := range cases {
		for _, full := range []bool{false, true} {
			snap := snapshotOf(all)
			name := pn("clusterip", "http", desired.TCP)
			sp := snap.Services[name][0]
			mutate(&sp)
			snap.Services[name] = []desired.ServicePort{sp}
			err := s.Sync(ctx, snap, desired.Changes{Full: full, Changed: map[desired.ServicePortName]bool{name: true}})
			if err == nil || !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), "ns/clusterip") {
				t.Errorf("%s (full %v): got %v", want, full, err)
			}
		}
	}
	if len(rec.Batches()) != before {
		t.Error("bad input reached the kernel")
	}
}

// A service deleted and added back before the cleanup keeps working after it: its
// endpoint range, pending deletion, is kept instead.
func TestServiceBackBeforeCleanup(t *testing.T) {
	ctx := context.Background()
	s, rec, clk := newTestSyncer()
	all := shapes()
	if err := s.Sync(ctx, snapshotOf(all), desired.Changes{Full: true}); err != nil {
		t.Fatal(err)
	}
	name := pn("clusterip", "http", desired.TCP)
	changed := map[desired.ServicePortName]bool{name: true}
	sp := all["clusterip"]
	delete(all, "clusterip")
	if err := s.Sync(ctx, snapshotOf(all), desired.Changes{Changed: changed}); err != nil {
		t.Fatal(err)
	}
	all["clusterip"] = sp
	if err := s.Sync(ctx, snapshotOf(all), desired.Changes{Changed: changed}); err != nil {
		t.Fatal(err)
	}
	clk.Step(garbageMaxAge)
	if err := s.Sync(ctx, snapshotOf(all), desired.Changes{}); err != nil {
		t.Fatal(err)
	}
	sim := nftsim.New(rec.Tables(), nft.IPv4)
	sim.Local = []netip.Addr{nodeIP}
	for k := 0; k < 2; k++ {
		pick := k
		sim.Pick = steer(&pick)
		res := sim.Send(tcp(localPod, a("10.96.0.10"), 80), nftsim.FromNetwork)
		if !res.DNAT {
			t.Fatalf("after the cleanup, endpoint %d of the re-added service is unreachable: %s via %s", k, res, nftsim.TraceText(res))
		}
	}
}

// An endpoint chain that went stale while a replaced (unreachable, not yet collected)
// rule still jumps to it is deleted only after that rule: the kernel refuses deleting
// a chain something jumps to (the Recorder too). Found by the kernel traffic test.
func TestStaleEndpointChainWaitsForReplacedRules(t *testing.T) {
	ctx := context.Background()
	s, _, clk := newTestSyncer()
	all := shapes()
	if err := s.Sync(ctx, snapshotOf(all), desired.Changes{Full: true}); err != nil {
		t.Fatal(err)
	}
	sp := all["affinity"] // a local endpoint: its own chain, jumped to from the service chain
	sp.ClusterEndpoints = sp.ClusterEndpoints[1:]
	sp.ExternalEndpoints = sp.ExternalEndpoints[1:]
	all["affinity"] = sp
	changed := map[desired.ServicePortName]bool{pn("affinity", "http", desired.TCP): true}
	if err := s.Sync(ctx, snapshotOf(all), desired.Changes{Changed: changed}); err != nil {
		t.Fatal(err)
	}
	clk.Step(StaleChainDelay)
	if err := s.Sync(ctx, snapshotOf(all), desired.Changes{}); err != nil {
		t.Fatalf("deleting the stale endpoint chain: %v", err)
	}
}
