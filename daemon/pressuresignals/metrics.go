package pressuresignals

import (
	"path/filepath"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/plinth/plinth/bpf/reclaim"
	"github.com/plinth/plinth/kernel/psi"
)

// metrics are the event sources' own metrics; the signals, thresholds and feeds are
// the pressure manager's.
type metrics struct {
	oomKills      prometheus.Counter
	oomEventsLost prometheus.Counter
	wakeups       *prometheus.CounterVec
}

func newMetrics(reg prometheus.Registerer, procDir string, rec reclaim.Source) (*metrics, error) {
	m := &metrics{
		oomKills: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "plinth_oom_kills_total",
			Help: "Processes the kernel OOM killer chose as victims, as seen by the oom:mark_victim BPF program since plinthd started.",
		}),
		oomEventsLost: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "plinth_oom_events_dropped_total",
			Help: "OOM kill Events not posted to the API because too many were waiting.",
		}),
		wakeups: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "plinth_pressure_wakeups_total",
			Help: "Event-driven hints sent to the pressure manager, by source (psi, oom-kill, reclaim-stall, fork-burst, approach); hints sent while one is pending merge into it.",
		}, []string{"trigger"}),
	}
	if reg == nil {
		return m, nil
	}
	for _, c := range []prometheus.Collector{m.oomKills, m.oomEventsLost, m.wakeups,
		&psiCollector{procDir: procDir}, &reclaimCollector{source: rec}} {
		if err := reg.Register(c); err != nil {
			return nil, err
		}
	}
	return m, nil
}

// psiCollector reads the node's PSI totals at scrape time:
// plinth_node_psi_<resource>_<some|full>_seconds_total.
type psiCollector struct {
	procDir string
}

var psiDescs = func() map[psi.Resource][2]*prometheus.Desc {
	out := map[psi.Resource][2]*prometheus.Desc{}
	for _, r := range psi.Resources() {
		var d [2]*prometheus.Desc
		for i, kind := range []string{"some", "full"} {
			d[i] = prometheus.NewDesc("plinth_node_psi_"+r.String()+"_"+kind+"_seconds_total",
				"Total time some (or, for full, all) non-idle tasks of the node were stalled on "+r.String()+", from /proc/pressure/"+r.String()+".",
				nil, nil)
		}
		out[r] = d
	}
	return out
}()

func (c *psiCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, r := range psi.Resources() {
		ch <- psiDescs[r][0]
		ch <- psiDescs[r][1]
	}
}

func (c *psiCollector) Collect(ch chan<- prometheus.Metric) {
	for _, r := range psi.Resources() {
		p, err := psi.ReadFile(filepath.Join(c.procDir, "pressure", r.String()))
		if err != nil {
			continue // no PSI: the psi feed says so
		}
		ch <- prometheus.MustNewConstMetric(psiDescs[r][0], prometheus.CounterValue, p.Some.Total.Seconds())
		if p.HasFull {
			ch <- prometheus.MustNewConstMetric(psiDescs[r][1], prometheus.CounterValue, p.Full.Total.Seconds())
		}
	}
}

// reclaimCollector sums the BPF reclaim stall totals over all cgroups at scrape
// time: plinth_direct_reclaim_seconds_total{kind="direct|memcg"}.
type reclaimCollector struct {
	source reclaim.Source // nil when the programs did not load
}

var reclaimDesc = prometheus.NewDesc("plinth_direct_reclaim_seconds_total",
	"Time tasks spent stalled in synchronous memory reclaim since plinthd started: direct (the node is short of free memory) or memcg (a memory cgroup reached its limit).",
	[]string{"kind"}, nil)

func (c *reclaimCollector) Describe(ch chan<- *prometheus.Desc) { ch <- reclaimDesc }

func (c *reclaimCollector) Collect(ch chan<- prometheus.Metric) {
	if c.source == nil {
		return
	}
	totals, err := c.source.ReclaimTotals()
	if err != nil {
		return
	}
	var direct, memcg float64
	for _, s := range totals {
		direct += s.DirectStall.Seconds()
		memcg += s.MemcgStall.Seconds()
	}
	ch <- prometheus.MustNewConstMetric(reclaimDesc, prometheus.CounterValue, direct, reclaim.Direct.String())
	ch <- prometheus.MustNewConstMetric(reclaimDesc, prometheus.CounterValue, memcg, reclaim.Memcg.String())
}
