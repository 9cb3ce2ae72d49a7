// Package sandbox prepares what a pod's containers share before the first one starts,
// without a pause process: the pod's IPC and UTS namespaces are created on a throwaway
// OS thread and pinned by bind-mounting their nsfs files under the pod's runtime
// directory (/run/plinth/pods/<uid>/ns/{ipc,uts}), so they live exactly as long as the
// pod, independent of any container and of plinthd; the pod's /dev/shm is a tmpfs
// mounted there too; and /etc/hosts, /etc/resolv.conf and /etc/hostname are written
// there for the containers to bind-mount. The network namespace comes from the pod
// network (daemon/podnet), and each container gets its own PID namespace.
//
// Why pinned namespaces rather than a sandbox ("pause") container: nothing to build,
// ship or keep running, nothing that can crash and take the pod's namespaces with it,
// and a plinthd restart finds the namespaces where it left them. The one thing this
// cannot give is a PID namespace shared by the pod's containers
// (shareProcessNamespace), which needs a living init process.
//
// It owns the pod's runtime directory and the mounts in it; HostsFile is pure.
package sandbox
