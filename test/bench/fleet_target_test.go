package bench

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"k8s.io/client-go/kubernetes"

	"github.com/plinth/plinth/control/pki"
	"github.com/plinth/plinth/test/nodesim"
)

// fleetTarget is the control plane a fleet benchmark drives: its processes (whose CPU
// time and memory are read from /proc and summed), an administrator's client, and the
// cluster CA that signs each simulated node's client certificate.
type fleetTarget struct {
	name      string
	server    string
	processes []targetProcess
	admin     kubernetes.Interface
	authority *pki.Authority
	// leaseSeries picks, from the API server's /metrics, the request duration
	// histogram series of Lease updates.
	leaseHistogram, leaseSelector string
	// profile fetches a /debug/pprof/ document (for example "heap") from the API
	// server's process.
	profile func(ctx context.Context, what string) ([]byte, error)
}

// targetProcess is one process of a target, named for the log.
type targetProcess struct {
	name string
	pid  int
	log  string
}

// plinthTarget is plinth-control as its own process: embedded etcd, its controllers and
// the API server in one.
func plinthTarget(b *testing.B, extra ...string) *fleetTarget {
	b.Helper()
	control := startControlProcess(b, extra...)
	admin, err := control.client()
	if err != nil {
		b.Fatal(err)
	}
	authority, err := pki.LoadOrCreate(filepath.Join(control.dataDir, "pki"), pki.Options{})
	if err != nil {
		b.Fatal(err)
	}
	return &fleetTarget{
		name:           "plinth-control",
		server:         control.server,
		processes:      []targetProcess{{name: "plinth-control", pid: control.cmd.Process.Pid, log: control.log}},
		admin:          admin,
		authority:      authority,
		leaseHistogram: "plinth_apiserver_request_duration_seconds",
		leaseSelector:  `resource="leases",verb="update"`,
		profile: func(ctx context.Context, what string) ([]byte, error) {
			return pprofOverHTTP(ctx, control.profiling, what)
		},
	}
}

// credentials give each simulated node its own client certificate from the target's CA.
func (t *fleetTarget) credentials() nodesim.Credentials {
	return nodesim.AuthorityCredentials(t.authority, t.server)
}

// cpuTimes is each process's CPU time, in the order of t.processes.
func (t *fleetTarget) cpuTimes() ([]time.Duration, error) {
	out := make([]time.Duration, len(t.processes))
	for i, p := range t.processes {
		d, err := cpuTime(p.pid)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", p.name, err)
		}
		out[i] = d
	}
	return out, nil
}

// memoryKiB sums a /proc/PID/status field over the target's processes.
func (t *fleetTarget) memoryKiB(field string) (int64, error) {
	var total int64
	for _, p := range t.processes {
		v, err := memoryKiB(p.pid, field)
		if err != nil {
			return 0, fmt.Errorf("%s: %w", p.name, err)
		}
		total += v
	}
	return total, nil
}

// runQueueWait sums runQueueWait over the target's processes.
func (t *fleetTarget) runQueueWait() time.Duration {
	var total time.Duration
	for _, p := range t.processes {
		total += runQueueWait(p.pid)
	}
	return total
}

// leaseUpdateBuckets reads the API server's request duration histogram for Lease
// updates. The server times a request from its handler's start, so the difference from
// what the nodes see is time in the network stack, HTTP/2 and TLS, and waiting for a CPU
// on either side.
func (t *fleetTarget) leaseUpdateBuckets(ctx context.Context) histogram {
	raw, err := t.admin.CoreV1().RESTClient().Get().AbsPath("/metrics").DoRaw(ctx)
	if err != nil {
		return histogram{}
	}
	return parseHistogram(string(raw), t.leaseHistogram, t.leaseSelector)
}

// fetchProfile writes the API server process's /debug/pprof/<what> to out.
func (t *fleetTarget) fetchProfile(b *testing.B, what, out string) {
	data, err := t.profile(context.Background(), what)
	saveProfile(b, what, out, data, err)
}

// copyLogs copies every process's log into dir, prefixed by size.
func (t *fleetTarget) copyLogs(dir string, size int) {
	for _, p := range t.processes {
		if data, err := os.ReadFile(p.log); err == nil {
			_ = os.WriteFile(filepath.Join(dir, fmt.Sprintf("%s-%d.log", p.name, size)), data, 0o644)
		}
	}
}

// describeCPU breaks CPU seconds over a window down by process, for targets of more
// than one.
func (t *fleetTarget) describeCPU(start, end []time.Duration, window time.Duration) string {
	if len(t.processes) < 2 {
		return ""
	}
	var parts []string
	for i, p := range t.processes {
		parts = append(parts, fmt.Sprintf("%s %.2f", p.name, (end[i]-start[i]).Seconds()/window.Seconds()))
	}
	return " (" + strings.Join(parts, ", ") + ")"
}
