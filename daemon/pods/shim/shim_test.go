package shim

import (
	"strings"
	"testing"
)

func TestParseReady(t *testing.T) {
	if r, err := ParseReady("ok 12 34\n"); err != nil || r != (Ready{ShimPID: 12, InitPID: 34}) {
		t.Errorf("ok line: %+v, %v", r, err)
	}
	for in, want := range map[string]string{
		"error runc create: no such file\n": "runc create: no such file",
		"":                                  "without reporting",
		"ok 1":                              `want "ok`,
		"ok 0 5":                            "not positive",
	} {
		if _, err := ParseReady(in); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("ParseReady(%q) = %v, want an error containing %q", in, err, want)
		}
	}
}

func TestRuncLogError(t *testing.T) {
	log := `{"level":"info","msg":"starting"}
{"level":"error","msg":"first"}
not json
{"level":"error","msg":"exec: \"nope\": executable file not found in $PATH"}
`
	if got := runcLogError([]byte(log)); got != `exec: "nope": executable file not found in $PATH` {
		t.Errorf("runcLogError = %q", got)
	}
	if got := runcLogError([]byte(`{"level":"info","msg":"x"}`)); got != "" {
		t.Errorf("runcLogError without errors = %q", got)
	}
}

func TestArgsRoundTrip(t *testing.T) {
	c := Config{Runc: "/usr/bin/runc", Root: "/run/r", ID: "id1", Bundle: "/b", StateDir: "/s", LogPath: "/l/0.log", LogMaxBytes: 1 << 20, LogMaxFiles: 3}
	got, err := parseArgs(c.Args())
	if err != nil || got != c {
		t.Errorf("parseArgs(Args()) = %+v, %v; want %+v", got, err, c)
	}
	if _, err := parseArgs([]string{"--id", "x"}); err == nil || !strings.Contains(err.Error(), "required") {
		t.Errorf("missing flags: %v", err)
	}
}
