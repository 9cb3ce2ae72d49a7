// Package pods is plinthd's pod lifecycle: what to do next for a pod bound to the node
// (start init containers in order, then the app containers; restart them by
// restartPolicy with crash-loop backoff; kill containers whose liveness or startup
// probe failed), the pod's status as the API defines it (phase, conditions, container
// states with kubelet's reasons, restart counts, last states, QoS class), probe
// bookkeeping and the probe executors (exec, HTTP, TCP); and, on Linux, the PodWorker
// that carries one pod out on the node and the Supervisor that keeps one worker per
// bound pod, adopting after a plinthd restart the containers the previous one started.
//
// The decisions (Plan, ComputeStatus, Backoff, ProbeTracker) are pure functions of the
// pod, what the runtime reported and the time from an injected clock, so every rule is
// tested with a fake clock. The pieces that touch the node sit behind small
// interfaces: ImageService (daemon/images), PodNetwork (daemon/podnet),
// SeccompResolver (daemon/seccomp), ContainerRuntime (daemon/pods/runc) and PodCgroups
// (daemon/pods/podcgroup); bundles come from daemon/pods/bundle and sandboxes from
// daemon/pods/sandbox.
//
// Garbage is the Supervisor's side of container garbage collection (daemon/containergc):
// it lists the dead container runs (runc state, bundles, CRI log files), sandboxes and
// pod log directories, and removes them only while no worker owns their pod, keeping
// each worker's current run.
//
// It owns, through those, each pod's directory under PodsDir (bundles, emptyDir
// volumes, termination-log files); the CRI logs under LogsDir are the shims', removed
// by Garbage once collection says so.
package pods
