package staticpods

import "github.com/prometheus/client_golang/prometheus"

type sourceMetrics struct {
	pods    prometheus.Gauge
	invalid prometheus.Gauge
	errors  prometheus.Counter
}

func newSourceMetrics(reg prometheus.Registerer) (*sourceMetrics, error) {
	m := &sourceMetrics{
		pods: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "plinth_static_pods",
			Help: "Static pods defined by valid manifests in staticPodPath at the last read.",
		}),
		invalid: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "plinth_static_pod_manifests_invalid",
			Help: "Files in staticPodPath that could not be turned into a pod at the last read.",
		}),
		errors: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "plinth_static_pod_manifest_errors_total",
			Help: "Manifest errors found in staticPodPath, each distinct error of a file counted once.",
		}),
	}
	if reg != nil {
		for _, c := range []prometheus.Collector{m.pods, m.invalid, m.errors} {
			if err := reg.Register(c); err != nil {
				return nil, err
			}
		}
	}
	return m, nil
}

type mirrorMetrics struct {
	mirrorPods prometheus.Gauge
	syncErrors prometheus.Counter
}

func newMirrorMetrics(reg prometheus.Registerer) (*mirrorMetrics, error) {
	m := &mirrorMetrics{
		// kubelet_mirror_pods, after the prefix.
		mirrorPods: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "plinth_mirror_pods",
			Help: "The number of mirror pods plinthd will try to create (one per static pod).",
		}),
		syncErrors: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "plinth_mirror_pod_sync_errors_total",
			Help: "Mirror pod reconcile passes that failed to create or delete a mirror pod.",
		}),
	}
	if reg != nil {
		for _, c := range []prometheus.Collector{m.mirrorPods, m.syncErrors} {
			if err := reg.Register(c); err != nil {
				return nil, err
			}
		}
	}
	return m, nil
}
