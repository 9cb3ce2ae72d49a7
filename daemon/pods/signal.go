package pods

import (
	"fmt"
	"strconv"
	"strings"
	"syscall"
)

// signalNumbers are the signals an image's STOPSIGNAL may name (Linux numbering).
var signalNumbers = map[string]syscall.Signal{
	"HUP": 1, "INT": 2, "QUIT": 3, "ILL": 4, "TRAP": 5, "ABRT": 6, "IOT": 6, "BUS": 7, "FPE": 8, "KILL": 9,
	"USR1": 10, "SEGV": 11, "USR2": 12, "PIPE": 13, "ALRM": 14, "TERM": 15, "STKFLT": 16, "CHLD": 17,
	"CONT": 18, "STOP": 19, "TSTP": 20, "TTIN": 21, "TTOU": 22, "URG": 23, "XCPU": 24, "XFSZ": 25,
	"VTALRM": 26, "PROF": 27, "WINCH": 28, "IO": 29, "POLL": 29, "PWR": 30, "SYS": 31,
}

// ParseStopSignal reads an image's STOPSIGNAL ("SIGTERM", "TERM", "15", "SIGRTMIN+3");
// empty means SIGTERM.
func ParseStopSignal(s string) (syscall.Signal, error) {
	if s == "" {
		return syscall.SIGTERM, nil
	}
	if n, err := strconv.Atoi(s); err == nil {
		if n < 1 || n > 64 {
			return 0, fmt.Errorf("stop signal %q: want 1-64", s)
		}
		return syscall.Signal(n), nil
	}
	name := strings.TrimPrefix(strings.ToUpper(s), "SIG")
	if sig, ok := signalNumbers[name]; ok {
		return sig, nil
	}
	// Real-time signals: RTMIN is 34 as glibc and musl reserve 32 and 33.
	for base, num := range map[string]int{"RTMIN": 34, "RTMAX": 64} {
		if rest, ok := strings.CutPrefix(name, base); ok {
			off := 0
			if rest != "" {
				var err error
				if off, err = strconv.Atoi(rest); err != nil {
					return 0, fmt.Errorf("stop signal %q: not a signal name", s)
				}
			}
			if n := num + off; n >= 34 && n <= 64 {
				return syscall.Signal(n), nil
			}
			return 0, fmt.Errorf("stop signal %q: out of the real-time range", s)
		}
	}
	return 0, fmt.Errorf("stop signal %q: not a signal name or number", s)
}
