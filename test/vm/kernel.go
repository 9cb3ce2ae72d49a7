package vm

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// Kernel is one Debian kernel package unpacked in the cache, with its modules
// decompressed and indexed by depmod so that busybox's modprobe can load them.
type Kernel struct {
	Meta    string // the meta-package asked for, e.g. linux-image-6.12-amd64
	Package string // the package it resolved to, e.g. linux-image-6.12.117+deb12-amd64
	Release string // uname -r, the directory under lib/modules
	Root    string // where the package is unpacked
}

// Vmlinuz is the kernel image qemu boots.
func (k Kernel) Vmlinuz() string { return filepath.Join(k.Root, "boot", "vmlinuz-"+k.Release) }

// ModulesDir is lib/modules/<release>, shared read-only with the guest.
func (k Kernel) ModulesDir() string { return filepath.Join(k.Root, "lib", "modules", k.Release) }

// Label is the short name the matrix uses: the release without the flavour.
func (k Kernel) Label() string { return strings.TrimSuffix(k.Release, "-amd64") }

// PrepareKernel resolves meta to the kernel package it currently depends on, downloads
// it with apt-get and unpacks it into cacheDir, unless a previous run did. When apt
// cannot resolve the meta-package or fetch what it names (no package lists, no mirror),
// the package prepared last time is used, so a machine that ran once keeps working
// offline.
func PrepareKernel(ctx context.Context, cacheDir, meta string, log io.Writer) (Kernel, error) {
	remembered := filepath.Join(cacheDir, "meta", meta)
	pkg, err := resolveMeta(ctx, meta)
	if err == nil {
		var k Kernel
		if k, err = prepareKernelPackage(ctx, cacheDir, meta, pkg); err == nil {
			if err := os.MkdirAll(filepath.Dir(remembered), 0o755); err != nil {
				return Kernel{}, err
			}
			return k, os.WriteFile(remembered, []byte(pkg+"\n"), 0o644)
		}
	}
	last, rerr := os.ReadFile(remembered)
	if rerr != nil || strings.TrimSpace(string(last)) == pkg {
		return Kernel{}, err
	}
	fmt.Fprintf(log, "vm: %s: %v; using %s from an earlier run\n", meta, err, strings.TrimSpace(string(last)))
	return prepareKernelPackage(ctx, cacheDir, meta, strings.TrimSpace(string(last)))
}

func prepareKernelPackage(ctx context.Context, cacheDir, meta, pkg string) (Kernel, error) {
	k := Kernel{Meta: meta, Package: pkg, Root: filepath.Join(cacheDir, "kernels", pkg)}
	if _, err := os.Stat(filepath.Join(k.Root, ".ready")); err != nil {
		if err := unpackKernel(ctx, cacheDir, pkg, k.Root); err != nil {
			return Kernel{}, err
		}
	}
	var err error
	k.Release, err = moduleRelease(k.Root)
	return k, err
}

// resolveMeta asks apt which linux-image package meta depends on.
func resolveMeta(ctx context.Context, meta string) (string, error) {
	out, err := exec.CommandContext(ctx, "apt-cache", "depends", meta).CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("apt-cache depends %s: %v: %s", meta, err, strings.TrimSpace(string(out)))
	}
	if pkg := dependedKernel(string(out)); pkg != "" {
		return pkg, nil
	}
	return "", fmt.Errorf("apt-cache depends %s names no linux-image package (run apt-get update?)", meta)
}

// dependedKernel picks the first "Depends: linux-image-…" line of apt-cache depends.
func dependedKernel(aptOutput string) string {
	for _, line := range strings.Split(aptOutput, "\n") {
		f := strings.Fields(line)
		if len(f) == 2 && f[0] == "Depends:" && strings.HasPrefix(f[1], "linux-image-") {
			return f[1]
		}
	}
	return ""
}

// unpackKernel downloads pkg, unpacks it, decompresses its modules and runs depmod,
// building in a temporary directory renamed into place only when complete.
func unpackKernel(ctx context.Context, cacheDir, pkg, root string) error {
	debs := filepath.Join(cacheDir, "debs")
	if err := os.MkdirAll(debs, 0o755); err != nil {
		return err
	}
	deb, err := downloadDeb(ctx, debs, pkg)
	if err != nil {
		return err
	}
	tmp := root + ".partial"
	if err := os.RemoveAll(tmp); err != nil {
		return err
	}
	if err := run(ctx, "", "dpkg", "-x", deb, tmp); err != nil {
		return err
	}
	release, err := moduleRelease(tmp)
	if err != nil {
		return err
	}
	if err := decompressModules(ctx, filepath.Join(tmp, "lib", "modules", release)); err != nil {
		return err
	}
	// busybox's depmod writes modules.dep and modules.alias, which the guest's busybox
	// modprobe reads, both for explicit loads and for the kernel's request_module.
	if err := run(ctx, "", "busybox", "depmod", "-b", tmp, release); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(tmp, ".ready"), nil, 0o644); err != nil {
		return err
	}
	if err := os.RemoveAll(root); err != nil {
		return err
	}
	if err := os.Rename(tmp, root); err != nil {
		return err
	}
	// The unpacked tree is all later runs read.
	return os.Remove(deb)
}

func downloadDeb(ctx context.Context, dir, pkg string) (string, error) {
	find := func() string {
		m, _ := filepath.Glob(filepath.Join(dir, pkg+"_*.deb"))
		if len(m) == 0 {
			return ""
		}
		return m[len(m)-1]
	}
	if deb := find(); deb != "" {
		return deb, nil
	}
	if err := run(ctx, dir, "apt-get", "download", "-qq", pkg); err != nil {
		// Stale package lists name versions the mirror no longer has: refresh once.
		if uerr := run(ctx, "", "apt-get", "update", "-qq"); uerr != nil {
			return "", errors.Join(err, uerr)
		}
		if err := run(ctx, dir, "apt-get", "download", "-qq", pkg); err != nil {
			return "", err
		}
	}
	if deb := find(); deb != "" {
		return deb, nil
	}
	return "", fmt.Errorf("apt-get download %s left no .deb in %s", pkg, dir)
}

// moduleRelease is the one directory under root/lib/modules.
func moduleRelease(root string) (string, error) {
	entries, err := os.ReadDir(filepath.Join(root, "lib", "modules"))
	if err != nil {
		return "", fmt.Errorf("kernel package at %s: %w", root, err)
	}
	if len(entries) != 1 {
		return "", fmt.Errorf("kernel package at %s: want one directory under lib/modules, found %d", root, len(entries))
	}
	return entries[0].Name(), nil
}

// decompressModules turns every .ko.xz under dir into .ko (6.12 ships them compressed;
// busybox's modprobe may lack xz support, and the kernel may lack in-kernel xz modules).
func decompressModules(ctx context.Context, dir string) error {
	var files []string
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() && strings.HasSuffix(p, ".ko.xz") {
			files = append(files, p)
		}
		return err
	})
	if err != nil {
		return err
	}
	for len(files) > 0 {
		n := min(len(files), 256)
		if err := run(ctx, "", "xz", append([]string{"-d", "-T0"}, files[:n]...)...); err != nil {
			return err
		}
		files = files[n:]
	}
	return nil
}

// run runs a command in dir and returns its output in the error when it fails.
func run(ctx context.Context, dir, name string, args ...string) error {
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Dir = dir
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("%s %s: %v: %s", name, strings.Join(args, " "), err, strings.TrimSpace(string(out)))
	}
	return nil
}
