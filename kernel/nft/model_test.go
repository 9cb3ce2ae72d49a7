package nft

import (
	"context"
	"errors"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
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
		t.Errorf("%s differs from the golden file (run with -update after checking):\n--- got ---\n%s\n--- want ---\n%s", path, got, want)
	}
}

func TestRecorderRendersEveryExpression(t *testing.T) {
	for _, f := range []Family{IPv4, IPv6} {
		b, ref := sampleBatch(f)
		r := NewRecorder()
		if err := r.Apply(context.Background(), b); err != nil {
			t.Fatal(err)
		}
		golden(t, "sample-"+f.String(), r.Text(ref))
	}
}

func TestModelRejectsInvalidBatchesAtomically(t *testing.T) {
	ctx := context.Background()
	b, ref := sampleBatch(IPv4)
	r := NewRecorder()
	if err := r.Apply(ctx, b); err != nil {
		t.Fatal(err)
	}
	before := r.Text(ref)
	cases := map[string]func(b *Batch){
		"jump to a missing chain":   func(b *Batch) { b.AddRule(ref, "svc", Jump("nope")) },
		"delete a referenced chain": func(b *Batch) { b.DeleteChain(ref, "ep-a") },
		"delete a referenced set":   func(b *Batch) { b.DeleteSet(ref, "service-ips") },
		"change an element's data": func(b *Batch) {
			b.AddElements(ref, "service-ips", Element{Key: []Value{AddrValue(mustAddr("10.96.0.10")), NumValue(ProtoTCP), NumValue(80)}, Verdict: Goto("ep-b").pointer()})
		},
		"delete a missing element": func(b *Batch) {
			b.DeleteElements(ref, "nodeport-ips", Element{Key: []Value{AddrValue(mustAddr("192.0.2.99"))}})
		},
		"wrong key arity": func(b *Batch) {
			b.AddRule(ref, "svc", Lookup{Fields: []Field{FieldDaddr, FieldL4Proto}, Set: "nodeport-ips"})
		},
		"update a static set": func(b *Batch) {
			b.AddRule(ref, "svc", UpdateSet{Set: "nodeport-ips", Field: FieldSaddr})
		},
	}
	for name, mutate := range cases {
		var bad Batch
		bad.AddChain(ref, ChainSpec{Name: "created-before-the-failure"})
		mutate(&bad)
		err := r.Apply(ctx, &bad)
		if err == nil {
			t.Errorf("%s: applied", name)
			continue
		}
		if !strings.Contains(err.Error(), "batch operation 2 of 2") {
			t.Errorf("%s: error does not name the failing operation: %v", name, err)
		}
		if got := r.Text(ref); got != before {
			t.Errorf("%s: a failed batch changed the table", name)
		}
	}
	// Deleting a chain that is no longer referenced works.
	var ok Batch
	ok.FlushChain(ref, "svc")
	ok.DeleteChain(ref, "ep-b")
	if err := r.Apply(ctx, &ok); err != nil {
		t.Fatal(err)
	}
	injected := errors.New("injected")
	r.FailNext = injected
	if err := r.Apply(ctx, &ok); !errors.Is(err, injected) {
		t.Fatalf("FailNext: got %v", err)
	}
}
