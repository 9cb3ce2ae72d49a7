package bundle

import (
	"fmt"
	"slices"
	"strings"

	specs "github.com/opencontainers/runtime-spec/specs-go"
	corev1 "k8s.io/api/core/v1"
)

// security is the container's effective security settings: the container's
// securityContext over the pod's.
type security struct {
	privileged      bool
	runAsUser       *int64
	runAsGroup      *int64
	runAsNonRoot    bool
	readOnlyRoot    bool
	noNewPrivileges bool
	unmaskedProc    bool
	add, drop       []corev1.Capability
}

func effectiveSecurity(pod *corev1.Pod, c *corev1.Container) security {
	var s security
	if psc := pod.Spec.SecurityContext; psc != nil {
		s.runAsUser, s.runAsGroup = psc.RunAsUser, psc.RunAsGroup
		s.runAsNonRoot = psc.RunAsNonRoot != nil && *psc.RunAsNonRoot
	}
	csc := c.SecurityContext
	if csc == nil {
		return s
	}
	if csc.RunAsUser != nil {
		s.runAsUser = csc.RunAsUser
	}
	if csc.RunAsGroup != nil {
		s.runAsGroup = csc.RunAsGroup
	}
	if csc.RunAsNonRoot != nil {
		s.runAsNonRoot = *csc.RunAsNonRoot
	}
	s.privileged = csc.Privileged != nil && *csc.Privileged
	s.readOnlyRoot = csc.ReadOnlyRootFilesystem != nil && *csc.ReadOnlyRootFilesystem
	// allowPrivilegeEscalation defaults to true; only an explicit false sets
	// no_new_privs (the API refuses false together with privileged or CAP_SYS_ADMIN).
	s.noNewPrivileges = csc.AllowPrivilegeEscalation != nil && !*csc.AllowPrivilegeEscalation && !s.privileged
	s.unmaskedProc = csc.ProcMount != nil && *csc.ProcMount == corev1.UnmaskedProcMount
	if csc.Capabilities != nil {
		s.add, s.drop = csc.Capabilities.Add, csc.Capabilities.Drop
	}
	return s
}

// allCapabilities lists every capability by number (linux/capability.h, up to
// CAP_CHECKPOINT_RESTORE).
var allCapabilities = []string{
	"CAP_CHOWN", "CAP_DAC_OVERRIDE", "CAP_DAC_READ_SEARCH", "CAP_FOWNER", "CAP_FSETID",
	"CAP_KILL", "CAP_SETGID", "CAP_SETUID", "CAP_SETPCAP", "CAP_LINUX_IMMUTABLE",
	"CAP_NET_BIND_SERVICE", "CAP_NET_BROADCAST", "CAP_NET_ADMIN", "CAP_NET_RAW",
	"CAP_IPC_LOCK", "CAP_IPC_OWNER", "CAP_SYS_MODULE", "CAP_SYS_RAWIO", "CAP_SYS_CHROOT",
	"CAP_SYS_PTRACE", "CAP_SYS_PACCT", "CAP_SYS_ADMIN", "CAP_SYS_BOOT", "CAP_SYS_NICE",
	"CAP_SYS_RESOURCE", "CAP_SYS_TIME", "CAP_SYS_TTY_CONFIG", "CAP_MKNOD", "CAP_LEASE",
	"CAP_AUDIT_WRITE", "CAP_AUDIT_CONTROL", "CAP_SETFCAP", "CAP_MAC_OVERRIDE",
	"CAP_MAC_ADMIN", "CAP_SYSLOG", "CAP_WAKE_ALARM", "CAP_BLOCK_SUSPEND", "CAP_AUDIT_READ",
	"CAP_PERFMON", "CAP_BPF", "CAP_CHECKPOINT_RESTORE",
}

// DefaultCapabilities is the set container runtimes (containerd, CRI-O, Docker) give an
// unprivileged container.
var DefaultCapabilities = []string{
	"CAP_CHOWN", "CAP_DAC_OVERRIDE", "CAP_FSETID", "CAP_FOWNER", "CAP_MKNOD", "CAP_NET_RAW",
	"CAP_SETGID", "CAP_SETUID", "CAP_SETFCAP", "CAP_SETPCAP", "CAP_NET_BIND_SERVICE",
	"CAP_SYS_CHROOT", "CAP_KILL", "CAP_AUDIT_WRITE",
}

// capabilityName accepts "NET_ADMIN", "CAP_NET_ADMIN" and any letter case.
func capabilityName(c corev1.Capability) (string, bool) {
	n := strings.ToUpper(string(c))
	if !strings.HasPrefix(n, "CAP_") {
		n = "CAP_" + n
	}
	return n, slices.Contains(allCapabilities, n)
}

// buildCapabilities applies drop then add to the default set, as runtimes do ("ALL" in
// drop empties it, "ALL" in add fills it); privileged containers get every one.
func buildCapabilities(s security, field string) (*specs.LinuxCapabilities, error) {
	set := map[string]bool{}
	if s.privileged {
		for _, c := range allCapabilities {
			set[c] = true
		}
	} else {
		for _, c := range DefaultCapabilities {
			set[c] = true
		}
		for i, d := range s.drop {
			if strings.EqualFold(string(d), "ALL") {
				clear(set)
				continue
			}
			n, ok := capabilityName(d)
			if !ok {
				return nil, fmt.Errorf("%s.securityContext.capabilities.drop[%d]: %q is not a Linux capability", field, i, d)
			}
			delete(set, n)
		}
		for i, a := range s.add {
			if strings.EqualFold(string(a), "ALL") {
				for _, c := range allCapabilities {
					set[c] = true
				}
				continue
			}
			n, ok := capabilityName(a)
			if !ok {
				return nil, fmt.Errorf("%s.securityContext.capabilities.add[%d]: %q is not a Linux capability", field, i, a)
			}
			set[n] = true
		}
	}
	var list []string
	for _, c := range allCapabilities { // numeric order: the same spec every time
		if set[c] {
			list = append(list, c)
		}
	}
	return &specs.LinuxCapabilities{
		Bounding:  list,
		Effective: slices.Clone(list),
		Permitted: slices.Clone(list),
	}, nil
}

// defaultMaskedPaths and defaultReadonlyPaths are what runtimes hide from (or freeze
// for) an unprivileged container: kernel interfaces that leak host data or change host
// state.
var defaultMaskedPaths = []string{
	"/proc/acpi", "/proc/asound", "/proc/interrupts", "/proc/kcore", "/proc/keys",
	"/proc/latency_stats", "/proc/sched_debug", "/proc/scsi", "/proc/timer_list",
	"/proc/timer_stats", "/sys/devices/virtual/powercap", "/sys/firmware",
}

var defaultReadonlyPaths = []string{
	"/proc/bus", "/proc/fs", "/proc/irq", "/proc/sys", "/proc/sysrq-trigger",
}
