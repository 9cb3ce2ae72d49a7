package seccomp

import (
	"fmt"
	"strings"
)

// ProfileError is a problem with one seccomp profile. Its text names the file, the
// place in the JSON document (syscalls[3].names[1]), the value found there and what is
// wrong, so it can go as it is into a container's CreateContainerError message.
type ProfileError struct {
	// File is the profile's path as plinthd opened it (for Localhost profiles, under the
	// profile root), or the source a profile came from ("RuntimeDefault").
	File string
	// Path is the JSON path of the offending value; empty when the problem is the file
	// itself (missing, unreadable, escaping the root).
	Path string
	// Value is the offending value as it appears in the profile, quoted where a string;
	// empty when there is none.
	Value string
	// Reason says what is wrong and, where it helps, what would be accepted.
	Reason string
	// Err is the underlying error, when there is one.
	Err error
}

func (e *ProfileError) Error() string {
	var b strings.Builder
	b.WriteString("seccomp profile ")
	b.WriteString(e.File)
	if e.Path != "" {
		b.WriteString(": ")
		b.WriteString(e.Path)
	}
	if e.Value != "" {
		b.WriteString(": ")
		b.WriteString(e.Value)
	}
	b.WriteString(": ")
	b.WriteString(e.Reason)
	if e.Err != nil {
		b.WriteString(": ")
		b.WriteString(e.Err.Error())
	}
	return b.String()
}

func (e *ProfileError) Unwrap() error { return e.Err }

// quote renders a string value as it would appear in JSON.
func quote(s string) string { return fmt.Sprintf("%q", s) }

func syscallPath(i int) string           { return fmt.Sprintf("syscalls[%d]", i) }
func namePath(i, j int) string           { return fmt.Sprintf("syscalls[%d].names[%d]", i, j) }
func argPath(i, k int) string            { return fmt.Sprintf("syscalls[%d].args[%d]", i, k) }
func indexed(field string, i int) string { return fmt.Sprintf("%s[%d]", field, i) }
