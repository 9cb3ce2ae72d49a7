package bundle

import (
	"fmt"
	"path"
	"sort"
	"strings"

	specs "github.com/opencontainers/runtime-spec/specs-go"
	corev1 "k8s.io/api/core/v1"
)

// buildMounts returns the standard filesystems, the pod's files, the termination log
// and the volume mounts, parents before children. A volume mounted exactly where a
// standard file or /dev/shm would go replaces it, as in other runtimes.
func buildMounts(in Input, sc security, field string) ([]specs.Mount, error) {
	vols, err := volumeMounts(in, sc, field)
	if err != nil {
		return nil, err
	}
	taken := map[string]bool{}
	for _, m := range vols {
		taken[m.Destination] = true
	}
	sysOpt := "ro"
	if sc.privileged {
		sysOpt = "rw"
	}
	var ms []specs.Mount
	ms = append(ms, specs.Mount{Destination: "/proc", Type: "proc", Source: "proc", Options: []string{"nosuid", "noexec", "nodev"}})
	if sc.privileged {
		ms = append(ms, specs.Mount{Destination: "/dev", Type: "bind", Source: "/dev", Options: []string{"rbind", "rslave", "rw"}})
	} else {
		ms = append(ms, specs.Mount{Destination: "/dev", Type: "tmpfs", Source: "tmpfs", Options: []string{"nosuid", "strictatime", "mode=755", "size=65536k"}})
	}
	ms = append(ms,
		specs.Mount{Destination: "/dev/pts", Type: "devpts", Source: "devpts", Options: []string{"nosuid", "noexec", "newinstance", "ptmxmode=0666", "mode=0620", "gid=5"}},
		specs.Mount{Destination: "/dev/mqueue", Type: "mqueue", Source: "mqueue", Options: []string{"nosuid", "noexec", "nodev"}},
		specs.Mount{Destination: "/sys", Type: "sysfs", Source: "sysfs", Options: []string{"nosuid", "noexec", "nodev", sysOpt}},
		specs.Mount{Destination: "/sys/fs/cgroup", Type: "cgroup", Source: "cgroup", Options: []string{"nosuid", "noexec", "nodev", "relatime", sysOpt}},
	)
	if !taken["/dev/shm"] {
		if in.Sandbox.ShmPath != "" {
			ms = append(ms, bindMount("/dev/shm", in.Sandbox.ShmPath, "rprivate", false, "nosuid", "nodev", "noexec"))
		} else {
			ms = append(ms, specs.Mount{Destination: "/dev/shm", Type: "tmpfs", Source: "shm", Options: []string{"nosuid", "noexec", "nodev", "mode=1777", "size=65536k"}})
		}
	}
	files := []struct{ dst, src string }{
		{"/etc/hosts", in.Sandbox.HostsPath},
		{"/etc/resolv.conf", in.Sandbox.ResolvConfPath},
		{"/etc/hostname", in.Sandbox.HostnamePath},
	}
	for _, f := range files {
		if f.src != "" && !taken[f.dst] {
			ms = append(ms, bindMount(f.dst, f.src, "rprivate", sc.readOnlyRoot))
		}
	}
	if in.TerminationLogPath != "" {
		dst := in.Container.TerminationMessagePath
		if dst == "" {
			dst = corev1.TerminationMessagePathDefault
		}
		if !path.IsAbs(dst) {
			return nil, fmt.Errorf("%s.terminationMessagePath: %q is not an absolute path", field, dst)
		}
		dst = path.Clean(dst)
		if !taken[dst] {
			ms = append(ms, bindMount(dst, in.TerminationLogPath, "rprivate", false))
		}
	}
	return append(ms, vols...), nil
}

func bindMount(dst, src, propagation string, readOnly bool, extra ...string) specs.Mount {
	mode := "rw"
	if readOnly {
		mode = "ro"
	}
	opts := append([]string{"rbind", propagation, mode}, extra...)
	return specs.Mount{Destination: dst, Type: "bind", Source: src, Options: opts}
}

// volumeMounts turns the container's volumeMounts into bind mounts of the prepared
// volume directories, sorted so that a mount's parent directories are mounted first.
func volumeMounts(in Input, sc security, field string) ([]specs.Mount, error) {
	c := in.Container
	type indexed struct {
		m     specs.Mount
		depth int
	}
	var out []indexed
	seen := map[string]int{}
	envVars := map[string]string{}
	for _, e := range c.Env {
		envVars[e.Name] = e.Value
	}
	for i, vm := range c.VolumeMounts {
		vf := fmt.Sprintf("%s.volumeMounts[%d]", field, i)
		src, ok := in.Volumes[vm.Name]
		if !ok || src == "" {
			return nil, fmt.Errorf("%s.name: volume %q is not defined in the pod or not prepared on this node", vf, vm.Name)
		}
		if !path.IsAbs(vm.MountPath) || path.Clean(vm.MountPath) == "/" {
			return nil, fmt.Errorf("%s.mountPath: %q must be an absolute path other than /", vf, vm.MountPath)
		}
		dst := path.Clean(vm.MountPath)
		if j, dup := seen[dst]; dup {
			return nil, fmt.Errorf("%s.mountPath: %q is already used by volumeMounts[%d]", vf, vm.MountPath, j)
		}
		seen[dst] = i
		sub := vm.SubPath
		if vm.SubPathExpr != "" {
			if sub != "" {
				return nil, fmt.Errorf("%s: subPath and subPathExpr are mutually exclusive", vf)
			}
			sub = Expand(vm.SubPathExpr, func(n string) (string, bool) { v, ok := envVars[n]; return v, ok })
		}
		if sub != "" {
			if err := checkSubPath(sub); err != nil {
				return nil, fmt.Errorf("%s.subPath: %q %v", vf, sub, err)
			}
			src = path.Join(src, sub)
		}
		prop := "rprivate"
		if vm.MountPropagation != nil {
			switch *vm.MountPropagation {
			case corev1.MountPropagationNone:
			case corev1.MountPropagationHostToContainer:
				prop = "rslave"
			case corev1.MountPropagationBidirectional:
				if !sc.privileged {
					return nil, fmt.Errorf("%s.mountPropagation: %q needs a privileged container", vf, *vm.MountPropagation)
				}
				prop = "rshared"
			default:
				return nil, fmt.Errorf("%s.mountPropagation: %q is not None, HostToContainer or Bidirectional", vf, *vm.MountPropagation)
			}
		}
		out = append(out, indexed{bindMount(dst, src, prop, vm.ReadOnly), strings.Count(dst, "/")})
	}
	sort.SliceStable(out, func(a, b int) bool { return out[a].depth < out[b].depth })
	ms := make([]specs.Mount, len(out))
	for i, o := range out {
		ms[i] = o.m
	}
	return ms, nil
}

// checkSubPath refuses paths that could leave the volume: absolute ones and any ".."
// element. (Symlinks inside the volume are the preparer's to resolve safely.)
func checkSubPath(sub string) error {
	if path.IsAbs(sub) {
		return fmt.Errorf("must be a relative path")
	}
	for _, el := range strings.Split(sub, "/") {
		if el == ".." {
			return fmt.Errorf("must not contain '..'")
		}
	}
	if strings.ContainsRune(sub, 0) {
		return fmt.Errorf("must not contain NUL")
	}
	return nil
}
