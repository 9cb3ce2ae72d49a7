package sysinfo

import (
	"bufio"
	"io"
	"strings"
)

// defaultPrettyName is what os-release(5) says PRETTY_NAME defaults to when unset.
const defaultPrettyName = "Linux"

// ParseOSRelease reads os-release(5) content into its variables, with shell quoting and
// backslash escapes removed. Comments, blank lines and lines that are not a valid
// assignment are skipped rather than failing the whole file, as systemd does: one odd
// vendor line must not cost the node its OS image. It fails only when reading fails.
func ParseOSRelease(r io.Reader) (map[string]string, error) {
	vars := make(map[string]string)
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" || line[0] == '#' {
			continue
		}
		key, raw, ok := strings.Cut(line, "=")
		if !ok || !validOSReleaseKey(key) {
			continue
		}
		value, ok := unquoteOSReleaseValue(raw)
		if !ok {
			continue
		}
		vars[key] = value
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	return vars, nil
}

// PrettyName returns PRETTY_NAME from parsed os-release variables, or "Linux", the
// default os-release(5) gives, when it is missing or empty.
func PrettyName(vars map[string]string) string {
	if v := vars["PRETTY_NAME"]; v != "" {
		return v
	}
	return defaultPrettyName
}

func validOSReleaseKey(key string) bool {
	if key == "" {
		return false
	}
	for i, c := range key {
		switch {
		case c == '_', c >= 'A' && c <= 'Z', c >= 'a' && c <= 'z':
		case c >= '0' && c <= '9' && i > 0:
		default:
			return false
		}
	}
	return true
}

// unquoteOSReleaseValue undoes the subset of shell quoting os-release(5) allows: one
// double-quoted string (backslash escapes $, ", `, \ and nothing else), one
// single-quoted string (literal), or a bare word with backslash escapes. Concatenated
// quoted strings are not supported by the format, so they are rejected.
func unquoteOSReleaseValue(raw string) (string, bool) {
	if raw == "" {
		return "", true
	}
	switch raw[0] {
	case '\'':
		if len(raw) < 2 || raw[len(raw)-1] != '\'' {
			return "", false
		}
		inner := raw[1 : len(raw)-1]
		if strings.ContainsRune(inner, '\'') {
			return "", false
		}
		return inner, true
	case '"':
		if len(raw) < 2 {
			return "", false
		}
		var b strings.Builder
		inner := raw[1:]
		for i := 0; i < len(inner); i++ {
			c := inner[i]
			switch {
			case c == '\\' && i+1 < len(inner) && strings.IndexByte("$\"`\\", inner[i+1]) >= 0:
				b.WriteByte(inner[i+1])
				i++
			case c == '"':
				// The closing quote must end the value.
				if i != len(inner)-1 {
					return "", false
				}
				return b.String(), true
			default:
				b.WriteByte(c)
			}
		}
		return "", false // no closing quote
	default:
		var b strings.Builder
		for i := 0; i < len(raw); i++ {
			c := raw[i]
			switch {
			case c == '\\' && i+1 < len(raw):
				b.WriteByte(raw[i+1])
				i++
			case c == '\\', c == '"', c == '\'', c == ' ', c == '\t':
				// A trailing backslash, a stray quote or whitespace means the line is
				// not the single word the format allows unquoted.
				return "", false
			default:
				b.WriteByte(c)
			}
		}
		return b.String(), true
	}
}
