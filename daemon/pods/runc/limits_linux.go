//go:build linux

package runc

import (
	"bufio"
	"fmt"
	"os"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// capSysResource is CAP_SYS_RESOURCE's bit in /proc/<pid>/status Cap* masks.
const capSysResource = 24

// Limits are the bounds runc, started by this process, can give a container: without
// CAP_SYS_RESOURCE it can neither raise RLIMIT_NOFILE's hard limit above ours nor set
// an oom_score_adj below ours (bundle.Input's MaxNOFILE and MinOOMScoreAdj).
type Limits struct {
	MaxNOFILE      uint64
	MinOOMScoreAdj int
}

// RuntimeLimits reads this process's limits and capabilities.
func RuntimeLimits() (Limits, error) {
	var rl unix.Rlimit
	if err := unix.Getrlimit(unix.RLIMIT_NOFILE, &rl); err != nil {
		return Limits{}, fmt.Errorf("getrlimit NOFILE: %w", err)
	}
	hasSysResource, err := effectiveCap(capSysResource)
	if err != nil {
		return Limits{}, err
	}
	if hasSysResource {
		nrOpen, err := readInt("/proc/sys/fs/nr_open")
		if err != nil {
			return Limits{}, err
		}
		return Limits{MaxNOFILE: uint64(nrOpen), MinOOMScoreAdj: -1000}, nil
	}
	own, err := readInt("/proc/self/oom_score_adj")
	if err != nil {
		return Limits{}, err
	}
	return Limits{MaxNOFILE: rl.Max, MinOOMScoreAdj: own}, nil
}

func effectiveCap(bit uint) (bool, error) {
	f, err := os.Open("/proc/self/status")
	if err != nil {
		return false, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "CapEff:"); ok {
			mask, err := strconv.ParseUint(strings.TrimSpace(v), 16, 64)
			if err != nil {
				return false, fmt.Errorf("/proc/self/status CapEff %q: %w", v, err)
			}
			return mask&(1<<bit) != 0, nil
		}
	}
	return false, fmt.Errorf("/proc/self/status: no CapEff line")
}

func readInt(path string) (int, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0, err
	}
	v, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		return 0, fmt.Errorf("%s: %q is not a number", path, b)
	}
	return v, nil
}
