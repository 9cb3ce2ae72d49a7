package containergc

import (
	"cmp"
	"slices"
	"time"

	"k8s.io/apimachinery/pkg/types"
)

// Policy is kubelet's container GC policy.
type Policy struct {
	// MinAge: a dead container created less than this long ago is never collected
	// (--minimum-container-ttl-duration, default 0).
	MinAge time.Duration
	// MaxPerPodContainer is how many dead containers to keep per pod and container name
	// (--maximum-dead-containers-per-container, default 1); negative means no limit.
	MaxPerPodContainer int
	// MaxContainers is how many dead containers to keep on the node in all
	// (--maximum-dead-containers, default -1); negative means no limit.
	MaxContainers int
}

// DefaultPolicy is kubelet's default.
func DefaultPolicy() Policy {
	return Policy{MinAge: 0, MaxPerPodContainer: 1, MaxContainers: -1}
}

// Container is a dead (exited or never started) container of a pod.
type Container struct {
	ID     string
	PodUID types.UID
	// Name is the container's name in the pod spec; its restarts share it.
	Name string
	// Created orders containers, as in kubelet: newest kept, oldest removed first.
	Created time.Time
	// Unknown marks a container whose state the runtime could not tell; the runtime
	// must make sure it is stopped before removing it.
	Unknown bool
}

// PodState is what GC needs to know about a pod.
type PodState struct {
	// Deleted: the pod is gone (from the API and every config source) and nothing of
	// it is wanted any more: containers, sandboxes, logs (kubelet's
	// ShouldPodContentBeRemoved).
	Deleted bool
	// Terminated: the pod's containers have all stopped for good (kubelet's
	// ShouldPodRuntimeBeRemoved); its containers go only in a run asked for by disk
	// pressure.
	Terminated bool
}

// PodStates answers for the pods of this node.
type PodStates interface {
	PodState(uid types.UID) PodState
	// AllSourcesReady reports whether every pod source (the API, static pod files) has
	// been seen at least once; before that, a pod missing from them may only not have
	// been read yet, so nothing is removed for being deleted.
	AllSourcesReady() bool
}

// Reasons a container is removed, as the metrics label them.
const (
	ReasonDeletedPod         = "deleted_pod"
	ReasonMaxPerPodContainer = "max_per_pod_container"
	ReasonMaxContainers      = "max_containers"
)

// Removal is one container to remove and why.
type Removal struct {
	Container Container
	Reason    string
}

// Options change one run of Plan.
type Options struct {
	// EvictTerminatedPods also removes every dead container of terminated pods, as
	// kubelet does when reclaiming disk under pressure.
	EvictTerminatedPods bool
}

type unitKey struct {
	pod  types.UID
	name string
}

// evictUnits are the collectable containers by pod and container name, newest first.
type evictUnits map[unitKey][]Container

func (u evictUnits) count() int {
	n := 0
	for _, cs := range u {
		n += len(cs)
	}
	return n
}

func (u evictUnits) sortedKeys() []unitKey {
	keys := make([]unitKey, 0, len(u))
	for k := range u {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, func(a, b unitKey) int {
		return cmp.Or(cmp.Compare(a.pod, b.pod), cmp.Compare(a.name, b.name))
	})
	return keys
}

// newestFirst orders by creation time, newest first; ties by ID so plans are stable.
func newestFirst(a, b Container) int {
	return cmp.Or(b.Created.Compare(a.Created), cmp.Compare(a.ID, b.ID))
}

// Plan decides which dead containers to remove at now, in the order to remove them:
//
//  1. only containers created at least MinAge ago are considered;
//  2. when all pod sources are ready, every such container of a deleted pod (and, with
//     EvictTerminatedPods, of a terminated one);
//  3. then, per pod and container name, all but the newest MaxPerPodContainer;
//  4. then, if more than MaxContainers are left, the per-name limit is lowered to
//     MaxContainers divided by the number of pod/name groups (at least 1) and applied
//     again, and if that is still too many, the oldest left go regardless of group.
func Plan(p Policy, dead []Container, pods PodStates, now time.Time, opts Options) []Removal {
	units := evictUnits{}
	newest := now.Add(-p.MinAge)
	for _, c := range dead {
		if c.Created.After(newest) {
			continue
		}
		k := unitKey{c.PodUID, c.Name}
		units[k] = append(units[k], c)
	}
	for _, cs := range units {
		slices.SortFunc(cs, newestFirst)
	}

	var out []Removal
	removeOldest := func(cs []Container, n int, reason string) []Container {
		keep := max(len(cs)-n, 0)
		for i := len(cs) - 1; i >= keep; i-- {
			out = append(out, Removal{cs[i], reason})
		}
		return cs[:keep]
	}
	enforcePerUnit := func(limit int, reason string) {
		for _, k := range units.sortedKeys() {
			if extra := len(units[k]) - limit; extra > 0 {
				units[k] = removeOldest(units[k], extra, reason)
			}
		}
	}

	if pods.AllSourcesReady() {
		for _, k := range units.sortedKeys() {
			st := pods.PodState(k.pod)
			if st.Deleted || (opts.EvictTerminatedPods && st.Terminated) {
				removeOldest(units[k], len(units[k]), ReasonDeletedPod)
				delete(units, k)
			}
		}
	}
	if p.MaxPerPodContainer >= 0 {
		enforcePerUnit(p.MaxPerPodContainer, ReasonMaxPerPodContainer)
	}
	if p.MaxContainers >= 0 && units.count() > p.MaxContainers {
		// Groups emptied by a MaxPerPodContainer of 0 still count, as in kubelet.
		enforcePerUnit(max(p.MaxContainers/len(units), 1), ReasonMaxContainers)
		if n := units.count(); n > p.MaxContainers {
			var all []Container
			for _, k := range units.sortedKeys() {
				all = append(all, units[k]...)
			}
			slices.SortFunc(all, newestFirst)
			removeOldest(all, n-p.MaxContainers, ReasonMaxContainers)
		}
	}
	return out
}

// Sandbox is what the runtime keeps for one pod besides its containers (its network
// namespace, pod cgroup and directory), one per pod start.
type Sandbox struct {
	ID      string
	PodUID  types.UID
	Created time.Time
	// Active sandboxes (ready, or still holding containers) are never removed.
	Active bool
}

// PlanSandboxes decides which sandboxes to remove, as kubelet does: all inactive ones of
// deleted pods (or terminated ones with EvictTerminatedPods), and for every other pod
// all but the newest sandbox, so its last one stays for status and logs.
func PlanSandboxes(sandboxes []Sandbox, pods PodStates, opts Options) []Sandbox {
	byPod := map[types.UID][]Sandbox{}
	for _, s := range sandboxes {
		byPod[s.PodUID] = append(byPod[s.PodUID], s)
	}
	uids := make([]types.UID, 0, len(byPod))
	for uid := range byPod {
		uids = append(uids, uid)
	}
	slices.Sort(uids)
	var out []Sandbox
	for _, uid := range uids {
		ss := byPod[uid]
		slices.SortFunc(ss, func(a, b Sandbox) int {
			return cmp.Or(b.Created.Compare(a.Created), cmp.Compare(a.ID, b.ID))
		})
		keep := 1
		if st := pods.PodState(uid); st.Deleted || (opts.EvictTerminatedPods && st.Terminated) {
			keep = 0
		}
		for i := len(ss) - 1; i >= keep; i-- {
			if !ss[i].Active {
				out = append(out, ss[i])
			}
		}
	}
	return out
}

// PodLogDir is a pod's directory of container logs (under /var/log/pods).
type PodLogDir struct {
	PodUID types.UID
	Path   string
}

// PlanLogDirs returns the log directories of deleted pods, once all pod sources are
// ready.
func PlanLogDirs(dirs []PodLogDir, pods PodStates) []PodLogDir {
	if !pods.AllSourcesReady() {
		return nil
	}
	var out []PodLogDir
	for _, d := range dirs {
		if pods.PodState(d.PodUID).Deleted {
			out = append(out, d)
		}
	}
	return out
}
