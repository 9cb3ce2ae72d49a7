// Package containergc removes what dead containers and deleted pods leave on the node,
// with kubelet's container garbage collection policy: dead containers older than
// MinAge, grouped by pod and container name; all of a deleted pod's; beyond that the
// newest MaxPerPodContainer of each group are kept, and when more than MaxContainers
// remain overall the per-group limit shrinks (to at least one) and then the oldest go
// first. Pod sandboxes (what the runtime keeps per pod besides containers) and pod log
// directories of deleted pods go too.
//
// Plan is the pure policy; Collector runs it every minute and when asked (DiskPressure)
// over a Runtime the pod runtime implements, which lists and removes. It owns nothing
// on disk itself and touches only what the Runtime removes on its behalf.
package containergc
