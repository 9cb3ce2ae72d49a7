package shim

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// Config is what one shim needs.
type Config struct {
	Runc     string // the runc binary
	Root     string // runc --root
	ID       string // container ID
	Bundle   string // OCI bundle directory
	StateDir string // where runc.log, init.pid and exit.json go
	LogPath  string // the container's CRI log file (appended to)
	// LogMaxBytes and LogMaxFiles rotate the log (kubelet's containerLogMaxSize and
	// containerLogMaxFiles; crilog's defaults when 0).
	LogMaxBytes int64
	LogMaxFiles int
}

// Files in the state directory.
const (
	RuncLogFile = "runc.log"
	InitPIDFile = "init.pid"
	ExitFile    = "exit.json"
)

// Exit is how a container's init process ended.
type Exit struct {
	// Code is the exit code, or 128+signal when a signal killed the process (as shells
	// and the Kubernetes API report it).
	Code int `json:"exitCode"`
	// Signal is the signal that killed it, 0 when it exited.
	Signal     int       `json:"signal,omitempty"`
	FinishedAt time.Time `json:"finishedAt"`
}

// ReadExit reads the exit status a shim left in stateDir; the error wraps
// os.ErrNotExist while the container has not exited.
func ReadExit(stateDir string) (Exit, error) {
	b, err := os.ReadFile(filepath.Join(stateDir, ExitFile))
	if err != nil {
		return Exit{}, err
	}
	var e Exit
	if err := json.Unmarshal(b, &e); err != nil {
		return Exit{}, fmt.Errorf("%s: %w", filepath.Join(stateDir, ExitFile), err)
	}
	return e, nil
}

// Args are the command-line arguments that give a shim c (after the shim command).
func (c Config) Args() []string {
	return []string{"--runc", c.Runc, "--root", c.Root, "--id", c.ID, "--bundle", c.Bundle,
		"--state-dir", c.StateDir, "--log", c.LogPath,
		"--log-max-bytes", strconv.FormatInt(c.LogMaxBytes, 10), "--log-max-files", strconv.Itoa(c.LogMaxFiles)}
}

func parseArgs(args []string) (Config, error) {
	fs := flag.NewFlagSet("plinth-shim", flag.ContinueOnError)
	var c Config
	fs.StringVar(&c.Runc, "runc", "runc", "runc binary")
	fs.StringVar(&c.Root, "root", "", "runc --root")
	fs.StringVar(&c.ID, "id", "", "container ID")
	fs.StringVar(&c.Bundle, "bundle", "", "OCI bundle directory")
	fs.StringVar(&c.StateDir, "state-dir", "", "state directory")
	fs.StringVar(&c.LogPath, "log", "", "CRI log file")
	fs.Int64Var(&c.LogMaxBytes, "log-max-bytes", 0, "rotate the log past this size (0: 10 MiB)")
	fs.IntVar(&c.LogMaxFiles, "log-max-files", 0, "log files kept, the live one included (0: 5)")
	if err := fs.Parse(args); err != nil {
		return Config{}, err
	}
	for name, v := range map[string]string{"--root": c.Root, "--id": c.ID, "--bundle": c.Bundle, "--state-dir": c.StateDir, "--log": c.LogPath} {
		if v == "" {
			return Config{}, fmt.Errorf("%s is required", name)
		}
	}
	return c, nil
}

// Ready is what a shim reports on its ready pipe.
type Ready struct {
	ShimPID, InitPID int
}

// ParseReady reads the ready pipe's contents: "ok <shim pid> <init pid>" or
// "error <message>".
func ParseReady(s string) (Ready, error) {
	s = strings.TrimSpace(s)
	if msg, ok := strings.CutPrefix(s, "error "); ok {
		return Ready{}, errors.New(msg)
	}
	f := strings.Fields(s)
	if len(f) != 3 || f[0] != "ok" {
		if s == "" {
			return Ready{}, errors.New("shim exited without reporting (see shim.log in the state directory)")
		}
		return Ready{}, fmt.Errorf("shim reported %q, want \"ok <shim pid> <init pid>\"", s)
	}
	shimPID, err1 := strconv.Atoi(f[1])
	initPID, err2 := strconv.Atoi(f[2])
	if err1 != nil || err2 != nil || shimPID <= 0 || initPID <= 0 {
		return Ready{}, fmt.Errorf("shim reported %q: pids are not positive numbers", s)
	}
	return Ready{ShimPID: shimPID, InitPID: initPID}, nil
}

// runcLogError returns the last error runc logged (JSON lines with level and msg), or ""
// when it logged none.
func runcLogError(b []byte) string {
	var last string
	for _, line := range strings.Split(string(b), "\n") {
		var rec struct{ Level, Msg string }
		if json.Unmarshal([]byte(line), &rec) == nil && (rec.Level == "error" || rec.Level == "fatal") && rec.Msg != "" {
			last = rec.Msg
		}
	}
	return last
}
