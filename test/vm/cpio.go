package vm

import (
	"fmt"
	"io"
	"os"
	"path"
	"sort"
	"strings"
)

// archive is an initramfs being assembled: paths (absolute, in the guest) to files,
// directories and symlinks, written out as an uncompressed newc cpio archive, the
// format the kernel unpacks. Parents are created as needed.
type archive struct {
	entries map[string]archiveEntry
}

type archiveEntry struct {
	mode    uint32 // type and permission bits, as in stat(2)
	data    []byte // file contents, or the symlink target
	hostSrc string // a host file whose contents are read at write time, instead of data
}

const (
	modeDir     = 0o040000
	modeRegular = 0o100000
	modeSymlink = 0o120000
)

func newArchive() *archive { return &archive{entries: map[string]archiveEntry{}} }

func (a *archive) mkdirAll(p string) {
	for p = path.Clean(p); p != "/" && p != "."; p = path.Dir(p) {
		if _, ok := a.entries[p]; ok {
			return
		}
		a.entries[p] = archiveEntry{mode: modeDir | 0o755}
	}
}

// addFile adds a regular file with the given permission bits.
func (a *archive) addFile(p string, perm uint32, data []byte) {
	p = path.Clean(p)
	a.mkdirAll(path.Dir(p))
	a.entries[p] = archiveEntry{mode: modeRegular | perm, data: data}
}

// addHostFile adds a copy of a host file (symlinks followed) with its permission bits.
func (a *archive) addHostFile(p, src string) error {
	st, err := os.Stat(src)
	if err != nil {
		return err
	}
	if !st.Mode().IsRegular() {
		return fmt.Errorf("%s is not a regular file", src)
	}
	p = path.Clean(p)
	a.mkdirAll(path.Dir(p))
	a.entries[p] = archiveEntry{mode: modeRegular | uint32(st.Mode().Perm()), hostSrc: src}
	return nil
}

func (a *archive) addSymlink(p, target string) {
	p = path.Clean(p)
	a.mkdirAll(path.Dir(p))
	a.entries[p] = archiveEntry{mode: modeSymlink | 0o777, data: []byte(target)}
}

// writeTo writes the archive in newc format, parents before children.
func (a *archive) writeTo(w io.Writer) error {
	names := make([]string, 0, len(a.entries))
	for p := range a.entries {
		names = append(names, p)
	}
	sort.Strings(names)
	ino := uint32(1)
	for _, p := range names {
		e := a.entries[p]
		data := e.data
		if e.hostSrc != "" {
			var err error
			if data, err = os.ReadFile(e.hostSrc); err != nil {
				return err
			}
		}
		if err := writeCpioRecord(w, ino, e.mode, strings.TrimPrefix(p, "/"), data); err != nil {
			return err
		}
		ino++
	}
	return writeCpioRecord(w, 0, 0, "TRAILER!!!", nil)
}

func writeCpioRecord(w io.Writer, ino, mode uint32, name string, data []byte) error {
	nlink := 1
	if mode&0o170000 == modeDir {
		nlink = 2
	}
	// magic, ino, mode, uid, gid, nlink, mtime, filesize, devmajor, devminor,
	// rdevmajor, rdevminor, namesize (with the NUL), check.
	hdr := fmt.Sprintf("070701%08X%08X%08X%08X%08X%08X%08X%08X%08X%08X%08X%08X%08X",
		ino, mode, 0, 0, nlink, 0, len(data), 0, 0, 0, 0, len(name)+1, 0)
	buf := make([]byte, 0, len(hdr)+len(name)+8)
	buf = append(buf, hdr...)
	buf = append(buf, name...)
	buf = append(buf, 0)
	buf = pad4(buf)
	if _, err := w.Write(buf); err != nil {
		return err
	}
	if len(data) == 0 {
		return nil
	}
	if _, err := w.Write(data); err != nil {
		return err
	}
	_, err := w.Write(make([]byte, (4-len(data)%4)%4))
	return err
}

func pad4(b []byte) []byte {
	for len(b)%4 != 0 {
		b = append(b, 0)
	}
	return b
}
