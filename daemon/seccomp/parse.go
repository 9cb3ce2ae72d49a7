package seccomp

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"regexp"

	specs "github.com/opencontainers/runtime-spec/specs-go"

	kseccomp "github.com/plinth/plinth/kernel/seccomp"
)

// MaxProfileBytes bounds a profile file. Real profiles are a few tens of KiB; the
// bound keeps a mistaken path (a log, a device) from being read whole.
const MaxProfileBytes = 1 << 20

// maxErrno is the largest errno the kernel returns from a seccomp filter (MAX_ERRNO);
// larger SECCOMP_RET_DATA values are clamped, so a profile asking for one is a mistake.
const maxErrno = 4095

// maxSyscallArgs is the number of syscall arguments a filter can compare (0 to 5).
const maxSyscallArgs = 6

var (
	profileFields = fieldSet("defaultAction", "defaultErrnoRet", "architectures", "flags",
		"listenerPath", "listenerMetadata", "syscalls")
	syscallFields = fieldSet("names", "action", "errnoRet", "args")
	argFields     = fieldSet("index", "value", "valueTwo", "op")
	// dockerFields are fields of Docker's profile format, which is not the runtime spec's;
	// naming the format saves the user a search.
	dockerFields = fieldSet("archMap", "includes", "excludes", "comment", "name", "minKernel")

	// syscallName is what a syscall name can look like in any libseccomp table.
	syscallName = regexp.MustCompile(`^[a-z_][a-z0-9_]*$`)
)

func fieldSet(names ...string) map[string]bool {
	m := make(map[string]bool, len(names))
	for _, n := range names {
		m[n] = true
	}
	return m
}

// Parse reads an OCI runtime-spec seccomp profile (the LinuxSeccomp object of a
// container's config.json) and checks everything that needs no libseccomp: field names
// (exactly, unlike encoding/json's case-insensitive matching, so a misspelt field is an
// error rather than silently ignored), types, actions, operators, architectures, flags,
// errno values, argument indexes and the rules runc adds for SCMP_ACT_NOTIFY. file only
// names the profile in errors. Every error is a *ProfileError.
func Parse(file string, data []byte) (*specs.LinuxSeccomp, error) {
	d := decoder{file: file}
	p, err := d.profile(data)
	if err != nil {
		return nil, err
	}
	if err := checkStructure(file, p); err != nil {
		return nil, err
	}
	return p, nil
}

type decoder struct{ file string }

func (d decoder) errorf(path, value, format string, args ...any) error {
	return &ProfileError{File: d.file, Path: path, Value: value, Reason: fmt.Sprintf(format, args...)}
}

func (d decoder) profile(data []byte) (*specs.LinuxSeccomp, error) {
	if len(bytes.TrimSpace(data)) == 0 {
		return nil, d.errorf("", "", "the file is empty; want a JSON object with at least defaultAction")
	}
	if !json.Valid(data) {
		var v any
		err := json.Unmarshal(data, &v)
		var se *json.SyntaxError
		if errors.As(err, &se) {
			line, col := position(data, se.Offset)
			return nil, d.errorf("", "", "not valid JSON at line %d, column %d: %v", line, col, se)
		}
		return nil, d.errorf("", "", "not valid JSON: %v", err)
	}
	top, err := d.object("", data, profileFields)
	if err != nil {
		return nil, err
	}
	p := &specs.LinuxSeccomp{}
	for _, f := range top {
		switch f.name {
		case "defaultAction":
			err = d.value(f.name, f.raw, &p.DefaultAction, "a string such as \"SCMP_ACT_ERRNO\"")
		case "defaultErrnoRet":
			err = d.value(f.name, f.raw, &p.DefaultErrnoRet, "a non-negative integer")
		case "architectures":
			err = stringList(d, f.name, f.raw, &p.Architectures, "SCMP_ARCH_X86_64")
		case "flags":
			err = stringList(d, f.name, f.raw, &p.Flags, "SECCOMP_FILTER_FLAG_LOG")
		case "listenerPath":
			err = d.value(f.name, f.raw, &p.ListenerPath, "a string")
		case "listenerMetadata":
			err = d.value(f.name, f.raw, &p.ListenerMetadata, "a string")
		case "syscalls":
			p.Syscalls, err = d.syscalls(f.raw)
		}
		if err != nil {
			return nil, err
		}
	}
	return p, nil
}

func (d decoder) syscalls(raw json.RawMessage) ([]specs.LinuxSyscall, error) {
	var items []json.RawMessage
	if err := d.value("syscalls", raw, &items, "a list of objects"); err != nil {
		return nil, err
	}
	out := make([]specs.LinuxSyscall, len(items))
	for i, item := range items {
		path := syscallPath(i)
		fields, err := d.object(path, item, syscallFields)
		if err != nil {
			return nil, err
		}
		sc := &out[i]
		for _, f := range fields {
			fp := path + "." + f.name
			switch f.name {
			case "names":
				err = stringList(d, fp, f.raw, &sc.Names, "mkdir")
			case "action":
				err = d.value(fp, f.raw, &sc.Action, "a string such as \"SCMP_ACT_ALLOW\"")
			case "errnoRet":
				err = d.value(fp, f.raw, &sc.ErrnoRet, "a non-negative integer")
			case "args":
				sc.Args, err = d.args(fp, f.raw)
			}
			if err != nil {
				return nil, err
			}
		}
	}
	return out, nil
}

func (d decoder) args(path string, raw json.RawMessage) ([]specs.LinuxSeccompArg, error) {
	var items []json.RawMessage
	if err := d.value(path, raw, &items, "a list of objects"); err != nil {
		return nil, err
	}
	out := make([]specs.LinuxSeccompArg, len(items))
	for k, item := range items {
		ap := indexed(path, k)
		fields, err := d.object(ap, item, argFields)
		if err != nil {
			return nil, err
		}
		for _, f := range fields {
			fp := ap + "." + f.name
			switch f.name {
			case "index":
				err = d.value(fp, f.raw, &out[k].Index, "an integer from 0 to 5")
			case "value":
				err = d.value(fp, f.raw, &out[k].Value, "an unsigned 64-bit integer")
			case "valueTwo":
				err = d.value(fp, f.raw, &out[k].ValueTwo, "an unsigned 64-bit integer")
			case "op":
				err = d.value(fp, f.raw, &out[k].Op, "a string such as \"SCMP_CMP_EQ\"")
			}
			if err != nil {
				return nil, err
			}
		}
	}
	return out, nil
}

type field struct {
	name string
	raw  json.RawMessage
}

// object splits a JSON object into its fields in document order, refusing anything but
// an object, unknown or repeated field names.
func (d decoder) object(path string, raw json.RawMessage, allowed map[string]bool) ([]field, error) {
	where := path
	if where == "" {
		where = "the top level"
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	tok, err := dec.Token()
	if err != nil || tok != json.Delim('{') {
		return nil, d.errorf(path, excerpt(raw), "want a JSON object at %s", where)
	}
	var out []field
	seen := map[string]bool{}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil, d.errorf(path, "", "reading the object: %v", err)
		}
		name, _ := tok.(string)
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return nil, d.errorf(join(path, name), "", "reading the value: %v", err)
		}
		switch {
		case seen[name]:
			return nil, d.errorf(join(path, name), "", "the field appears twice")
		case !allowed[name] && dockerFields[name]:
			return nil, d.errorf(join(path, name), "", "this is a field of Docker's profile format; Plinth reads the OCI runtime-spec format (architectures instead of archMap, no includes/excludes)")
		case !allowed[name]:
			return nil, d.errorf(join(path, name), "", "unknown field; want one of %s", sortedKeys(allowed))
		}
		seen[name] = true
		out = append(out, field{name, v})
	}
	return out, nil
}

// stringList decodes a list of strings, naming the element that is not one.
func stringList[S ~string](d decoder, path string, raw json.RawMessage, dst *[]S, example string) error {
	var items []json.RawMessage
	if err := d.value(path, raw, &items, fmt.Sprintf("a list of strings such as [%q]", example)); err != nil {
		return err
	}
	if items == nil {
		*dst = nil
		return nil
	}
	out := make([]S, len(items))
	for i, item := range items {
		var s string
		if bytes.Equal(bytes.TrimSpace(item), []byte("null")) || json.Unmarshal(item, &s) != nil {
			return d.errorf(indexed(path, i), excerpt(item), "want a string such as %q", example)
		}
		out[i] = S(s)
	}
	*dst = out
	return nil
}

// value decodes one JSON value, turning a type mismatch into an error naming the path,
// the value and what was wanted.
func (d decoder) value(path string, raw json.RawMessage, dst any, want string) error {
	if err := json.Unmarshal(raw, dst); err != nil {
		return d.errorf(path, excerpt(raw), "want %s", want)
	}
	return nil
}

func join(path, name string) string {
	if path == "" {
		return name
	}
	return path + "." + name
}

// excerpt shows a raw JSON value in an error, shortened when long.
func excerpt(raw []byte) string {
	raw = bytes.TrimSpace(raw)
	const max = 60
	if len(raw) > max {
		return string(raw[:max]) + "…"
	}
	return string(raw)
}

// position turns a json.SyntaxError offset (the bytes read up to and including the
// offending one) into the 1-based line and column of the offending byte.
func position(data []byte, offset int64) (line, col int) {
	i := int(min(max(offset-1, 0), int64(len(data))))
	before := data[:i]
	line = bytes.Count(before, []byte("\n")) + 1
	col = i - bytes.LastIndexByte(before, '\n')
	return line, col
}

// readLimited reads at most MaxProfileBytes, failing on more.
func readLimited(r io.Reader) ([]byte, error) {
	data, err := io.ReadAll(io.LimitReader(r, MaxProfileBytes+1))
	if err != nil {
		return nil, err
	}
	if len(data) > MaxProfileBytes {
		return nil, fmt.Errorf("larger than %d bytes", MaxProfileBytes)
	}
	return data, nil
}

// checkStructure checks what a profile means without asking libseccomp.
func checkStructure(file string, p *specs.LinuxSeccomp) error {
	e := func(path, value, format string, args ...any) error {
		return &ProfileError{File: file, Path: path, Value: value, Reason: fmt.Sprintf(format, args...)}
	}
	if p.DefaultAction == "" {
		return e("defaultAction", "", "missing; want one of %s", knownActions())
	}
	if !kseccomp.KnownAction(p.DefaultAction) {
		return e("defaultAction", quote(string(p.DefaultAction)), "unknown action; want one of %s", knownActions())
	}
	if p.DefaultAction == specs.ActNotify {
		return e("defaultAction", quote(string(p.DefaultAction)), "SCMP_ACT_NOTIFY cannot be the default action (runc refuses it: its own writes would wait on the agent)")
	}
	if err := checkErrno(e, "defaultErrnoRet", p.DefaultErrnoRet, p.DefaultAction); err != nil {
		return err
	}
	seenArch := map[specs.Arch]bool{}
	for i, a := range p.Architectures {
		path := indexed("architectures", i)
		if !kseccomp.KnownArch(a) {
			return e(path, quote(string(a)), "unknown architecture; want SCMP_ARCH_X86_64, SCMP_ARCH_X86, SCMP_ARCH_X32, SCMP_ARCH_AARCH64, SCMP_ARCH_ARM or another SCMP_ARCH_ name of the runtime spec")
		}
		if seenArch[a] {
			return e(path, quote(string(a)), "listed twice")
		}
		seenArch[a] = true
	}
	seenFlag := map[specs.LinuxSeccompFlag]bool{}
	for i, f := range p.Flags {
		path := indexed("flags", i)
		if !kseccomp.KnownFlag(f) {
			return e(path, quote(string(f)), "unknown flag; want SECCOMP_FILTER_FLAG_TSYNC, SECCOMP_FILTER_FLAG_LOG, SECCOMP_FILTER_FLAG_SPEC_ALLOW or SECCOMP_FILTER_FLAG_WAIT_KILLABLE_RECV")
		}
		if seenFlag[f] {
			return e(path, quote(string(f)), "listed twice")
		}
		seenFlag[f] = true
	}
	usesNotify := false
	for i, sc := range p.Syscalls {
		path := syscallPath(i)
		if len(sc.Names) == 0 {
			return e(path+".names", "", "missing or empty; want at least one syscall name")
		}
		for j, n := range sc.Names {
			if !syscallName.MatchString(n) {
				return e(namePath(i, j), quote(n), "not a syscall name (lowercase letters, digits and _)")
			}
		}
		if sc.Action == "" {
			return e(path+".action", "", "missing; want one of %s", knownActions())
		}
		if !kseccomp.KnownAction(sc.Action) {
			return e(path+".action", quote(string(sc.Action)), "unknown action; want one of %s", knownActions())
		}
		if sc.Action == specs.ActNotify {
			usesNotify = true
			for j, n := range sc.Names {
				if n == "write" {
					return e(namePath(i, j), quote(n), "SCMP_ACT_NOTIFY cannot be used for write (runc refuses it: it hands the notify fd over with a write)")
				}
			}
		}
		if err := checkErrno(e, path+".errnoRet", sc.ErrnoRet, sc.Action); err != nil {
			return err
		}
		for k, a := range sc.Args {
			ap := argPath(i, k)
			if a.Index >= maxSyscallArgs {
				return e(ap+".index", fmt.Sprint(a.Index), "a syscall has arguments 0 to 5")
			}
			if a.Op == "" {
				return e(ap+".op", "", "missing; want one of %s", knownOperators())
			}
			if !kseccomp.KnownOperator(a.Op) {
				return e(ap+".op", quote(string(a.Op)), "unknown operator; want one of %s", knownOperators())
			}
			if a.ValueTwo != 0 && a.Op != specs.OpMaskedEqual {
				return e(ap+".valueTwo", fmt.Sprint(a.ValueTwo), "valueTwo is used only by SCMP_CMP_MASKED_EQ (as the value to compare after masking with value); %s ignores it", a.Op)
			}
		}
	}
	if usesNotify {
		if p.ListenerPath == "" {
			return e("listenerPath", "", "missing; SCMP_ACT_NOTIFY needs the absolute path of the seccomp agent's unix socket")
		}
	}
	if p.ListenerPath != "" && p.ListenerPath[0] != '/' {
		return e("listenerPath", quote(p.ListenerPath), "want an absolute path")
	}
	return nil
}

func checkErrno(e func(path, value, format string, args ...any) error, path string, errno *uint, act specs.LinuxSeccompAction) error {
	if errno == nil {
		return nil
	}
	if act != specs.ActErrno && act != specs.ActTrace {
		return e(path, fmt.Sprint(*errno), "an errno return is used only with SCMP_ACT_ERRNO and SCMP_ACT_TRACE, not %s", act)
	}
	if *errno > maxErrno {
		return e(path, fmt.Sprint(*errno), "want an errno from 0 to %d", maxErrno)
	}
	return nil
}
