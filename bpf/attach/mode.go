package attach

import "fmt"

// Mode says which program variant to load.
type Mode int

const (
	// Auto loads the tp_btf programs when the kernel has BTF and accepts them, and
	// falls back to the plain tracepoint programs otherwise.
	Auto Mode = iota
	// BTF loads only the tp_btf programs.
	BTF
	// Tracepoints loads only the plain tracepoint programs.
	Tracepoints
)

// String returns "auto", "tp_btf" or "tracepoint", the names ParseMode accepts.
func (m Mode) String() string {
	switch m {
	case Auto:
		return "auto"
	case BTF:
		return "tp_btf"
	case Tracepoints:
		return "tracepoint"
	}
	return fmt.Sprintf("Mode(%d)", int(m))
}

// ParseMode turns "auto", "tp_btf" or "tracepoint" into a Mode.
func ParseMode(s string) (Mode, error) {
	for _, m := range []Mode{Auto, BTF, Tracepoints} {
		if s == m.String() {
			return m, nil
		}
	}
	return Auto, fmt.Errorf("BPF attach mode %q: want auto, tp_btf or tracepoint", s)
}
