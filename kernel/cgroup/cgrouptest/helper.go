package cgrouptest

import (
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"time"
)

// HelperEnv names the environment variable that turns a re-executed test binary into a
// helper process (see HelperMain).
const HelperEnv = "PLINTH_CGROUPTEST_HELPER"

// readyLine is what a helper prints once its load is in place.
const readyLine = "ready"

// Helper modes for HelperCommand.
const (
	// ModeAlloc allocates the given MiB, touches every page, prints "ready" and sleeps
	// until killed: resident memory charged to its cgroup.
	ModeAlloc = "alloc"
	// ModeSpin prints "ready" and burns CPU until killed.
	ModeSpin = "spin"
	// ModeSleep prints "ready" and sleeps until killed: a process that only counts.
	ModeSleep = "sleep"
)

// HelperMain runs the helper process when the binary was started by HelperCommand, and
// never returns then. A test package that starts helpers calls it first in TestMain:
//
//	func TestMain(m *testing.M) {
//		cgrouptest.HelperMain()
//		os.Exit(m.Run())
//	}
func HelperMain() {
	mode, ok := os.LookupEnv(HelperEnv)
	if !ok {
		return
	}
	if err := runHelper(mode, os.Args[len(os.Args)-helperArgCount():]); err != nil {
		fmt.Fprintf(os.Stderr, "cgrouptest helper %s: %v\n", mode, err)
		os.Exit(2)
	}
	os.Exit(0)
}

// helperArgsEnv carries how many trailing arguments belong to the helper, so the test
// binary's own -test.* flags can come first.
const helperArgsEnv = "PLINTH_CGROUPTEST_HELPER_ARGS"

func helperArgCount() int {
	n, err := strconv.Atoi(os.Getenv(helperArgsEnv))
	if err != nil || n < 0 || n > len(os.Args)-1 {
		return 0
	}
	return n
}

// HelperCommand returns a command that re-executes the running test binary as a helper
// in mode (ModeAlloc with a MiB count, ModeSpin, ModeSleep). The package's TestMain must
// call HelperMain. Pass it to Cgroup.Start, or use Cgroup.StartHelper, which also waits
// for the helper to be ready.
func HelperCommand(mode string, args ...string) (*exec.Cmd, error) {
	exe, err := os.Executable()
	if err != nil {
		return nil, fmt.Errorf("cgrouptest: find the test binary: %w", err)
	}
	// -test.run=^$ makes a binary whose TestMain forgot HelperMain run no test and exit,
	// rather than re-running the tests recursively.
	cmd := exec.Command(exe, append([]string{"-test.run=^$"}, args...)...)
	cmd.Env = append(os.Environ(), HelperEnv+"="+mode, helperArgsEnv+"="+strconv.Itoa(len(args)))
	return cmd, nil
}

func runHelper(mode string, args []string) error {
	switch mode {
	case ModeAlloc:
		if len(args) != 1 {
			return fmt.Errorf("want one argument, the MiB to allocate; got %q", args)
		}
		mib, err := strconv.Atoi(args[0])
		if err != nil || mib <= 0 || mib > 1<<20 {
			return fmt.Errorf("MiB %q: want a positive number", args[0])
		}
		buf := make([]byte, mib<<20)
		// Touch every page so it is resident and charged, not just reserved.
		for i := 0; i < len(buf); i += 4096 {
			buf[i] = 1
		}
		fmt.Println(readyLine)
		sleepForever()
		runtime.KeepAlive(buf) // or the collector could free it while we sleep
		return nil
	case ModeSpin:
		fmt.Println(readyLine)
		for {
		}
	case ModeSleep:
		fmt.Println(readyLine)
		sleepForever()
		return nil
	}
	return fmt.Errorf("unknown helper mode %q: want %s, %s or %s", mode, ModeAlloc, ModeSpin, ModeSleep)
}

// sleepForever blocks until the process is killed. A pending timer keeps the runtime's
// deadlock detector quiet, which select{} would not.
func sleepForever() {
	for {
		time.Sleep(time.Hour)
	}
}
