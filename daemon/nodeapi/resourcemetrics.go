package nodeapi

import (
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/plinth/plinth/kernel/cgroup"
)

// resourceMetrics serves /metrics/resource in the Prometheus text format with kubelet's
// metric names and help texts (metrics-server reads them), each sample stamped with
// the time it was read.
func (s *Server) resourceMetrics(w http.ResponseWriter, _ *http.Request) {
	var b strings.Builder
	scrapeError := 0
	node, nodeErr := s.cfg.Stats.NodeStats()
	if nodeErr != nil {
		scrapeError = 1
		s.cfg.Logger.Warn("node resource stats", "err", nodeErr)
	}
	pods, err := s.cfg.Stats.PodStats()
	if err != nil {
		scrapeError = 1
		s.cfg.Logger.Warn("pod resource stats", "err", err)
	}
	family := func(name, typ, help string) {
		fmt.Fprintf(&b, "# HELP %s [STABLE] %s\n# TYPE %s %s\n", name, help, name, typ)
	}
	family("container_cpu_usage_seconds_total", "counter", "Cumulative cpu time consumed by the container in core-seconds")
	for _, p := range pods {
		for _, c := range p.Containers {
			sample(&b, "container_cpu_usage_seconds_total", containerLabels(p, c), c.CPU.Seconds(), c.Time)
		}
	}
	family("container_memory_working_set_bytes", "gauge", "Current working set of the container in bytes")
	for _, p := range pods {
		for _, c := range p.Containers {
			sample(&b, "container_memory_working_set_bytes", containerLabels(p, c), float64(c.WorkingSetBytes), c.Time)
		}
	}
	family("container_start_time_seconds", "gauge", "Start time of the container since unix epoch in seconds")
	for _, p := range pods {
		for _, c := range p.Containers {
			if !c.StartTime.IsZero() {
				sample(&b, "container_start_time_seconds", containerLabels(p, c), float64(c.StartTime.UnixNano())/1e9, c.Time)
			}
		}
	}
	if nodeErr == nil {
		family("node_cpu_usage_seconds_total", "counter", "Cumulative cpu time consumed by the node in core-seconds")
		sample(&b, "node_cpu_usage_seconds_total", "", node.CPU.Seconds(), node.Time)
		family("node_memory_working_set_bytes", "gauge", "Current working set of the node in bytes")
		sample(&b, "node_memory_working_set_bytes", "", float64(node.WorkingSetBytes), node.Time)
	}
	family("pod_cpu_usage_seconds_total", "counter", "Cumulative cpu time consumed by the pod in core-seconds")
	for _, p := range pods {
		sample(&b, "pod_cpu_usage_seconds_total", podLabels(p), p.CPU.Seconds(), p.Time)
	}
	family("pod_memory_working_set_bytes", "gauge", "Current working set of the pod in bytes")
	for _, p := range pods {
		sample(&b, "pod_memory_working_set_bytes", podLabels(p), float64(p.WorkingSetBytes), p.Time)
	}
	family("resource_scrape_error", "gauge", "1 if there was an error while getting container metrics, 0 otherwise")
	fmt.Fprintf(&b, "resource_scrape_error %d\n", scrapeError)
	w.Header().Set("Content-Type", "text/plain; version=0.0.4; charset=utf-8")
	_, _ = io.WriteString(w, b.String())
}

func sample(b *strings.Builder, name, labels string, v float64, at time.Time) {
	b.WriteString(name)
	if labels != "" {
		b.WriteString("{" + labels + "}")
	}
	b.WriteString(" " + strconv.FormatFloat(v, 'g', -1, 64))
	if !at.IsZero() {
		b.WriteString(" " + strconv.FormatInt(at.UnixMilli(), 10))
	}
	b.WriteByte('\n')
}

func podLabels(p PodUsage) string {
	return fmt.Sprintf("namespace=%s,pod=%s", strconv.Quote(p.Namespace), strconv.Quote(p.Name))
}

func containerLabels(p PodUsage, c ContainerUsage) string {
	return fmt.Sprintf("container=%s,%s", strconv.Quote(c.Name), podLabels(p))
}

// CgroupStats reads the node's figures from the root cgroup; pods come from Pods,
// which the pod runtime implements (nil: no pods yet).
type CgroupStats struct {
	Host cgroup.Host
	Now  func() time.Time
	// Pods gives per-pod usage; nil reports no pods.
	Pods func() ([]PodUsage, error)
}

// NodeStats implements ResourceStats.
func (c CgroupStats) NodeStats() (Usage, error) {
	at := c.Now()
	cpu, err := c.Host.CPUUsage("/")
	if err != nil {
		return Usage{}, fmt.Errorf("node cpu usage: %w", err)
	}
	mem, err := c.Host.NodeMemory()
	if err != nil {
		return Usage{}, fmt.Errorf("node memory working set: %w", err)
	}
	return Usage{CPU: cpu, WorkingSetBytes: mem.WorkingSetBytes, Time: at}, nil
}

// PodStats implements ResourceStats.
func (c CgroupStats) PodStats() ([]PodUsage, error) {
	if c.Pods == nil {
		return nil, nil
	}
	return c.Pods()
}
