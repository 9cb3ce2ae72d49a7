package runc

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"time"

	"github.com/plinth/plinth/daemon/pods/shim"
	"github.com/plinth/plinth/internal/atomicfile"
)

// Defaults for Config.
const (
	DefaultRoot     = "/run/plinth/runc"
	DefaultStateDir = "/var/lib/plinth/checkpoints"
)

// Config says where the driver finds runc and the shim and where it keeps state.
type Config struct {
	// Runc is the runc binary ("" looks up runc in PATH).
	Runc string
	// Root is runc's --root.
	Root string
	// StateDir holds one checkpoint directory per container.
	StateDir string
	// ShimCommand is the command line that runs a shim, before the shim's own flags:
	// plinthd passes the plinth-shim binary; tests their own re-executed binary.
	ShimCommand []string
	// LogMaxBytes and LogMaxFiles rotate container logs (kubelet's
	// containerLogMaxSize, 10 MiB, and containerLogMaxFiles, 5, when 0).
	LogMaxBytes int64
	LogMaxFiles int
}

// CreateOptions describe a container to create.
type CreateOptions struct {
	ID string
	// Bundle is the OCI bundle directory (config.json and the root filesystem).
	Bundle string
	// LogPath is the CRI log file the container's output is appended to.
	LogPath string
	Labels  map[string]string
}

// ErrNotFound means the driver has no checkpoint for the container.
var ErrNotFound = errors.New("container not found")

// Checkpoint is what the driver records about a container it created, so that a new
// plinthd can adopt it: where it came from and which shim watches it.
type Checkpoint struct {
	ID      string `json:"id"`
	Bundle  string `json:"bundle"`
	LogPath string `json:"logPath"`
	// CgroupPath is the container's cgroup (linux.cgroupsPath of its spec), read for OOM
	// kills when it exits.
	CgroupPath string `json:"cgroupPath,omitempty"`
	// ShimPID and ShimStartTicks identify the shim: the pid plus its start time in
	// clock ticks since boot (/proc/<pid>/stat), which a reused pid cannot match.
	ShimPID        int       `json:"shimPID"`
	ShimStartTicks uint64    `json:"shimStartTicks"`
	InitPID        int       `json:"initPID"`
	CreatedAt      time.Time `json:"createdAt"`
	StartedAt      time.Time `json:"startedAt,omitzero"`
	// Labels are the caller's (pod UID, namespace, name, container name, attempt).
	Labels map[string]string `json:"labels,omitempty"`
}

// ExitStatus is how a container ended.
type ExitStatus struct {
	shim.Exit
	// OOMKilled is true when the memory controller killed a process of the container.
	OOMKilled bool
	// Unknown is true when the status was lost (the shim died without writing it); Code
	// is then 255.
	Unknown bool
}

// validID matches the container IDs runc accepts, which also keeps them safe as
// file names.
var validID = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_.+-]{0,127}$`)

func checkID(id string) error {
	if !validID.MatchString(id) {
		return fmt.Errorf("container ID %q: want 1-128 letters, digits, '_', '.', '+' or '-', starting with a letter or digit", id)
	}
	return nil
}

const checkpointFile = "checkpoint.json"

func (d *Driver) stateDir(id string) string { return filepath.Join(d.cfg.StateDir, id) }

func (d *Driver) writeCheckpoint(cp Checkpoint) error {
	b, err := json.MarshalIndent(cp, "", "  ")
	if err != nil {
		return err
	}
	return atomicfile.Write(filepath.Join(d.stateDir(cp.ID), checkpointFile), b, 0o600)
}

// Checkpoint returns the recorded checkpoint of container id.
func (d *Driver) Checkpoint(id string) (Checkpoint, error) {
	if err := checkID(id); err != nil {
		return Checkpoint{}, err
	}
	b, err := os.ReadFile(filepath.Join(d.stateDir(id), checkpointFile))
	if errors.Is(err, os.ErrNotExist) {
		return Checkpoint{}, fmt.Errorf("container %s: %w", id, ErrNotFound)
	}
	if err != nil {
		return Checkpoint{}, err
	}
	var cp Checkpoint
	if err := json.Unmarshal(b, &cp); err != nil {
		return Checkpoint{}, fmt.Errorf("%s: %w", filepath.Join(d.stateDir(id), checkpointFile), err)
	}
	return cp, nil
}

// List returns the checkpoints of every container the driver (or a previous plinthd)
// created and has not deleted: what a restarted plinthd adopts. Directories without a
// readable checkpoint are reported in the error and skipped.
func (d *Driver) List() ([]Checkpoint, error) { return d.ListWithIDPrefix("") }

// ListWithIDPrefix is List for the containers whose ID starts with prefix; only their
// checkpoints are read. A pod worker adopting its own containers lists those of its
// pod, rather than reading every container's checkpoint at every pod start (and
// finding other pods' creates half done).
func (d *Driver) ListWithIDPrefix(prefix string) ([]Checkpoint, error) {
	entries, err := os.ReadDir(d.cfg.StateDir)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var out []Checkpoint
	var errs []error
	for _, e := range entries {
		if !e.IsDir() || !strings.HasPrefix(e.Name(), prefix) || checkID(e.Name()) != nil {
			continue
		}
		cp, err := d.Checkpoint(e.Name())
		if err != nil {
			errs = append(errs, err)
			continue
		}
		out = append(out, cp)
	}
	return out, errors.Join(errs...)
}

// State is runc's view of a container (`runc state`).
type State struct {
	ID      string    `json:"id"`
	Pid     int       `json:"pid"`
	Status  string    `json:"status"` // creating, created, running, paused, stopped
	Bundle  string    `json:"bundle"`
	Created time.Time `json:"created"`
}

// runcError turns runc's output into an error naming the command.
func runcError(args []string, out []byte, err error) error {
	msg := strings.TrimSpace(string(out))
	if msg == "" {
		return fmt.Errorf("runc %s: %w", strings.Join(args, " "), err)
	}
	return fmt.Errorf("runc %s: %w: %s", strings.Join(args, " "), err, msg)
}

// runcEnv is environ without the variables of systemd's service protocols that
// plinthd's unit gives it (sd_notify, its watchdog, socket activation): the environment
// of runc and the shim. They describe plinthd's unit, not a container. runc takes
// NOTIFY_SOCKET as a request to pass a notify socket into the container, and `runc
// start` then waits for the container to send READY=1, which an ordinary workload never
// does: under Type=notify every start would hang (runc 1.1 and 1.5 alike).
func runcEnv(environ []string) []string {
	out := make([]string, 0, len(environ))
	for _, kv := range environ {
		name, _, _ := strings.Cut(kv, "=")
		switch name {
		case "NOTIFY_SOCKET", "WATCHDOG_PID", "WATCHDOG_USEC", "LISTEN_PID", "LISTEN_FDS", "LISTEN_FDNAMES":
			continue
		}
		out = append(out, kv)
	}
	return out
}
