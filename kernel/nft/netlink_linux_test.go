//go:build linux

package nft

import (
	"context"
	"fmt"
	"net/netip"
	"os/exec"
	"strings"
	"testing"

	"github.com/plinth/plinth/internal/kerneltest"
)

func newKernel(t *testing.T) (*Netlink, kerneltest.NetNSHandle) {
	t.Helper()
	kerneltest.Require(t, kerneltest.Root, kerneltest.NetNS, kerneltest.NFTables)
	ns := kerneltest.NewNetNS(t)
	return NewNetlink(ns.Path), ns
}

// The kernel holds exactly what the Recorder holds after the same batch: every
// expression and set kind survives the round trip through netlink.
func TestKernelRoundTrip(t *testing.T) {
	ctx := context.Background()
	k, _ := newKernel(t)
	for _, f := range []Family{IPv4, IPv6} {
		b, ref := sampleBatch(f)
		if err := k.Apply(ctx, b); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		rec := NewRecorder()
		if err := rec.Apply(ctx, b); err != nil {
			t.Fatal(err)
		}
		live, ok, err := k.List(ctx, ref)
		if err != nil || !ok {
			t.Fatalf("%s: List: ok=%v err=%v", f, ok, err)
		}
		if got, want := live.String(), rec.Text(ref); got != want {
			t.Errorf("%s: live table differs from the recorded one:\n--- live ---\n%s\n--- recorded ---\n%s", f, got, want)
		}
	}
}

func TestKernelFailedBatchChangesNothingAndSaysWhat(t *testing.T) {
	ctx := context.Background()
	k, _ := newKernel(t)
	b, ref := sampleBatch(IPv4)
	if err := k.Apply(ctx, b); err != nil {
		t.Fatal(err)
	}
	before, _, err := k.List(ctx, ref)
	if err != nil {
		t.Fatal(err)
	}
	var bad Batch
	bad.AddChain(ref, ChainSpec{Name: "new-chain"})
	bad.AddRule(ref, "new-chain", Jump("missing-chain"))
	err = k.Apply(ctx, &bad)
	if err == nil {
		t.Fatal("a jump to a missing chain was applied")
	}
	if !strings.Contains(err.Error(), "nothing applied") || !strings.Contains(err.Error(), "operation 2 of 2 (add rule ip plinth-sample new-chain jump missing-chain)") {
		t.Errorf("error does not say what failed: %v", err)
	}
	after, _, err := k.List(ctx, ref)
	if err != nil {
		t.Fatal(err)
	}
	if before.String() != after.String() {
		t.Errorf("a failed batch changed the table")
	}
}

// A batch far beyond one netlink message and the default socket buffers applies whole.
func TestKernelLargeBatch(t *testing.T) {
	ctx := context.Background()
	k, ns := newKernel(t)
	nsName := ns.Name
	ref := TableRef{Family: IPv4, Name: "plinth-large"}
	var b Batch
	b.AddTable(ref)
	b.AddSet(ref, SetSpec{Name: "m", Key: []DataType{TypeIPv4Addr, TypeInetProto, TypeInetService}, IsMap: true})
	const chains, elems = 5000, 60000
	for i := 0; i < chains; i++ {
		name := fmt.Sprintf("c%d", i)
		b.AddChain(ref, ChainSpec{Name: name})
		b.AddRule(ref, name, Cmp{Field: FieldL4Proto, Value: NumValue(ProtoTCP)}, DNAT{Addr: netip.AddrFrom4([4]byte{10, 1, byte(i >> 8), byte(i)}), Port: 80})
	}
	var es []Element
	for i := 0; i < elems; i++ {
		es = append(es, Element{Key: []Value{AddrValue(netip.AddrFrom4([4]byte{10, 96, byte(i >> 8), byte(i)})), NumValue(ProtoTCP), NumValue(uint32(80 + i%7))},
			Verdict: Goto(fmt.Sprintf("c%d", i%chains)).pointer()})
	}
	b.AddElements(ref, "m", es...)
	if err := k.Apply(ctx, &b); err != nil {
		t.Fatal(err)
	}
	live, ok, err := k.List(ctx, ref)
	if err != nil || !ok {
		t.Fatalf("List: ok=%v err=%v", ok, err)
	}
	if n := len(live.Sets["m"].Elements); n != elems {
		out, _ := exec.Command("ip", "netns", "exec", nsName, "sh", "-c", "nft list map ip plinth-large m | grep -c goto").CombinedOutput()
		t.Logf("nft counts %s", out)
	}
	if len(live.Chains) != chains || len(live.Sets["m"].Elements) != elems {
		t.Fatalf("got %d chains and %d elements, want %d and %d", len(live.Chains), len(live.Sets["m"].Elements), chains, elems)
	}
}

func TestKernelDeleteTables(t *testing.T) {
	ctx := context.Background()
	k, ns := newKernel(t)
	b, ref := sampleBatch(IPv4)
	if err := k.Apply(ctx, b); err != nil {
		t.Fatal(err)
	}
	other := TableRef{Family: IPv6, Name: "plinth-sample"}
	if err := k.DeleteTables(ctx, ref, other); err != nil {
		t.Fatalf("deleting one existing and one missing table: %v", err)
	}
	if _, ok, err := k.List(ctx, ref); err != nil || ok {
		t.Fatalf("table still there (ok=%v err=%v)", ok, err)
	}
	if err := k.DeleteTables(ctx, ref, other); err != nil {
		t.Fatalf("deleting tables that do not exist: %v", err)
	}
	if _, err := exec.LookPath("ip"); err == nil {
		_ = ns
	}
}

// nft (1.0.6 on Debian bookworm) prints what this package writes without error.
func TestKernelNFTPrints(t *testing.T) {
	kerneltest.Require(t, kerneltest.NFTBinary)
	ctx := context.Background()
	k, ns := newKernel(t)
	for _, f := range []Family{IPv4, IPv6} {
		b, _ := sampleBatch(f)
		if err := k.Apply(ctx, b); err != nil {
			t.Fatal(err)
		}
	}
	out := ns.Run(t, "nft", "list", "ruleset")
	t.Logf("nft list ruleset:\n%s", out)
	for _, want := range []string{"table ip plinth-sample", "table ip6 plinth-sample", "numgen random mod 2 vmap", "dnat to 10.1.0.5:8080", "update @affinity-a { ip saddr }", "ip daddr . meta l4proto . th dport vmap @service-ips", "numgen random mod 2 offset 40 map @endpoints"} {
		if !strings.Contains(out, want) {
			t.Errorf("nft list ruleset lacks %q:\n%s", want, out)
		}
	}
}
