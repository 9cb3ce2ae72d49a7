package pressure

import (
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/plinth/plinth/kernel/cgroup/cgrouptest"
)

func TestMain(m *testing.M) {
	cgrouptest.HelperMain()
	hogMain()
	code := m.Run()
	if builtBinaries != "" {
		os.RemoveAll(builtBinaries)
	}
	os.Exit(code)
}

// hogEnv turns the re-executed test binary into a memory hog: "<MiB per second>/<MiB
// in all>" allocates at that rate (0 MiB per second: as fast as it can; 0 MiB in all:
// until killed) and then sleeps.
const hogEnv = "PLINTH_PRESSURE_HOG"

// hogChunk is what the hog allocates and touches at a time.
const hogChunk = 4 << 20

// hogCommand returns the command of a hog allocating rate MiB/s up to total MiB
// (0: without end). Start it with cgrouptest.Cgroup.Start.
func hogCommand(tb testing.TB, rate, total int) *exec.Cmd {
	tb.Helper()
	exe, err := os.Executable()
	if err != nil {
		tb.Fatal(err)
	}
	cmd := exec.Command(exe, "-test.run=^$")
	cmd.Env = append(os.Environ(), fmt.Sprintf("%s=%d/%d", hogEnv, rate, total))
	return cmd
}

func hogMain() {
	spec, ok := os.LookupEnv(hogEnv)
	if !ok {
		return
	}
	rateText, totalText, _ := strings.Cut(spec, "/")
	rate, err1 := strconv.Atoi(rateText)
	total, err2 := strconv.Atoi(totalText)
	if err1 != nil || err2 != nil || rate < 0 || total < 0 {
		fmt.Fprintf(os.Stderr, "hog: %s=%q: want <MiB per second>/<MiB in all>\n", hogEnv, spec)
		os.Exit(2)
	}
	// Paced by the wall clock: chunk n is allocated at start + n*chunk/rate, so a slow
	// moment is caught up, and the rate holds on average.
	var held [][]byte
	start := time.Now()
	var perChunk time.Duration
	if rate > 0 {
		perChunk = time.Duration(float64(time.Second) * float64(hogChunk) / float64(rate<<20))
	}
	for n := 0; total == 0 || n*hogChunk < total<<20; n++ {
		if d := time.Until(start.Add(time.Duration(n) * perChunk)); perChunk > 0 && d > 0 {
			time.Sleep(d)
		}
		b := make([]byte, hogChunk)
		for i := 0; i < len(b); i += 4096 {
			b[i] = 1
		}
		held = append(held, b)
	}
	for {
		time.Sleep(time.Hour)
		runtime.KeepAlive(held)
	}
}
