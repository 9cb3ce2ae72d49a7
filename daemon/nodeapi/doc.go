// Package nodeapi serves plinthd's node API over HTTPS (kubelet's :10250): /healthz,
// /metrics, /metrics/resource, /pods, /containerLogs/{namespace}/{pod}/{container},
// /configz and POST /checkpoint/{namespace}/{pod}/{container}.
//
// Every request must carry a client certificate signed by the cluster CA; only
// administrators (system:masters), which include the control service's own clients,
// are authorized. The rest is behind small interfaces (PodSource, LogLocator,
// ResourceStats, Checkpointer, CertificateSource) that the pod runtime and plinthd's
// wiring implement, with fakes for tests.
//
// It owns its listening socket and nothing else; it reads log files through
// daemon/podlogs and touches the kernel only through what its interfaces return.
package nodeapi
