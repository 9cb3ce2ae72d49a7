//go:build linux

package features

import (
	"errors"
	"fmt"
	"os"
	"runtime"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/asm"
	"github.com/cilium/ebpf/btf"
	ebpffeatures "github.com/cilium/ebpf/features"
	gnft "github.com/google/nftables"
	"golang.org/x/sys/unix"
)

func haveBPFMapType(mt ebpf.MapType) error { return ebpffeatures.HaveMapType(mt) }

func haveBPFProgramType(pt ebpf.ProgramType) error { return ebpffeatures.HaveProgramType(pt) }

func loadTpBTF(tracepoint string) error {
	prog, err := ebpf.NewProgram(&ebpf.ProgramSpec{
		Type: ebpf.Tracing, AttachType: ebpf.AttachTraceRawTp, AttachTo: tracepoint,
		Instructions: asm.Instructions{asm.Mov.Imm(asm.R0, 0), asm.Return()},
		License:      "GPL",
	})
	if err != nil {
		return err
	}
	return prog.Close()
}

func kernelBTFType(name string) error {
	spec, err := btf.LoadKernelSpec()
	if err != nil {
		return fmt.Errorf("kernel BTF: %w", err)
	}
	if _, err := spec.AnyTypeByName(name); err != nil {
		return fmt.Errorf("kernel BTF has no %s: %w", name, err)
	}
	return nil
}

// probeTable is the table the nftables probe creates, in a namespace nobody else sees.
const probeTable = "plinth-preflight"

// nftablesInFreshNetNS creates a table with a NAT chain through netlink in a new
// network namespace, owned by one OS thread that never returns to the pool: the
// namespace (and the table in it) vanishes when the thread exits, even if the probe
// fails half way, so nothing reaches the host's namespace.
func nftablesInFreshNetNS() error {
	done := make(chan error, 1)
	go func() {
		// Never unlocked: the thread leaves the host's network namespace and must die
		// with this goroutine.
		runtime.LockOSThread()
		if err := unix.Unshare(unix.CLONE_NEWNET); err != nil {
			done <- fmt.Errorf("new network namespace: %w", err)
			return
		}
		ns, err := os.Open("/proc/thread-self/ns/net")
		if err != nil {
			done <- err
			return
		}
		defer ns.Close()
		done <- createProbeTable(int(ns.Fd()))
	}()
	return <-done
}

func createProbeTable(nsFD int) error {
	c, err := gnft.New(gnft.WithNetNSFd(nsFD))
	if err != nil {
		return fmt.Errorf("nftables netlink socket: %w", err)
	}
	t := c.AddTable(&gnft.Table{Family: gnft.TableFamilyIPv4, Name: probeTable})
	c.AddChain(&gnft.Chain{Name: "nat-prerouting", Table: t, Type: gnft.ChainTypeNAT,
		Hooknum: gnft.ChainHookPrerouting, Priority: gnft.ChainPriorityNATDest})
	if err := c.Flush(); err != nil {
		return fmt.Errorf("creating table ip %s with a nat chain (kernel without nf_tables or nft_chain_nat?): %w", probeTable, err)
	}
	tables, err := c.ListTablesOfFamily(gnft.TableFamilyIPv4)
	if err != nil {
		return fmt.Errorf("listing nftables tables: %w", err)
	}
	for _, got := range tables {
		if got.Name == probeTable {
			return nil
		}
	}
	return errors.New("the table created was not listed back")
}
