// Package pods is plinthd's pod lifecycle: what to do next for a pod bound to the node
// (start init containers in order, then the app containers; restart them by
// restartPolicy with crash-loop backoff; kill containers whose liveness or startup
// probe failed), the pod's status as the API defines it (phase, conditions, container
// states with kubelet's reasons, restart counts, last states, QoS class), probe
// bookkeeping and the probe executors (exec, HTTP, TCP).
//
// The decisions are pure functions of the pod, what the runtime reported and the time
// from an injected clock, so every rule is tested with a fake clock. The pieces that
// touch the node sit behind the small interfaces in interfaces.go, implemented
// elsewhere: ImageService (daemon/images), PodNetwork (daemon/podnet), SeccompResolver
// (daemon/seccomp) and ContainerRuntime (daemon/pods/runc); bundles come from
// daemon/pods/bundle, sandboxes from daemon/pods/sandbox, pod cgroups from
// daemon/pods/podcgroup.
//
// It owns no kernel state itself.
package pods
