//go:build !linux

package features

import "github.com/cilium/ebpf"

func haveBPFMapType(ebpf.MapType) error { return errNotLinux }

func haveBPFProgramType(ebpf.ProgramType) error { return errNotLinux }

func nftablesInFreshNetNS() error { return errNotLinux }

func kernelBTFType(string) error { return errNotLinux }

func loadTpBTF(string) error { return errNotLinux }
