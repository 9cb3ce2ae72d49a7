//go:build linux

package pods

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"
	"k8s.io/apimachinery/pkg/types"

	"github.com/plinth/plinth/daemon/containergc"
	"github.com/plinth/plinth/daemon/images"
	"github.com/plinth/plinth/daemon/pods/runc"
	"github.com/plinth/plinth/daemon/pods/sandbox"
)

// Garbage is the Supervisor's runtime as container garbage collection sees it
// (containergc.Runtime). A container instance is one run of a pod's container: its
// runc checkpoint and state while runc knows it, its bundle directory with the root
// filesystem (PodsDir/<uid>/<name>/<attempt>), and its CRI log files
// (LogsDir/<namespace>_<pod>_<uid>/<name>/<attempt>.log and their rotations).
//
// Workers remove the runc state and bundle of a run as soon as it exits, so for a pod
// with a worker only log files are left of its dead runs; they are what piles up in a
// crash loop. For such a pod the newest instance of each container is never listed,
// even when it has exited: the pod's status and `kubectl logs` point at it, and
// `kubectl logs --previous` at the one before, which MaxPerPodContainer 1 keeps. Pods
// without a worker (finished pods a restarted plinthd did not start again, evicted
// pods, deleted ones) have all their exited instances listed, with whatever runc state
// and bundles are left. A running container is never listed.
//
// Removals hold the Supervisor's lock and check again that no worker owns what they
// remove, so a pod's worker never starts, claims or terminates containers of the pod
// while collection removes them. Sync waits for at most one removal then.
type Garbage struct {
	s *Supervisor
}

var _ containergc.Runtime = Garbage{}

// Garbage returns the Supervisor's runtime for container garbage collection.
func (s *Supervisor) Garbage() Garbage { return Garbage{s: s} }

// errOwned is a removal refused because a worker now owns the pod.
var errOwned = errors.New("a pod worker owns it now")

// instanceKey names one run of one container of a pod.
type instanceKey struct {
	uid     types.UID
	name    string
	attempt int
}

// instance is what is left of one run.
type instance struct {
	checkpoint *runc.Checkpoint
	exited     bool
	logs       []string
	created    time.Time
}

func (s *Supervisor) hasWorker(uid types.UID) bool {
	_, ok := s.workers[uid]
	return ok
}

// workerUIDs returns the pods that have a worker now.
func (s *Supervisor) workerUIDs() map[types.UID]bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make(map[types.UID]bool, len(s.workers))
	for uid := range s.workers {
		out[uid] = true
	}
	return out
}

// instances gathers every container run the runtime and the log directory know. A
// checkpoint whose state cannot be told is left out (so never removed) and reported
// in the error.
func (g Garbage) instances() (map[instanceKey]*instance, error) {
	cfg := g.s.cfg
	out := map[instanceKey]*instance{}
	get := func(k instanceKey) *instance {
		in, ok := out[k]
		if !ok {
			in = &instance{}
			out[k] = in
		}
		return in
	}
	cps, err := cfg.Runtime.List()
	errs := []error{}
	if err != nil {
		errs = append(errs, err)
	}
	for _, cp := range cps {
		uid, name := types.UID(cp.Labels["pod.uid"]), cp.Labels["container.name"]
		attempt, aerr := strconv.Atoi(cp.Labels["container.attempt"])
		if uid == "" || name == "" || aerr != nil {
			continue // not a pod's container
		}
		exited, err := cfg.Runtime.Exited(cp.ID)
		if err != nil {
			errs = append(errs, fmt.Errorf("state of container %s: %w", cp.ID, err))
			continue
		}
		in := get(instanceKey{uid, name, attempt})
		in.checkpoint, in.exited, in.created = &cp, exited, cp.CreatedAt
	}
	podDirs, err := os.ReadDir(cfg.LogsDir)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		errs = append(errs, err)
	}
	for _, pd := range podDirs {
		uid, ok := logDirUID(pd.Name())
		if !ok || !pd.IsDir() {
			continue
		}
		containers, err := os.ReadDir(filepath.Join(cfg.LogsDir, pd.Name()))
		if err != nil {
			errs = append(errs, err)
			continue
		}
		for _, cd := range containers {
			if !cd.IsDir() {
				continue
			}
			dir := filepath.Join(cfg.LogsDir, pd.Name(), cd.Name())
			files, err := os.ReadDir(dir)
			if err != nil {
				errs = append(errs, err)
				continue
			}
			for _, f := range files {
				attempt, live, ok := logFileAttempt(f.Name())
				if !ok {
					continue
				}
				in := get(instanceKey{uid, cd.Name(), attempt})
				path := filepath.Join(dir, f.Name())
				in.logs = append(in.logs, path)
				if live && in.checkpoint == nil {
					in.created = birthTime(path)
				}
			}
		}
	}
	return out, errors.Join(errs...)
}

// logDirUID reads the pod UID from a pod log directory's name,
// <namespace>_<name>_<uid> (names and namespaces hold no "_").
func logDirUID(dir string) (types.UID, bool) {
	parts := strings.Split(dir, "_")
	if len(parts) != 3 || parts[0] == "" || parts[1] == "" || parts[2] == "" {
		return "", false
	}
	return types.UID(parts[2]), true
}

// logFileAttempt reads "<attempt>.log" (live: the instance's current file) and its
// rotations "<attempt>.log.<suffix>".
func logFileAttempt(name string) (attempt int, live, ok bool) {
	head, rest, found := strings.Cut(name, ".log")
	if !found || head == "" || strings.TrimLeft(head, "0123456789") != "" || (rest != "" && rest[0] != '.') {
		return 0, false, false
	}
	n, err := strconv.Atoi(head)
	return n, rest == "", err == nil
}

// birthTime is when a file was created where the file system records it, else when it
// was last written: the latter only makes a dead instance look younger, so MinAge keeps
// it longer, never shorter.
func birthTime(path string) time.Time {
	var st unix.Statx_t
	if err := unix.Statx(unix.AT_FDCWD, path, 0, unix.STATX_BTIME|unix.STATX_MTIME, &st); err != nil {
		return time.Time{}
	}
	if st.Mask&unix.STATX_BTIME != 0 {
		return time.Unix(st.Btime.Sec, int64(st.Btime.Nsec))
	}
	return time.Unix(st.Mtime.Sec, int64(st.Mtime.Nsec))
}

// DeadContainers implements containergc.Runtime.
func (g Garbage) DeadContainers(context.Context) ([]containergc.Container, error) {
	workers := g.s.workerUIDs()
	all, err := g.instances()
	type group struct {
		uid  types.UID
		name string
	}
	groups := map[group][]instanceKey{}
	for k := range all {
		gk := group{k.uid, k.name}
		groups[gk] = append(groups[gk], k)
	}
	var out []containergc.Container
	for _, keys := range groups {
		slices.SortFunc(keys, func(a, b instanceKey) int { return cmp.Compare(a.attempt, b.attempt) })
		newest := keys[len(keys)-1].attempt
		// Later attempts started after earlier ones ended: Created must order them so
		// even where file times are coarse or missing.
		var prev time.Time
		for _, k := range keys {
			in := all[k]
			created := in.created
			if !created.After(prev) {
				created = prev.Add(time.Nanosecond)
			}
			prev = created
			if in.checkpoint != nil && !in.exited {
				continue // running
			}
			if workers[k.uid] && (k.attempt == newest || in.checkpoint != nil) {
				continue // the worker's current run, or one it still holds
			}
			out = append(out, containergc.Container{ID: containerID(k), PodUID: k.uid, Name: k.name, Created: created})
		}
	}
	slices.SortFunc(out, func(a, b containergc.Container) int { return cmp.Compare(a.ID, b.ID) })
	return out, err
}

// containerID is the runtime ID the worker gives a run (see startContainer).
func containerID(k instanceKey) string {
	return fmt.Sprintf("%s-%s-%d", k.uid, k.name, k.attempt)
}

// keyOf recovers the run a containergc.Container names.
func keyOf(c containergc.Container) (instanceKey, error) {
	prefix := string(c.PodUID) + "-" + c.Name + "-"
	rest, ok := strings.CutPrefix(c.ID, prefix)
	attempt, err := strconv.Atoi(rest)
	if !ok || err != nil || attempt < 0 {
		return instanceKey{}, fmt.Errorf("container %q is not a run of container %q of pod %s", c.ID, c.Name, c.PodUID)
	}
	return instanceKey{c.PodUID, c.Name, attempt}, nil
}

// RemoveContainer implements containergc.Runtime: the run's runc state and checkpoint,
// its root filesystem and bundle directory, and its log files. For a pod with a worker
// only log files are removed (the worker owns the rest).
func (g Garbage) RemoveContainer(ctx context.Context, c containergc.Container) error {
	k, err := keyOf(c)
	if err != nil {
		return err
	}
	cfg := g.s.cfg
	g.s.mu.Lock()
	defer g.s.mu.Unlock()
	owned := g.s.hasWorker(k.uid)
	id := containerID(k)
	switch exited, err := cfg.Runtime.Exited(id); {
	case errors.Is(err, runc.ErrNotFound):
		// runc no longer knows it: the worker removed it when it exited.
	case err != nil:
		return err
	case owned:
		return fmt.Errorf("container %s: %w", id, errOwned)
	case !exited:
		return fmt.Errorf("container %s still runs; not removed", id)
	default:
		if err := cfg.Runtime.Delete(ctx, id); err != nil {
			return err
		}
	}
	var errs []error
	if !owned {
		dir := filepath.Join(cfg.PodsDir, string(k.uid), k.name, strconv.Itoa(k.attempt))
		if _, err := os.Stat(dir); err == nil {
			if err := cfg.Images.RemoveRootFS(dir); err != nil {
				errs = append(errs, err)
			} else if err := os.RemoveAll(dir); err != nil {
				errs = append(errs, err)
			}
		}
	}
	logs, err := filepath.Glob(filepath.Join(cfg.LogsDir, "*_*_"+string(k.uid), k.name, strconv.Itoa(k.attempt)+".log*"))
	if err != nil {
		errs = append(errs, err)
	}
	for _, l := range logs {
		if _, _, ok := logFileAttempt(filepath.Base(l)); !ok {
			continue
		}
		if err := os.Remove(l); err != nil && !errors.Is(err, fs.ErrNotExist) {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// Sandboxes implements containergc.Runtime: one sandbox per pod that has a runtime
// directory (SandboxDir/<uid>) or a pod directory (PodsDir/<uid>); it is active while
// the pod has a worker or the runtime still holds a container of it.
func (g Garbage) Sandboxes(context.Context) ([]containergc.Sandbox, error) {
	cfg := g.s.cfg
	cps, err := cfg.Runtime.List()
	holding := map[types.UID]bool{}
	for _, cp := range cps {
		holding[types.UID(cp.Labels["pod.uid"])] = true
	}
	workers := g.s.workerUIDs()
	seen := map[types.UID]*containergc.Sandbox{}
	errs := []error{}
	if err != nil {
		errs = append(errs, err)
	}
	for _, root := range []string{cfg.SandboxDir, cfg.PodsDir} {
		entries, err := os.ReadDir(root)
		if err != nil && !errors.Is(err, fs.ErrNotExist) {
			errs = append(errs, err)
		}
		for _, e := range entries {
			if !e.IsDir() || strings.HasPrefix(e.Name(), ".") {
				continue
			}
			uid := types.UID(e.Name())
			created := birthTime(filepath.Join(root, e.Name()))
			if s, ok := seen[uid]; ok {
				if created.Before(s.Created) {
					s.Created = created
				}
				continue
			}
			seen[uid] = &containergc.Sandbox{ID: string(uid), PodUID: uid, Created: created, Active: workers[uid] || holding[uid]}
		}
	}
	out := make([]containergc.Sandbox, 0, len(seen))
	for _, s := range seen {
		out = append(out, *s)
	}
	slices.SortFunc(out, func(a, b containergc.Sandbox) int { return cmp.Compare(a.ID, b.ID) })
	return out, errors.Join(errs...)
}

// RemoveSandbox implements containergc.Runtime: the pod's network, runtime directory,
// cgroup and pod directory, unless a worker owns the pod or the runtime still holds a
// container of it.
func (g Garbage) RemoveSandbox(ctx context.Context, sb containergc.Sandbox) error {
	cfg := g.s.cfg
	uid := string(sb.PodUID)
	if uid == "" || strings.ContainsAny(uid, "/\x00") || uid == "." || uid == ".." {
		return fmt.Errorf("sandbox %q: not a pod UID", uid)
	}
	g.s.mu.Lock()
	defer g.s.mu.Unlock()
	if g.s.hasWorker(sb.PodUID) {
		return fmt.Errorf("sandbox of pod %s: %w", uid, errOwned)
	}
	cps, err := cfg.Runtime.List()
	if err != nil {
		return err
	}
	for _, cp := range cps {
		if cp.Labels["pod.uid"] == uid {
			return fmt.Errorf("sandbox of pod %s: container %s still exists", uid, cp.ID)
		}
	}
	var errs []error
	if err := cfg.Network.Teardown(ctx, uid); err != nil {
		errs = append(errs, err)
	}
	if err := sandbox.Remove(filepath.Join(cfg.SandboxDir, uid)); err != nil {
		errs = append(errs, err)
	}
	if err := cfg.Cgroups.Remove(uid); err != nil {
		errs = append(errs, err)
	}
	if err := removePodDir(cfg.Images, filepath.Join(cfg.PodsDir, uid)); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// PodLogDirs implements containergc.Runtime.
func (g Garbage) PodLogDirs(context.Context) ([]containergc.PodLogDir, error) {
	root := g.s.cfg.LogsDir
	entries, err := os.ReadDir(root)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	var out []containergc.PodLogDir
	for _, e := range entries {
		if uid, ok := logDirUID(e.Name()); ok && e.IsDir() {
			out = append(out, containergc.PodLogDir{PodUID: uid, Path: filepath.Join(root, e.Name())})
		}
	}
	return out, err
}

// RemovePodLogDir implements containergc.Runtime, unless a worker owns the pod.
func (g Garbage) RemovePodLogDir(_ context.Context, d containergc.PodLogDir) error {
	if filepath.Dir(d.Path) != filepath.Clean(g.s.cfg.LogsDir) {
		return fmt.Errorf("log directory %s is not under %s", d.Path, g.s.cfg.LogsDir)
	}
	if uid, ok := logDirUID(filepath.Base(d.Path)); !ok || uid != d.PodUID {
		return fmt.Errorf("log directory %s is not pod %s's", d.Path, d.PodUID)
	}
	g.s.mu.Lock()
	defer g.s.mu.Unlock()
	if g.s.hasWorker(d.PodUID) {
		return fmt.Errorf("log directory %s: %w", d.Path, errOwned)
	}
	return os.RemoveAll(d.Path)
}

// ImagesInUse returns the IDs of the images under the root filesystems of the
// containers on the node (running or dead), read from their bundle directories, for
// image garbage collection.
func (g Garbage) ImagesInUse() (map[string]bool, error) {
	dirs, err := filepath.Glob(filepath.Join(g.s.cfg.PodsDir, "*", "*", "*"))
	if err != nil {
		return nil, err
	}
	out := map[string]bool{}
	var errs []error
	for _, dir := range dirs {
		id, err := images.RootFSImage(dir)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if id != "" {
			out[id] = true
		}
	}
	return out, errors.Join(errs...)
}
