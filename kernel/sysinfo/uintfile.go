package sysinfo

import (
	"fmt"
	"os"
	"strconv"
	"strings"
)

// ReadUint reads a file holding one unsigned number, such as
// /proc/sys/kernel/pid_max or a cgroup's memory.current. Errors name the file and, when
// the content is not a number, a readable prefix of it.
func ReadUint(file string) (uint64, error) {
	b, err := os.ReadFile(file)
	if err != nil {
		return 0, err
	}
	s := strings.TrimSpace(string(b))
	v, err := strconv.ParseUint(s, 10, 64)
	if err != nil {
		if len(s) > 60 {
			s = s[:60] + "..."
		}
		return 0, fmt.Errorf("%s: %q is not an unsigned number", file, s)
	}
	return v, nil
}
