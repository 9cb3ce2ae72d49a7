package ringevents

import (
	"context"
	"encoding/binary"
	"fmt"
	"log/slog"
	"testing"
	"time"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/asm"

	"github.com/plinth/plinth/internal/kerneltest"
)

// ringWriter returns a ring buffer and a program that writes the 8-byte value 42 to it
// each time it is run.
func ringWriter(t *testing.T) (*ebpf.Map, *ebpf.Program) {
	ring, err := ebpf.NewMap(&ebpf.MapSpec{Type: ebpf.RingBuf, MaxEntries: 4096})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ring.Close() })
	prog, err := ebpf.NewProgram(&ebpf.ProgramSpec{
		Type:    ebpf.SocketFilter,
		License: "GPL",
		Instructions: asm.Instructions{
			asm.Mov.Imm(asm.R1, 42),
			asm.StoreMem(asm.RFP, -8, asm.R1, asm.DWord),
			asm.LoadMapPtr(asm.R1, ring.FD()),
			asm.Mov.Reg(asm.R2, asm.RFP),
			asm.Add.Imm(asm.R2, -8),
			asm.Mov.Imm(asm.R3, 8),
			asm.Mov.Imm(asm.R4, 0),
			asm.FnRingbufOutput.Call(),
			asm.Mov.Imm(asm.R0, 0),
			asm.Return(),
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { prog.Close() })
	return ring, prog
}

func decodeU64(b []byte) (uint64, error) {
	if len(b) < 8 {
		return 0, fmt.Errorf("%d bytes", len(b))
	}
	return binary.NativeEndian.Uint64(b), nil
}

// Close must not wait for a consumer that stopped receiving: the reader goroutine is
// blocked handing over the second record when Close is called.
func TestCloseWhileSendBlocked(t *testing.T) {
	kerneltest.Require(t, kerneltest.Root)
	ring, prog := ringWriter(t)
	r, err := New(ring, decodeU64, slog.New(slog.NewTextHandler(t.Output(), nil)))
	if err != nil {
		t.Fatal(err)
	}
	events := r.Events(context.Background())
	for range 2 {
		if _, err := prog.Run(&ebpf.RunOptions{Data: make([]byte, 14)}); err != nil {
			t.Fatal(err)
		}
	}
	select {
	case v := <-events:
		if v != 42 {
			t.Fatalf("got %d, want 42", v)
		}
	case <-time.After(2 * time.Second):
		t.Fatal("no record within 2 s")
	}

	closed := make(chan error, 1)
	go func() { closed <- r.Close() }()
	select {
	case err := <-closed:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(2 * time.Second):
		t.Fatal("Close still waiting 2 s later")
	}
	// The channel ends; the undelivered second record may or may not come first.
	for range events {
	}
}
