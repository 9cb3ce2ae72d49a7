package features

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"fmt"
	"io"
	"path/filepath"
	"strings"
)

// Cmdline returns the kernel command line's parameters: name → value ("" for a bare
// flag such as quiet). Everything after "--" belongs to init and is left out.
func (s *System) Cmdline() (map[string]string, error) {
	b, err := s.ReadFile(filepath.Join(s.ProcDir, "cmdline"))
	if err != nil {
		return nil, err
	}
	return ParseCmdline(string(b)), nil
}

// ParseCmdline splits a kernel command line into parameters; the last of repeated
// names wins, as the kernel's own parsing of most of them does. Double quotes group a
// value with spaces (param="a b").
func ParseCmdline(line string) map[string]string {
	out := map[string]string{}
	var words []string
	var cur strings.Builder
	quoted, inWord := false, false
	for _, r := range line {
		switch {
		case r == '"':
			quoted, inWord = !quoted, true
		case !quoted && (r == ' ' || r == '\t' || r == '\n'):
			if inWord {
				words = append(words, cur.String())
				cur.Reset()
				inWord = false
			}
		default:
			cur.WriteRune(r)
			inWord = true
		}
	}
	if inWord {
		words = append(words, cur.String())
	}
	for _, w := range words {
		if w == "--" {
			break
		}
		name, value, _ := strings.Cut(w, "=")
		out[name] = value
	}
	return out
}

// boolParamTrue reads a boolean kernel parameter as the kernel's kstrtobool does:
// 1, y, Y, on mean true.
func boolParamTrue(v string) bool {
	switch strings.ToLower(v) {
	case "1", "y", "yes", "on", "":
		return true
	}
	return false
}

// KernelConfig returns the kernel's build configuration (CONFIG_X → "y", "m", a value;
// options "is not set" are absent) from /proc/config.gz, else /boot/config-<release>,
// and which file it read. Many kernels publish neither; callers treat an error as
// "unknown".
func (s *System) KernelConfig() (map[string]string, string, error) {
	gz := filepath.Join(s.ProcDir, "config.gz")
	if b, err := s.ReadFile(gz); err == nil {
		zr, err := gzip.NewReader(bytes.NewReader(b))
		if err != nil {
			return nil, gz, fmt.Errorf("%s: %w", gz, err)
		}
		// A kernel configuration is a few hundred KiB; more is not one.
		text, err := io.ReadAll(io.LimitReader(zr, 16<<20))
		if err != nil {
			return nil, gz, fmt.Errorf("%s: %w", gz, err)
		}
		return ParseKernelConfig(string(text)), gz, nil
	}
	rel, err := s.Release()
	if err != nil {
		return nil, "", err
	}
	p := filepath.Join(s.BootDir, "config-"+filepath.Base(rel))
	b, err := s.ReadFile(p)
	if err != nil {
		return nil, p, err
	}
	return ParseKernelConfig(string(b)), p, nil
}

// ParseKernelConfig reads the lines CONFIG_NAME=value of a kernel .config.
func ParseKernelConfig(text string) map[string]string {
	out := map[string]string{}
	sc := bufio.NewScanner(strings.NewReader(text))
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if !strings.HasPrefix(line, "CONFIG_") {
			continue
		}
		if name, value, ok := strings.Cut(line, "="); ok {
			out[name] = strings.Trim(value, `"`)
		}
	}
	return out
}
