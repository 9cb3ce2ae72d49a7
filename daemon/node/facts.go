package node

import (
	"fmt"
	"log/slog"
	"net"

	"golang.org/x/sys/unix"

	"github.com/plinth/plinth/kernel/netlink"
	"github.com/plinth/plinth/kernel/sysinfo"
)

// HostFacts is what the Node reports about the machine. GatherHostFacts reads it once
// at start; tests build it by hand.
type HostFacts struct {
	CPUs                  int
	MemoryBytes           uint64
	EphemeralStorageBytes uint64 // capacity of the filesystem holding StateDir
	KernelVersion         string
	OSImage               string
	MachineID             string
	SystemUUID            string // empty when DMI is unreadable
	BootID                string
	InternalIP            net.IP // nil when none is configured or detectable
	// ContainerRuntimeVersion is "<runtime>://<version>" once pods run; GatherHostFacts
	// leaves it empty.
	ContainerRuntimeVersion string
}

// factSources are the readers GatherHostFacts uses, replaceable in tests.
type factSources struct {
	host          sysinfo.Host
	kernelRelease func() (string, error)
	cpuCount      func() int
	filesystem    func(path string) (sysinfo.Filesystem, error)
	routeSource   func(family int) (net.IP, error)
}

// GatherHostFacts reads the facts for cfg's Node from the running system. Capacity
// facts (memory, the StateDir filesystem) and the kernel release are required; the
// descriptive ones (OS image, machine ID, boot ID, system UUID) and a detected
// InternalIP are logged and left empty when unreadable, since a Node without them still
// runs pods.
func GatherHostFacts(cfg Config, logger *slog.Logger) (HostFacts, error) {
	return gatherFacts(cfg, factSources{
		host:          sysinfo.Host{},
		kernelRelease: sysinfo.KernelRelease,
		cpuCount:      sysinfo.CPUCount,
		filesystem:    sysinfo.FilesystemStats,
		routeSource:   netlink.DefaultRouteSource,
	}, logger)
}

func gatherFacts(cfg Config, src factSources, logger *slog.Logger) (HostFacts, error) {
	var f HostFacts
	f.CPUs = src.cpuCount()
	mem, err := src.host.Meminfo()
	if err != nil {
		return HostFacts{}, fmt.Errorf("node facts: memory capacity: %w", err)
	}
	f.MemoryBytes = mem.MemTotal
	if cfg.StateDir == "" {
		return HostFacts{}, fmt.Errorf("node facts: ephemeral-storage capacity: StateDir is empty; want the state directory's path")
	}
	fs, err := src.filesystem(cfg.StateDir)
	if err != nil {
		return HostFacts{}, fmt.Errorf("node facts: ephemeral-storage capacity of StateDir: %w", err)
	}
	f.EphemeralStorageBytes = fs.CapacityBytes
	if f.KernelVersion, err = src.kernelRelease(); err != nil {
		return HostFacts{}, fmt.Errorf("node facts: kernel version: %w", err)
	}

	optional := []struct {
		what string
		dst  *string
		read func() (string, error)
	}{
		{"OS image", &f.OSImage, src.host.OSImage},
		{"machine ID", &f.MachineID, src.host.MachineID},
		{"boot ID", &f.BootID, src.host.BootID},
		{"system UUID", &f.SystemUUID, src.host.SystemUUID},
	}
	for _, o := range optional {
		v, err := o.read()
		if err != nil {
			logger.Warn("node fact unavailable; reporting it empty", "fact", o.what, "err", err)
			continue
		}
		*o.dst = v
	}

	switch {
	case cfg.NodeIP != nil:
		f.InternalIP = cfg.NodeIP
	default:
		ip, err := src.routeSource(unix.AF_INET)
		if err != nil {
			logger.Warn("no InternalIP: NodeIP is not configured and the IPv4 default route gives no source address", "err", err)
			break
		}
		f.InternalIP = ip
	}
	return f, nil
}

// String formats the facts for logs.
func (f HostFacts) String() string {
	return fmt.Sprintf("cpus=%d memory=%d ephemeral-storage=%d kernel=%q os=%q machine-id=%q system-uuid=%q boot-id=%q internal-ip=%v runtime=%q",
		f.CPUs, f.MemoryBytes, f.EphemeralStorageBytes, f.KernelVersion, f.OSImage, f.MachineID, f.SystemUUID, f.BootID, f.InternalIP, f.ContainerRuntimeVersion)
}
