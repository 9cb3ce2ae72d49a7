package bundle

import (
	"errors"
	"fmt"
	"path"
	"slices"
	"strings"

	specs "github.com/opencontainers/runtime-spec/specs-go"
	corev1 "k8s.io/api/core/v1"
)

// ImageConfig is what a container image says about how to run it (the config part of
// an OCI image).
type ImageConfig struct {
	Entrypoint []string
	Cmd        []string
	Env        []string // KEY=value
	WorkingDir string
	User       string // "", "uid", "name", "uid:gid", "name:group"
}

// Sandbox is what the pod's containers share, prepared before the first one starts.
type Sandbox struct {
	// NetNSPath is the pod's network namespace; ignored with hostNetwork.
	NetNSPath string
	// IPCNSPath and UTSNSPath are the pod's pinned IPC and UTS namespaces; ignored with
	// hostIPC and hostNetwork respectively.
	IPCNSPath, UTSNSPath string
	// Hostname is the pod's host name (spec.hostname, else the pod name).
	Hostname string
	// HostsPath, ResolvConfPath and HostnamePath are the pod's /etc files; "" leaves the
	// image's own.
	HostsPath, ResolvConfPath, HostnamePath string
	// ShmPath is the pod's shared /dev/shm (a tmpfs on the host); "" gives each
	// container its own.
	ShmPath string
}

// Input is everything Build needs for one container of a pod.
type Input struct {
	Pod       *corev1.Pod
	Container *corev1.Container // one of Pod's containers or init containers
	// ContainerID names the container for runc; it ends the cgroup path.
	ContainerID string
	Image       ImageConfig
	// Users are the image's /etc/passwd and /etc/group (LookupUsers); the zero value
	// resolves numeric users only.
	Users Users
	// RootfsPath is the prepared root filesystem (absolute, or relative to the bundle).
	RootfsPath string
	Sandbox    Sandbox
	// Volumes maps each pod volume name to the host directory or file prepared for it
	// (emptyDir directories, hostPath paths).
	Volumes map[string]string
	// TerminationLogPath is the host file mounted at the container's
	// terminationMessagePath; "" mounts none.
	TerminationLogPath string
	// Seccomp is the resolved profile (daemon/seccomp); nil runs unconfined.
	Seccomp *specs.LinuxSeccomp
	// CgroupParent is the pod's cgroup path (e.g. /plinth/pod<uid>); the container's is
	// CgroupParent/ContainerID.
	CgroupParent string
	// CgroupNamespace gives the container its own cgroup namespace (done on cgroup v2
	// hosts, as runtimes do).
	CgroupNamespace bool
	// NodeMemoryBytes and NodeMilliCPU are the node's capacity: Burstable OOM scores
	// and downward-API reads of an unset limit use them.
	NodeMilliCPU    int64
	NodeMemoryBytes int64
	// Swap limits the container's swap (the zero value sets no limit).
	Swap Swap
	// PidsLimit caps the container's tasks (0: no container-level cap; the pod's cgroup
	// carries the pod limit).
	PidsLimit int64
	// MaxNOFILE is the hard RLIMIT_NOFILE the runtime may grant (its own hard limit,
	// unless it holds CAP_SYS_RESOURCE); 0 leaves the limit inherited.
	MaxNOFILE uint64
	// MinOOMScoreAdj is the lowest oom_score_adj the runtime may set (its own, unless
	// it holds CAP_SYS_RESOURCE; -1000 when it does); Guaranteed pods get no lower.
	MinOOMScoreAdj int
	// PodIP and HostIP feed status.podIP and status.hostIP field references.
	PodIP, HostIP string
}

// Build returns the OCI runtime spec for in.Container, or an error naming the field and
// value it cannot honour.
func Build(in Input) (*specs.Spec, error) {
	if in.Pod == nil || in.Container == nil {
		return nil, errors.New("bundle: pod and container are required")
	}
	if in.ContainerID == "" || strings.ContainsAny(in.ContainerID, "/\x00") || in.ContainerID == "." || in.ContainerID == ".." {
		return nil, fmt.Errorf("bundle: container ID %q: want a non-empty name without '/'", in.ContainerID)
	}
	if in.RootfsPath == "" {
		return nil, errors.New("bundle: root filesystem path is empty")
	}
	if in.CgroupParent != "" && (!path.IsAbs(in.CgroupParent) || path.Clean(in.CgroupParent) != in.CgroupParent) {
		return nil, fmt.Errorf("bundle: cgroup parent %q: want an absolute, clean path", in.CgroupParent)
	}
	c := in.Container
	field := containerField(in.Pod, c)
	sc := effectiveSecurity(in.Pod, c)

	env, err := buildEnv(in, field)
	if err != nil {
		return nil, err
	}
	args, err := buildArgs(in, env, field)
	if err != nil {
		return nil, err
	}
	user, err := buildUser(in, sc, field)
	if err != nil {
		return nil, err
	}
	caps, err := buildCapabilities(sc, field)
	if err != nil {
		return nil, err
	}
	cwd := c.WorkingDir
	if cwd == "" {
		cwd = in.Image.WorkingDir
	}
	if cwd == "" {
		cwd = "/"
	}
	if !path.IsAbs(cwd) {
		return nil, fmt.Errorf("%s.workingDir: %q is not an absolute path", field, cwd)
	}
	mounts, err := buildMounts(in, sc, field)
	if err != nil {
		return nil, err
	}
	resources, err := buildResources(in, field)
	if err != nil {
		return nil, err
	}

	spec := &specs.Spec{
		Version: specs.Version,
		Process: &specs.Process{
			User:            user,
			Args:            args,
			Env:             env,
			Cwd:             path.Clean(cwd),
			Capabilities:    caps,
			Rlimits:         rlimits(in.MaxNOFILE),
			NoNewPrivileges: sc.noNewPrivileges,
			OOMScoreAdj:     ptr(max(oomScoreAdj(in.Pod, c, in.NodeMemoryBytes), in.MinOOMScoreAdj)),
		},
		Root:        &specs.Root{Path: in.RootfsPath, Readonly: sc.readOnlyRoot},
		Mounts:      mounts,
		Annotations: annotations(in),
		Linux: &specs.Linux{
			Resources:         resources,
			Namespaces:        buildNamespaces(in),
			Sysctl:            sysctls(in.Pod),
			RootfsPropagation: "rslave",
		},
	}
	if !in.Pod.Spec.HostNetwork {
		spec.Hostname = in.Sandbox.Hostname
	}
	if in.CgroupParent != "" {
		spec.Linux.CgroupsPath = in.CgroupParent + "/" + in.ContainerID
	}
	if sc.privileged {
		// Privileged containers see the host's devices and are never confined by seccomp.
		spec.Linux.Resources.Devices = []specs.LinuxDeviceCgroup{{Allow: true, Access: "rwm"}}
	} else {
		spec.Linux.Seccomp = in.Seccomp
		if !sc.unmaskedProc {
			spec.Linux.MaskedPaths = slices.Clone(defaultMaskedPaths)
			spec.Linux.ReadonlyPaths = slices.Clone(defaultReadonlyPaths)
		}
	}
	return spec, nil
}

// containerField names the container in errors the way the API does.
func containerField(pod *corev1.Pod, c *corev1.Container) string {
	for i := range pod.Spec.InitContainers {
		if pod.Spec.InitContainers[i].Name == c.Name {
			return fmt.Sprintf("spec.initContainers[%d]", i)
		}
	}
	for i := range pod.Spec.Containers {
		if pod.Spec.Containers[i].Name == c.Name {
			return fmt.Sprintf("spec.containers[%d]", i)
		}
	}
	return fmt.Sprintf("container %q", c.Name)
}

func annotations(in Input) map[string]string {
	return map[string]string{
		"io.kubernetes.pod.namespace":  in.Pod.Namespace,
		"io.kubernetes.pod.name":       in.Pod.Name,
		"io.kubernetes.pod.uid":        string(in.Pod.UID),
		"io.kubernetes.container.name": in.Container.Name,
	}
}

func buildNamespaces(in Input) []specs.LinuxNamespace {
	ps := in.Pod.Spec
	ns := []specs.LinuxNamespace{{Type: specs.MountNamespace}}
	// A namespace left out of the list is the host's (runc joins its own).
	if !ps.HostPID {
		ns = append(ns, specs.LinuxNamespace{Type: specs.PIDNamespace})
	}
	if !ps.HostNetwork {
		ns = append(ns, specs.LinuxNamespace{Type: specs.NetworkNamespace, Path: in.Sandbox.NetNSPath})
		ns = append(ns, specs.LinuxNamespace{Type: specs.UTSNamespace, Path: in.Sandbox.UTSNSPath})
	}
	if !ps.HostIPC {
		ns = append(ns, specs.LinuxNamespace{Type: specs.IPCNamespace, Path: in.Sandbox.IPCNSPath})
	}
	if in.CgroupNamespace {
		ns = append(ns, specs.LinuxNamespace{Type: specs.CgroupNamespace})
	}
	return ns
}

func sysctls(pod *corev1.Pod) map[string]string {
	if pod.Spec.SecurityContext == nil || len(pod.Spec.SecurityContext.Sysctls) == 0 {
		return nil
	}
	out := map[string]string{}
	for _, s := range pod.Spec.SecurityContext.Sysctls {
		out[s.Name] = s.Value
	}
	return out
}

// rlimits gives RLIMIT_NOFILE containerd 2's values (a soft limit select(2)-based
// programs survive, a hard limit servers can raise themselves to) within what the
// runtime may grant: raising a hard limit needs CAP_SYS_RESOURCE.
func rlimits(maxNOFILE uint64) []specs.POSIXRlimit {
	if maxNOFILE == 0 {
		return nil
	}
	hard := min(524288, maxNOFILE)
	return []specs.POSIXRlimit{{Type: "RLIMIT_NOFILE", Soft: min(1024, hard), Hard: hard}}
}

func ptr[T any](v T) *T { return &v }
