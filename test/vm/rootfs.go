package vm

import (
	"bufio"
	"bytes"
	"context"
	_ "embed"
	"fmt"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"strings"
)

//go:embed init.sh
var initScript []byte

// guestTools are the host programs the kernel tests run (besides busybox's applets),
// copied into the guest at their host paths with the shared libraries they need.
var guestTools = []string{
	"ip",        // iproute2: ip netns, veth and bridge links (busybox's ip has no netns)
	"nft",       // nftables: tests compare what plinthd programs with what nft prints
	"nsenter",   // util-linux
	"unshare",   // util-linux: user namespace probes
	"losetup",   // util-linux
	"mount",     // util-linux: overlay and bind mounts with every option
	"umount",    // util-linux
	"runc",      // the pinned runc scripts/install-deps.sh builds
	"getconf",   // libc-bin
	"mkfs.ext4", // e2fsprogs
}

// bootModules are loaded after the 9p shares are up, as a Debian host has them loaded
// (by nftables.service, systemd-modules-load, or an earlier autoload) before Plinth's
// probes look: the probes read /proc and /dev and do not trigger autoloading. Other
// modules autoload through the kernel's request_module and the guest's modprobe.
// crc32c_generic first: nf_tables needs crc32c, whose alias otherwise resolves to
// crc32c_intel, which refuses to load on an emulated CPU without SSE4.2.
var bootModules = []string{
	"crc32c_generic", "nfnetlink", "nf_tables", "nf_conntrack", "nf_conntrack_netlink", "nf_nat",
	"veth", "bridge", "overlay", "loop",
}

// transportModules are what the initramfs itself carries: virtio PCI (a module on 6.1)
// and 9p over virtio, to mount the shares everything else comes from.
var transportModules = []string{"virtio_pci", "9pnet_virtio", "9p"}

// guestConfig is what the guest's init reads from /etc/plinth-vm.conf.
type guestConfig struct {
	Repo        string       // host path of the repository, mounted read-only at the same path
	TestTimeout string       // -test.timeout for each binary
	Binaries    []TestBinary // run in this order
}

// buildInitramfs writes the guest's initramfs for kernel k to dst: busybox, init, the
// guest tools and every library they and the test binaries in binDir link, and the 9p
// transport modules.
func buildInitramfs(ctx context.Context, k Kernel, cfg guestConfig, binDir, dst string) error {
	a := newArchive()
	a.addFile("/init", 0o755, initScript)
	if err := addBusybox(ctx, a); err != nil {
		return err
	}
	var elfs []string
	for _, tool := range guestTools {
		p, err := exec.LookPath(tool)
		if err != nil {
			return fmt.Errorf("guest tool %s: %w (scripts/install-deps.sh installs it)", tool, err)
		}
		if err := a.addHostFile(p, p); err != nil {
			return err
		}
		elfs = append(elfs, p)
	}
	for _, b := range cfg.Binaries {
		elfs = append(elfs, filepath.Join(binDir, b.Name))
	}
	addUsrBinApplets(a)
	if err := addSharedLibraries(ctx, a, elfs); err != nil {
		return err
	}
	if err := addTransportModules(a, k); err != nil {
		return err
	}

	a.addFile("/etc/plinth-vm.conf", 0o644, []byte(cfg.render()))
	a.addFile("/etc/passwd", 0o644, []byte("root:x:0:0:root:/root:/bin/sh\nnobody:x:65534:65534:nobody:/nonexistent:/bin/false\n"))
	a.addFile("/etc/group", 0o644, []byte("root:x:0:\nnogroup:x:65534:\n"))
	a.addFile("/etc/hosts", 0o644, []byte("127.0.0.1 localhost\n::1 localhost ip6-localhost\n"))
	a.addFile("/etc/resolv.conf", 0o644, nil)
	a.addFile("/etc/nsswitch.conf", 0o644, []byte("passwd: files\ngroup: files\nhosts: files\n"))
	for _, d := range []string{"/proc", "/sys", "/dev", "/tmp", "/run", "/root", "/vm/bins", "/vm/results",
		"/lib/modules/" + k.Release, cfg.Repo} {
		a.mkdirAll(d)
	}
	a.addSymlink("/var/run", "../run")

	f, err := os.Create(dst)
	if err != nil {
		return err
	}
	w := bufio.NewWriterSize(f, 1<<20)
	if err := a.writeTo(w); err != nil {
		f.Close()
		return err
	}
	if err := w.Flush(); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

func (c guestConfig) render() string {
	var pkgs []string
	for _, b := range c.Binaries {
		pkgs = append(pkgs, b.Name+":"+b.Dir+":"+runPattern(b.Tests))
	}
	return fmt.Sprintf("REPO=%s\nTEST_TIMEOUT=%s\nMODULES=%s\nPACKAGES=%s\n",
		shellQuote(c.Repo), shellQuote(c.TestTimeout), shellQuote(strings.Join(bootModules, " ")), shellQuote(strings.Join(pkgs, " ")))
}

func shellQuote(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }

// addBusybox adds the static busybox with every applet linked in /bin, and /sbin/modprobe
// where the kernel's request_module looks for it.
func addBusybox(ctx context.Context, a *archive) error {
	bb, err := exec.LookPath("busybox")
	if err != nil {
		return fmt.Errorf("busybox: %w (install busybox-static)", err)
	}
	if err := a.addHostFile("/bin/busybox", bb); err != nil {
		return err
	}
	out, err := exec.CommandContext(ctx, bb, "--list").Output()
	if err != nil {
		return fmt.Errorf("busybox --list: %w", err)
	}
	for _, applet := range strings.Fields(string(out)) {
		if applet != "busybox" {
			a.addSymlink("/bin/"+applet, "busybox")
		}
	}
	a.addSymlink("/sbin/modprobe", "/bin/busybox")
	return nil
}

// addUsrBinApplets links each busybox applet into /usr/bin too, where a Debian host has
// coreutils and tests name them by path (/usr/bin/env), unless a host tool is there.
func addUsrBinApplets(a *archive) {
	var applets []string
	for p, e := range a.entries {
		if applet, ok := strings.CutPrefix(p, "/bin/"); ok && e.mode&0o170000 == modeSymlink {
			applets = append(applets, applet)
		}
	}
	for _, applet := range applets {
		if _, taken := a.entries["/usr/bin/"+applet]; !taken {
			a.addSymlink("/usr/bin/"+applet, "/bin/busybox")
		}
	}
}

// addSharedLibraries adds every library ldd resolves for the given ELF files, at the
// paths ldd names (the dynamic loader included). Static binaries need none.
func addSharedLibraries(ctx context.Context, a *archive, elfs []string) error {
	seen := map[string]bool{}
	for _, elf := range elfs {
		out, err := exec.CommandContext(ctx, "ldd", elf).CombinedOutput()
		if err != nil {
			if bytes.Contains(out, []byte("not a dynamic executable")) {
				continue
			}
			return fmt.Errorf("ldd %s: %v: %s", elf, err, strings.TrimSpace(string(out)))
		}
		libs, err := lddLibraries(string(out))
		if err != nil {
			return fmt.Errorf("ldd %s: %w", elf, err)
		}
		for _, lib := range libs {
			if seen[lib] {
				continue
			}
			seen[lib] = true
			if err := a.addHostFile(lib, lib); err != nil {
				return err
			}
		}
	}
	return nil
}

// lddLibraries picks the absolute library paths out of ldd's output.
func lddLibraries(out string) ([]string, error) {
	var libs []string
	for _, line := range strings.Split(out, "\n") {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "linux-vdso") {
			continue
		}
		if strings.Contains(line, "not found") {
			return nil, fmt.Errorf("missing library: %s", line)
		}
		p := line
		if _, after, ok := strings.Cut(line, "=>"); ok {
			p = strings.TrimSpace(after)
		}
		if f := strings.Fields(p); len(f) > 0 && strings.HasPrefix(f[0], "/") {
			libs = append(libs, f[0])
		}
	}
	return libs, nil
}

// addTransportModules copies the 9p-over-virtio modules (with their dependencies) into
// /vm/initrd-modules, numbered in load order.
func addTransportModules(a *archive, k Kernel) error {
	dep, err := os.Open(filepath.Join(k.ModulesDir(), "modules.dep"))
	if err != nil {
		return err
	}
	defer dep.Close()
	builtin, err := os.Open(filepath.Join(k.ModulesDir(), "modules.builtin"))
	if err != nil {
		return err
	}
	defer builtin.Close()
	idx, err := parseModuleIndex(dep, builtin)
	if err != nil {
		return fmt.Errorf("%s: %w", k.ModulesDir(), err)
	}
	order, err := idx.loadOrder(transportModules...)
	if err != nil {
		return fmt.Errorf("kernel %s: %w", k.Release, err)
	}
	for i, rel := range order {
		name := fmt.Sprintf("/vm/initrd-modules/%02d-%s", i, path.Base(rel))
		if err := a.addHostFile(name, filepath.Join(k.ModulesDir(), rel)); err != nil {
			return err
		}
	}
	return nil
}
