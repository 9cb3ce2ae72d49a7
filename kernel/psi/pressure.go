package psi

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// Resource is one of the resources the kernel reports pressure for.
type Resource int

const (
	CPU Resource = iota + 1
	Memory
	IO
)

// Resources lists every Resource, in the order the kernel documents them.
func Resources() []Resource { return []Resource{CPU, Memory, IO} }

// String returns the name the kernel uses in file names: "cpu", "memory" or "io".
func (r Resource) String() string {
	switch r {
	case CPU:
		return "cpu"
	case Memory:
		return "memory"
	case IO:
		return "io"
	}
	return fmt.Sprintf("Resource(%d)", int(r))
}

func (r Resource) valid() bool { return r >= CPU && r <= IO }

// ParseResource turns "cpu", "memory" or "io" into a Resource.
func ParseResource(s string) (Resource, error) {
	for _, r := range Resources() {
		if r.String() == s {
			return r, nil
		}
	}
	return 0, fmt.Errorf("psi resource %q: want cpu, memory or io", s)
}

// SystemDir is where the kernel publishes node-wide pressure.
const SystemDir = "/proc/pressure"

// SystemPath returns the node-wide pressure file of res, e.g. /proc/pressure/memory.
func SystemPath(res Resource) string { return filepath.Join(SystemDir, res.String()) }

// CgroupPath returns the pressure file of res inside a cgroup v2 directory, e.g.
// /sys/fs/cgroup/unified/pod1/memory.pressure.
func CgroupPath(cgroupDir string, res Resource) string {
	return filepath.Join(cgroupDir, res.String()+".pressure")
}

// Stall is one line of a pressure file: the share of wall time in which tasks stalled,
// as running averages over 10 s, 60 s and 300 s (percentages, 0 to 100), and the total
// stall time since boot (or since the cgroup was created).
type Stall struct {
	Avg10, Avg60, Avg300 float64
	Total                time.Duration
}

// Pressure is the content of one pressure file. Some is the time at least one task
// stalled; Full is the time all non-idle tasks stalled at once. HasFull is false when the
// file has no "full" line, as /proc/pressure/cpu on kernels before 5.13. Newer kernels
// print a "full" line of zeros for node-wide cpu, which is kept as it is.
type Pressure struct {
	Some, Full Stall
	HasFull    bool
}

// maxTotalMicros is the largest total (in µs) that fits a time.Duration.
const maxTotalMicros = math.MaxInt64 / int64(time.Microsecond)

// Parse reads the content of a pressure file:
//
//	some avg10=0.12 avg60=0.05 avg300=0.01 total=123456
//	full avg10=0.00 avg60=0.00 avg300=0.00 total=789
//
// A "some" line is required, "full" is optional, and each may appear once. Each line
// needs avg10, avg60, avg300 (percentages from 0 to 100) and total (microseconds); fields
// a future kernel may add are ignored. Errors name the line and the field.
func Parse(r io.Reader) (Pressure, error) {
	var p Pressure
	var sawSome bool
	sc := bufio.NewScanner(r)
	for lineNo := 1; sc.Scan(); lineNo++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" {
			continue
		}
		kind, rest, _ := strings.Cut(line, " ")
		var dst *Stall
		switch kind {
		case "some":
			if sawSome {
				return Pressure{}, fmt.Errorf("line %d: second \"some\" line", lineNo)
			}
			dst, sawSome = &p.Some, true
		case "full":
			if p.HasFull {
				return Pressure{}, fmt.Errorf("line %d: second \"full\" line", lineNo)
			}
			dst, p.HasFull = &p.Full, true
		default:
			return Pressure{}, fmt.Errorf("line %d: %q: want a line starting with \"some\" or \"full\"", lineNo, truncate(kind))
		}
		s, err := parseStall(rest)
		if err != nil {
			return Pressure{}, fmt.Errorf("line %d (%s): %w", lineNo, kind, err)
		}
		*dst = s
	}
	if err := sc.Err(); err != nil {
		return Pressure{}, err
	}
	if !sawSome {
		return Pressure{}, errors.New("no \"some\" line")
	}
	return p, nil
}

// parseStall parses "avg10=0.12 avg60=0.05 avg300=0.01 total=123456".
func parseStall(fields string) (Stall, error) {
	var s Stall
	const (
		haveAvg10 = 1 << iota
		haveAvg60
		haveAvg300
		haveTotal
		haveAll = haveAvg10 | haveAvg60 | haveAvg300 | haveTotal
	)
	var seen int
	for _, f := range strings.Fields(fields) {
		key, val, ok := strings.Cut(f, "=")
		if !ok {
			return Stall{}, fmt.Errorf("field %q: want key=value", truncate(f))
		}
		var bit int
		switch key {
		case "avg10", "avg60", "avg300":
			v, err := parseAvg(val)
			if err != nil {
				return Stall{}, fmt.Errorf("field %s: %w", key, err)
			}
			switch key {
			case "avg10":
				bit, s.Avg10 = haveAvg10, v
			case "avg60":
				bit, s.Avg60 = haveAvg60, v
			default:
				bit, s.Avg300 = haveAvg300, v
			}
		case "total":
			us, err := strconv.ParseInt(val, 10, 64)
			if err != nil || us < 0 || us > maxTotalMicros {
				return Stall{}, fmt.Errorf("field total: %q is not a count of microseconds from 0 to %d", truncate(val), maxTotalMicros)
			}
			bit, s.Total = haveTotal, time.Duration(us)*time.Microsecond
		default:
			continue // a field a newer kernel added
		}
		if seen&bit != 0 {
			return Stall{}, fmt.Errorf("field %s appears twice", key)
		}
		seen |= bit
	}
	if seen != haveAll {
		var missing []string
		for i, name := range []string{"avg10", "avg60", "avg300", "total"} {
			if seen&(1<<i) == 0 {
				missing = append(missing, name)
			}
		}
		return Stall{}, fmt.Errorf("missing field(s) %s", strings.Join(missing, ", "))
	}
	return s, nil
}

func parseAvg(val string) (float64, error) {
	v, err := strconv.ParseFloat(val, 64)
	if err != nil || math.IsNaN(v) || v < 0 || v > 100 {
		return 0, fmt.Errorf("%q is not a percentage from 0 to 100", truncate(val))
	}
	return v, nil
}

// truncate keeps error messages readable when the input is garbage.
func truncate(s string) string {
	const max = 40
	if len(s) <= max {
		return s
	}
	return s[:max] + "..."
}

// ReadFile reads and parses one pressure file. Reading fails with EOPNOTSUPP
// (errors.Is(err, syscall.EOPNOTSUPP)) on a kernel built with PSI but booted with psi=0.
func ReadFile(path string) (Pressure, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return Pressure{}, err
	}
	p, err := Parse(strings.NewReader(string(b)))
	if err != nil {
		return Pressure{}, fmt.Errorf("%s: %w", path, err)
	}
	return p, nil
}

// ReadSystem reads node-wide pressure for res from /proc/pressure.
func ReadSystem(res Resource) (Pressure, error) { return ReadFile(SystemPath(res)) }
