package seccomp

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	specs "github.com/opencontainers/runtime-spec/specs-go"
)

// DefaultRoot is where Localhost profiles live (kubelet's <root-dir>/seccomp).
const DefaultRoot = "/var/lib/plinth/seccomp"

// LoadLocalhost reads the Localhost profile name (relative to root), parses and
// validates it. The name must be relative and free of "..", and resolving it — symlinks
// included — must stay inside root: the file is opened through an os.Root, which
// refuses any step out. Errors are *ProfileError naming root/name.
func LoadLocalhost(b Backend, root, name string) (*specs.LinuxSeccomp, *Summary, error) {
	data, err := readUnderRoot(root, name)
	if err != nil {
		return nil, nil, err
	}
	return parseAndValidate(b, filepath.Join(root, name), data)
}

func parseAndValidate(b Backend, file string, data []byte) (*specs.LinuxSeccomp, *Summary, error) {
	p, err := Parse(file, data)
	if err != nil {
		return nil, nil, err
	}
	s, err := Validate(b, file, p)
	if err != nil {
		return nil, nil, err
	}
	return p, s, nil
}

// checkLocalhostName refuses names that would leave the profile root before any
// symlink is looked at.
func checkLocalhostName(root, name string) error {
	fail := func(reason string) error {
		return &ProfileError{File: filepath.Join(root, name), Value: quote(name), Reason: reason}
	}
	switch {
	case name == "":
		return &ProfileError{File: root, Path: "localhostProfile", Reason: "empty; a Localhost profile needs localhostProfile, a path relative to " + root}
	case filepath.IsAbs(name):
		return &ProfileError{File: name, Value: quote(name), Reason: "localhostProfile must be relative to the profile root " + root + ", not absolute"}
	case strings.ContainsRune(name, 0):
		return fail("the name contains a NUL byte")
	}
	for _, part := range strings.Split(name, "/") {
		if part == ".." {
			return fail("localhostProfile must not contain \"..\": it would leave the profile root " + root)
		}
	}
	return nil
}

func readUnderRoot(root, name string) ([]byte, error) {
	if err := checkLocalhostName(root, name); err != nil {
		return nil, err
	}
	full := filepath.Join(root, name)
	fail := func(err error, reason string) error {
		return &ProfileError{File: full, Reason: reason, Err: err}
	}
	r, err := os.OpenRoot(root)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, fail(nil, "the profile root "+root+" does not exist")
		}
		return nil, fail(err, "cannot open the profile root")
	}
	defer r.Close()
	// Stat first so that a FIFO or a device is refused before an open could block on it.
	st, err := r.Stat(name)
	if err != nil {
		return nil, fail(err, describeOpenError(err, root))
	}
	if !st.Mode().IsRegular() {
		return nil, fail(nil, fmt.Sprintf("not a regular file (%s)", st.Mode().Type()))
	}
	f, err := r.Open(name)
	if err != nil {
		return nil, fail(err, describeOpenError(err, root))
	}
	defer f.Close()
	data, err := readLimited(f)
	if err != nil {
		return nil, fail(err, "cannot read it")
	}
	return data, nil
}

func describeOpenError(err error, root string) string {
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return "no such file"
	case errors.Is(err, fs.ErrPermission):
		return "permission denied"
	case strings.Contains(err.Error(), "escapes"):
		// os.Root's error for a symlink (or path) resolving outside the root.
		return "it resolves outside the profile root " + root + " (through a symlink)"
	}
	return "cannot open it"
}
