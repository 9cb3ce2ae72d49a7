package seccomp

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"os"
	"strings"

	specs "github.com/opencontainers/runtime-spec/specs-go"
)

// CheckFile reads, parses and validates a profile at any path, as plinthd will when a
// container names it as a Localhost profile (except that plinthd also confines the path
// to its profile root).
func CheckFile(b Backend, path string) (*specs.LinuxSeccomp, *Summary, error) {
	fail := func(err error, reason string) error {
		return &ProfileError{File: path, Reason: reason, Err: err}
	}
	st, err := os.Stat(path)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, nil, fail(nil, "no such file")
		}
		return nil, nil, fail(err, "cannot read it")
	}
	if !st.Mode().IsRegular() {
		return nil, nil, fail(nil, fmt.Sprintf("not a regular file (%s)", st.Mode().Type()))
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, nil, fail(err, "cannot open it")
	}
	defer f.Close()
	data, err := readLimited(f)
	if err != nil {
		return nil, nil, fail(err, "cannot read it")
	}
	return parseAndValidate(b, path, data)
}

const checkUsage = `usage: plinthctl seccomp COMMAND

commands:
  check FILE                 validate an OCI seccomp profile as plinthd will before creating
                             a container with it (exit 1 on a problem)
  default [--cap CAP ...]    print Plinth's RuntimeDefault profile as JSON, for a container
                             holding the given capabilities
`

// CheckCommand runs `plinthctl seccomp ARGS...` and returns the exit code.
func CheckCommand(b Backend, args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, checkUsage)
		return 2
	}
	switch args[0] {
	case "check":
		fs := flag.NewFlagSet("plinthctl seccomp check", flag.ContinueOnError)
		fs.SetOutput(stderr)
		if err := fs.Parse(args[1:]); err != nil {
			return 2
		}
		if fs.NArg() != 1 {
			fmt.Fprint(stderr, "usage: plinthctl seccomp check FILE\n")
			return 2
		}
		_, s, err := CheckFile(b, fs.Arg(0))
		if err != nil {
			fmt.Fprintln(stderr, err)
			return 1
		}
		fmt.Fprintf(stdout, "OK %s: %s\n", fs.Arg(0), s)
		for _, w := range s.Warnings {
			fmt.Fprintf(stdout, "warning: %s\n", w)
		}
		return 0
	case "default":
		fs := flag.NewFlagSet("plinthctl seccomp default", flag.ContinueOnError)
		fs.SetOutput(stderr)
		var caps capList
		fs.Var(&caps, "cap", "a capability the container holds (repeatable), e.g. CAP_SYS_ADMIN")
		if err := fs.Parse(args[1:]); err != nil {
			return 2
		}
		out, err := json.MarshalIndent(RuntimeDefault(caps), "", "  ")
		if err != nil {
			fmt.Fprintln(stderr, err)
			return 1
		}
		fmt.Fprintf(stdout, "%s\n", out)
		return 0
	}
	fmt.Fprintf(stderr, "plinthctl seccomp: unknown command %q\n\n%s", args[0], checkUsage)
	return 2
}

type capList []string

func (c *capList) String() string     { return strings.Join(*c, ",") }
func (c *capList) Set(v string) error { *c = append(*c, v); return nil }
