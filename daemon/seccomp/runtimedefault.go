package seccomp

import (
	"runtime"
	"slices"
	"strings"

	specs "github.com/opencontainers/runtime-spec/specs-go"
)

// Plinth's RuntimeDefault profile, written for this project from the Linux syscall
// tables and the capabilities each syscall needs.
//
// The shape: everything not listed fails with EPERM (defaultErrnoRet 1). EPERM rather
// than ENOSYS because a program told "not permitted" does not go looking for a fallback
// that may be worse; the one exception is clone3 (below). A syscall newer than the
// list is denied until it is added: a program may see EPERM where it expected ENOSYS
// and a fallback (glibc's fchmodat2 probe is one); that is the cost of a list written
// by hand, and the reason the list tracks current kernels.
//
// Groups are either always allowed (the ordinary set every workload uses: files,
// memory, processes and threads, signals, time reading, sockets, IPC, polling) or
// allowed only when the container holds a capability that makes them meaningful.
// Without the capability the kernel would refuse most of them anyway; refusing them in
// the filter too keeps kernel code that has had privilege-escalation bugs (keyrings,
// BPF, perf, userfaultfd, io_uring, handle-based opens) unreachable from a container
// that has no business calling it. A few are denied whatever the capabilities:
// keyrings are not namespaced, and the obsolete or 16-bit-mode syscalls have no
// container use.
//
// Architectures: the node's own plus the compatibility ABIs its kernel runs (x86 and
// x32 on x86_64, arm on aarch64), so a 32-bit binary meets the same rules instead of
// the default action for everything.

// syscallGroup is a set of syscalls allowed together, for one reason.
type syscallGroup struct {
	why   string
	names []string
	// anyCap lists capabilities of which the container must hold one for the group to
	// be allowed; empty means always.
	anyCap []string
}

var runtimeDefaultGroups = []syscallGroup{
	{why: "file I/O on descriptors the process holds", names: []string{
		"read", "write", "readv", "writev", "pread64", "pwrite64", "preadv", "pwritev", "preadv2", "pwritev2",
		"open", "openat", "openat2", "creat", "close", "close_range", "lseek", "_llseek",
		"dup", "dup2", "dup3", "pipe", "pipe2", "fcntl", "fcntl64", "ioctl", "flock",
		"fsync", "fdatasync", "sync", "syncfs", "sync_file_range", "arm_sync_file_range",
		"truncate", "truncate64", "ftruncate", "ftruncate64", "fallocate",
		"fadvise64", "fadvise64_64", "arm_fadvise64_64", "readahead",
		"sendfile", "sendfile64", "splice", "tee", "vmsplice", "copy_file_range",
	}},
	{why: "file metadata and directories, confined by the container's mount namespace and DAC", names: []string{
		"stat", "stat64", "lstat", "lstat64", "fstat", "fstat64", "newfstatat", "fstatat64", "statx",
		"statfs", "statfs64", "fstatfs", "fstatfs64", "access", "faccessat", "faccessat2",
		"readlink", "readlinkat", "getdents", "getdents64", "getcwd", "chdir", "fchdir",
		"mkdir", "mkdirat", "rmdir", "rename", "renameat", "renameat2", "link", "linkat",
		"symlink", "symlinkat", "unlink", "unlinkat", "chmod", "fchmod", "fchmodat",
		"chown", "chown32", "fchown", "fchown32", "fchownat", "lchown", "lchown32", "umask",
		"utime", "utimes", "utimensat", "utimensat_time64", "futimesat", "mknod", "mknodat",
		"getxattr", "lgetxattr", "fgetxattr", "setxattr", "lsetxattr", "fsetxattr",
		"listxattr", "llistxattr", "flistxattr", "removexattr", "lremovexattr", "fremovexattr",
		"inotify_init", "inotify_init1", "inotify_add_watch", "inotify_rm_watch", "fanotify_mark",
		"memfd_create", "name_to_handle_at",
	}},
	{why: "waiting for events", names: []string{
		"select", "_newselect", "pselect6", "pselect6_time64", "poll", "ppoll", "ppoll_time64",
		"epoll_create", "epoll_create1", "epoll_ctl", "epoll_ctl_old", "epoll_wait", "epoll_wait_old", "epoll_pwait", "epoll_pwait2",
		"eventfd", "eventfd2", "signalfd", "signalfd4",
		"timerfd_create", "timerfd_settime", "timerfd_settime64", "timerfd_gettime", "timerfd_gettime64",
		"io_setup", "io_destroy", "io_submit", "io_cancel", "io_getevents", "io_pgetevents", "io_pgetevents_time64",
	}},
	{why: "the process's own memory", names: []string{
		"brk", "mmap", "mmap2", "munmap", "mremap", "mprotect", "pkey_mprotect", "pkey_alloc", "pkey_free",
		"madvise", "mlock", "mlock2", "munlock", "mlockall", "munlockall", "mincore", "msync",
		"membarrier", "get_mempolicy", "remap_file_pages", "rseq",
		"set_tid_address", "set_robust_list", "get_robust_list",
	}},
	{why: "processes and threads inside the container's PID namespace (clone and unshare are filtered below)", names: []string{
		"fork", "vfork", "execve", "execveat", "exit", "exit_group", "wait4", "waitid", "waitpid",
		"getpid", "getppid", "gettid", "getpgid", "setpgid", "getpgrp", "getsid", "setsid",
		"prctl", "arch_prctl", "uname", "sched_yield", "sched_getaffinity", "sched_setaffinity",
		"sched_getparam", "sched_setparam", "sched_getscheduler", "sched_setscheduler",
		"sched_get_priority_max", "sched_get_priority_min", "sched_rr_get_interval", "sched_rr_get_interval_time64",
		"sched_getattr", "sched_setattr", "getpriority", "setpriority", "ioprio_get", "ioprio_set",
		"getrlimit", "setrlimit", "ugetrlimit", "prlimit64", "getrusage", "times", "sysinfo", "getcpu",
		"capget", "capset", "pidfd_open", "pidfd_send_signal", "set_thread_area", "get_thread_area",
		"restart_syscall", "futex", "futex_time64", "futex_waitv", "getrandom",
		"set_tls", "cacheflush", "breakpoint",
	}},
	{why: "further self-restriction: a nested seccomp filter or a Landlock ruleset can only take away", names: []string{
		"seccomp", "landlock_create_ruleset", "landlock_add_rule", "landlock_restrict_self",
	}},
	{why: "credentials, bounded by the container's capabilities and user namespace", names: []string{
		"getuid", "getuid32", "geteuid", "geteuid32", "getgid", "getgid32", "getegid", "getegid32",
		"setuid", "setuid32", "setgid", "setgid32", "setreuid", "setreuid32", "setregid", "setregid32",
		"setresuid", "setresuid32", "setresgid", "setresgid32", "getresuid", "getresuid32", "getresgid", "getresgid32",
		"getgroups", "getgroups32", "setgroups", "setgroups32", "setfsuid", "setfsuid32", "setfsgid", "setfsgid32",
	}},
	{why: "signals", names: []string{
		"kill", "tkill", "tgkill", "rt_sigaction", "rt_sigprocmask", "rt_sigreturn", "rt_sigpending",
		"rt_sigsuspend", "rt_sigtimedwait", "rt_sigtimedwait_time64", "rt_sigqueueinfo", "rt_tgsigqueueinfo",
		"sigaction", "sigprocmask", "sigreturn", "sigpending", "sigsuspend", "sigaltstack", "signal", "alarm", "pause",
	}},
	{why: "reading clocks and sleeping; adjtimex and clock_adjtime only read without CAP_SYS_TIME (time sync daemons poll them)", names: []string{
		"time", "gettimeofday", "clock_gettime", "clock_gettime64", "clock_getres", "clock_getres_time64",
		"clock_nanosleep", "clock_nanosleep_time64", "nanosleep", "getitimer", "setitimer",
		"timer_create", "timer_settime", "timer_settime64", "timer_gettime", "timer_gettime64",
		"timer_getoverrun", "timer_delete", "adjtimex", "clock_adjtime", "clock_adjtime64",
	}},
	{why: "sockets in the pod's network namespace", names: []string{
		"socket", "socketpair", "bind", "connect", "listen", "accept", "accept4",
		"getsockname", "getpeername", "sendto", "recvfrom", "sendmsg", "recvmsg", "sendmmsg",
		"recvmmsg", "recvmmsg_time64", "shutdown", "setsockopt", "getsockopt", "socketcall", "send", "recv",
	}},
	{why: "System V and POSIX IPC in the pod's IPC namespace", names: []string{
		"msgget", "msgsnd", "msgrcv", "msgctl", "semget", "semop", "semtimedop", "semtimedop_time64", "semctl",
		"shmget", "shmat", "shmdt", "shmctl", "ipc",
		"mq_open", "mq_unlink", "mq_timedsend", "mq_timedsend_time64", "mq_timedreceive",
		"mq_timedreceive_time64", "mq_notify", "mq_getsetattr",
	}},

	// Allowed only with a capability.
	{why: "mounts, namespaces and other system administration", anyCap: []string{"CAP_SYS_ADMIN"}, names: []string{
		"mount", "umount", "umount2", "pivot_root", "fsopen", "fsconfig", "fsmount", "fspick",
		"move_mount", "open_tree", "mount_setattr", "setns", "unshare", "clone", "clone3",
		"quotactl", "quotactl_fd", "swapon", "swapoff", "sethostname", "setdomainname",
		"lookup_dcookie", "fanotify_init", "io_uring_setup", "io_uring_enter", "io_uring_register",
	}},
	{why: "BPF programs and maps", anyCap: []string{"CAP_SYS_ADMIN", "CAP_BPF"}, names: []string{"bpf"}},
	{why: "performance monitoring, which exposes kernel addresses and other processes", anyCap: []string{"CAP_SYS_ADMIN", "CAP_PERFMON"}, names: []string{"perf_event_open"}},
	{why: "inspecting and changing other processes (userfaultfd: the kernel's own gate for unprivileged use is CAP_SYS_PTRACE)", anyCap: []string{"CAP_SYS_PTRACE"}, names: []string{
		"ptrace", "process_vm_readv", "process_vm_writev", "kcmp", "pidfd_getfd", "process_madvise", "userfaultfd",
	}},
	{why: "setting the clocks, which are not namespaced", anyCap: []string{"CAP_SYS_TIME"}, names: []string{
		"settimeofday", "clock_settime", "clock_settime64", "stime",
	}},
	{why: "rebooting and replacing the kernel", anyCap: []string{"CAP_SYS_BOOT"}, names: []string{"reboot", "kexec_load", "kexec_file_load"}},
	{why: "kernel modules", anyCap: []string{"CAP_SYS_MODULE"}, names: []string{"init_module", "finit_module", "delete_module"}},
	{why: "raw port I/O", anyCap: []string{"CAP_SYS_RAWIO"}, names: []string{"iopl", "ioperm"}},
	{why: "process accounting", anyCap: []string{"CAP_SYS_PACCT"}, names: []string{"acct"}},
	{why: "NUMA placement of memory, which can starve other workloads", anyCap: []string{"CAP_SYS_NICE"}, names: []string{
		"mbind", "set_mempolicy", "migrate_pages", "move_pages",
	}},
	{why: "the kernel log", anyCap: []string{"CAP_SYSLOG"}, names: []string{"syslog"}},
	{why: "the terminal hangup", anyCap: []string{"CAP_SYS_TTY_CONFIG"}, names: []string{"vhangup"}},
	{why: "opening files by handle, which bypasses path lookup and the mount namespace", anyCap: []string{"CAP_DAC_READ_SEARCH"}, names: []string{"open_by_handle_at"}},
	{why: "changing the root directory", anyCap: []string{"CAP_SYS_CHROOT"}, names: []string{"chroot"}},
}

// Never allowed, whatever the capabilities (not listed, so the default action applies):
// keyctl, add_key, request_key (the kernel keyrings are not namespaced); modify_ldt,
// vm86, vm86old (16-bit x86 modes, a history of bugs); uselib, _sysctl, nfsservctl,
// create_module, get_kernel_syms, query_module, pciconfig_*, sysfs, ustat (obsolete or
// hardware-level); personality values other than the plain Linux and 32-bit Linux
// domains and the query (others turn off ASLR or emulate other systems).

const (
	cloneNewUser = 0x10000000 // CLONE_NEWUSER
	errnoENOSYS  = 38
	errnoEPERM   = 1
	// personalityQuery is personality(0xffffffff): read the current persona.
	personalityQuery = 0xffffffff
	perLinux         = 0x0000
	perLinux32       = 0x0008
)

// RuntimeDefault returns Plinth's default profile for a container holding caps (names
// as in the runtime spec, "CAP_SYS_ADMIN"; "SYS_ADMIN" as in a pod's securityContext
// is accepted too). Each call returns a fresh profile the caller may change.
func RuntimeDefault(caps []string) *specs.LinuxSeccomp {
	held := map[string]bool{}
	for _, c := range caps {
		c = strings.ToUpper(c)
		if !strings.HasPrefix(c, "CAP_") {
			c = "CAP_" + c
		}
		held[c] = true
	}
	eperm := uint(errnoEPERM)
	p := &specs.LinuxSeccomp{
		DefaultAction:   specs.ActErrno,
		DefaultErrnoRet: &eperm,
		Architectures:   runtimeDefaultArches(runtime.GOARCH),
	}
	allow := func(names ...string) {
		p.Syscalls = append(p.Syscalls, specs.LinuxSyscall{Names: names, Action: specs.ActAllow})
	}
	for _, g := range runtimeDefaultGroups {
		if len(g.anyCap) == 0 || slices.ContainsFunc(g.anyCap, func(c string) bool { return held[c] }) {
			allow(slices.Clone(g.names)...)
		}
	}
	if !held["CAP_SYS_ADMIN"] {
		// Without CAP_SYS_ADMIN a container may still start processes and threads, and
		// unshare what the kernel lets it, but not create a user namespace: inside one
		// it would hold every capability over new namespaces and reach kernel code
		// (netfilter, mounts of many filesystems) that is otherwise out of reach.
		flags := uint(0)
		if runtime.GOARCH == "s390x" {
			flags = 1 // clone's flags come second on s390
		}
		for _, name := range []string{"clone", "unshare"} {
			idx := uint(0)
			if name == "clone" {
				idx = flags
			}
			p.Syscalls = append(p.Syscalls, specs.LinuxSyscall{
				Names:  []string{name},
				Action: specs.ActAllow,
				Args:   []specs.LinuxSeccompArg{{Index: idx, Value: cloneNewUser, ValueTwo: 0, Op: specs.OpMaskedEqual}},
			})
		}
		// clone3 passes its flags in memory, which a filter cannot read: answer ENOSYS
		// so that libc falls back to clone, whose flags it can.
		enosys := uint(errnoENOSYS)
		p.Syscalls = append(p.Syscalls, specs.LinuxSyscall{Names: []string{"clone3"}, Action: specs.ActErrno, ErrnoRet: &enosys})
	}
	for _, v := range []uint64{perLinux, perLinux32, personalityQuery} {
		p.Syscalls = append(p.Syscalls, specs.LinuxSyscall{
			Names: []string{"personality"}, Action: specs.ActAllow,
			Args: []specs.LinuxSeccompArg{{Index: 0, Value: v, Op: specs.OpEqualTo}},
		})
	}
	return p
}

// runtimeDefaultArches is the node's architecture and the compatibility ABIs its
// kernel can run.
func runtimeDefaultArches(goarch string) []specs.Arch {
	switch goarch {
	case "amd64":
		return []specs.Arch{specs.ArchX86_64, specs.ArchX86, specs.ArchX32}
	case "arm64":
		return []specs.Arch{specs.ArchAARCH64, specs.ArchARM}
	case "386":
		return []specs.Arch{specs.ArchX86}
	case "arm":
		return []specs.Arch{specs.ArchARM}
	case "ppc64le":
		return []specs.Arch{specs.ArchPPC64LE}
	case "s390x":
		return []specs.Arch{specs.ArchS390X, specs.ArchS390}
	case "riscv64":
		return []specs.Arch{specs.ArchRISCV64}
	case "loong64":
		return []specs.Arch{specs.ArchLOONGARCH64}
	}
	return nil // libseccomp covers the native architecture alone
}
