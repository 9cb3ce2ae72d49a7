//go:build linux

package pods

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"sync"
	"time"

	specs "github.com/opencontainers/runtime-spec/specs-go"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/clock"

	"golang.org/x/sys/unix"

	"github.com/plinth/plinth/daemon/pods/bundle"
	"github.com/plinth/plinth/daemon/pods/podcgroup"
	"github.com/plinth/plinth/daemon/pods/runc"
	"github.com/plinth/plinth/daemon/pods/sandbox"
)

// ContainerRuntime is the part of daemon/pods/runc's Driver a pod worker uses.
type ContainerRuntime interface {
	Create(ctx context.Context, o runc.CreateOptions) (runc.Checkpoint, error)
	Start(ctx context.Context, id string) error
	Wait(ctx context.Context, id string) (runc.ExitStatus, error)
	Stop(ctx context.Context, id string, sig unix.Signal, grace time.Duration) (runc.ExitStatus, error)
	Delete(ctx context.Context, id string) error
	// List returns the checkpoints of every container the runtime knows, so a new
	// plinthd adopts what the previous one started; ListWithIDPrefix those whose ID
	// starts with a prefix (a pod's, as startContainer names them).
	List() ([]runc.Checkpoint, error)
	ListWithIDPrefix(prefix string) ([]runc.Checkpoint, error)
	// Exited reports whether a container has ended (container garbage collection
	// removes only those).
	Exited(id string) (bool, error)
	Execer
}

// PodCgroups creates and removes pod cgroups (daemon/pods/podcgroup's Manager).
type PodCgroups interface {
	Ensure(uid string, r podcgroup.Resources) error
	Remove(uid string) error
}

// WorkerConfig is what pod workers share. Every field is required except Seccomp (nil
// runs containers unconfined), PullSecrets, Report and the node facts (zero values
// mean unknown).
type WorkerConfig struct {
	Runtime ContainerRuntime
	Images  ImageService
	Network PodNetwork
	Seccomp SeccompResolver
	Cgroups PodCgroups
	// CgroupParent holds the pod cgroups (podcgroup.DefaultParent).
	CgroupParent string
	// PodsDir holds bundles and volumes (/var/lib/plinth/pods), LogsDir the CRI logs
	// (/var/log/pods), SandboxDir the pods' runtime directories (/run/plinth/pods).
	PodsDir, LogsDir, SandboxDir string
	// ResolvConf is what pods get as /etc/resolv.conf.
	ResolvConf    []byte
	ClusterDomain string
	HostIPs       []string
	// Node capacity and limits for bundles.
	NodeMemoryBytes, NodeMilliCPU, PodPidsLimit int64
	Limits                                      runc.Limits
	// Swap limits the containers' swap (memorySwap.swapBehavior).
	Swap            bundle.Swap
	CgroupNamespace bool
	Prober          Prober
	Clock           clock.Clock
	Logger          *slog.Logger
	// PullSecrets returns the pod's imagePullSecrets from the API (nil: none).
	PullSecrets func(pod *corev1.Pod) []corev1.Secret
	// Report receives the pod's status whenever it changes.
	Report func(pod *corev1.Pod, status corev1.PodStatus)
	// Metrics records operation durations and pod starts; nil records nothing.
	Metrics *Metrics
}

// PodWorker runs one pod on the node.
type PodWorker struct {
	cfg     *WorkerConfig
	pod     *corev1.Pod
	st      PodState
	last    *corev1.PodStatus
	sandbox bundle.Sandbox
	events  chan exitEvent
	waiters sync.WaitGroup

	// runs maps container name to its current run's runtime ID while it exists.
	runs map[string]string
	// stopSignals holds each current run's image STOPSIGNAL.
	stopSignals map[string]unix.Signal
	probes      map[string]map[ProbeKind]*ProbeTracker
	// statusAdjust, when set, adjusts every status reported from then on.
	statusAdjust func(*corev1.PodStatus)
	// startRecorded is set once the pod's start went into the metrics (or was
	// adopted: its start was a previous plinthd's).
	startRecorded bool
}

type exitEvent struct {
	name, id string
	status   runc.ExitStatus
	err      error
}

// maxSetupBackoff caps the wait between attempts to set a pod up.
const maxSetupBackoff = time.Minute

// NewPodWorker returns a worker for pod; Run starts it.
func NewPodWorker(cfg *WorkerConfig, pod *corev1.Pod) *PodWorker {
	return &PodWorker{cfg: cfg, pod: pod.DeepCopy(), events: make(chan exitEvent, 16),
		runs: map[string]string{}, stopSignals: map[string]unix.Signal{}, probes: map[string]map[ProbeKind]*ProbeTracker{}}
}

// Status is the status last reported (nil before the first).
func (w *PodWorker) Status() *corev1.PodStatus { return w.last }

func (w *PodWorker) podDir() string { return filepath.Join(w.cfg.PodsDir, string(w.pod.UID)) }

// Run sets the pod up and drives it until ctx is done. Containers keep running when it
// returns (a daemon restart must not touch them); Terminate stops them.
func (w *PodWorker) Run(ctx context.Context) error {
	defer w.waiters.Wait()
	w.st.StartTime = w.cfg.Clock.Now()
	w.st.HostIPs = w.cfg.HostIPs
	// A pod whose cgroup, network or sandbox cannot be made yet waits in Pending
	// (its containers ContainerCreating) and is retried with backoff, as kubelet
	// retries a failed sandbox.
	for delay := time.Second; ; delay = min(2*delay, maxSetupBackoff) {
		began := w.cfg.Clock.Now()
		err := w.setup(ctx)
		if err == nil {
			w.cfg.Metrics.operation(OpRunPodSandbox, began, w.cfg.Clock.Now())
			break
		}
		w.cfg.Logger.Warn("pod setup failed; retrying", "pod", w.pod.Namespace+"/"+w.pod.Name, "in", delay, "err", err)
		w.report()
		t := w.cfg.Clock.NewTimer(delay)
		select {
		case <-t.C():
		case <-ctx.Done():
			t.Stop()
			return nil
		}
	}
	for {
		now := w.cfg.Clock.Now()
		actions, wake := Plan(w.pod, &w.st, now)
		for _, a := range actions {
			switch a.Kind {
			case StartContainer:
				w.startContainer(ctx, a)
			case KillContainer:
				w.killContainer(ctx, a.Container)
			}
		}
		if len(actions) > 0 && ctx.Err() == nil {
			// Plan again at once: a failed start has set a backoff whose end must be
			// the next wake-up (it converges: a started or failed container yields
			// no action the next time).
			w.report()
			continue
		}
		wake = earliestTime(wake, w.runProbes(ctx))
		w.report()
		var timer clock.Timer
		var fire <-chan time.Time
		if !wake.IsZero() {
			timer = w.cfg.Clock.NewTimer(max(wake.Sub(w.cfg.Clock.Now()), 0))
			fire = timer.C()
		}
		select {
		case ev := <-w.events:
			w.containerExited(ctx, ev)
		case <-fire:
		case <-ctx.Done():
		}
		if timer != nil {
			timer.Stop()
		}
		if ctx.Err() != nil {
			return nil
		}
	}
}

func earliestTime(a, b time.Time) time.Time {
	if a.IsZero() || (!b.IsZero() && b.Before(a)) {
		return b
	}
	return a
}

func (w *PodWorker) report() {
	s := ComputeStatus(w.pod, &w.st, w.last, w.cfg.Clock.Now())
	if w.statusAdjust != nil {
		w.statusAdjust(&s)
	}
	if w.last != nil && reflect.DeepEqual(*w.last, s) {
		return
	}
	w.last = &s
	if s.Phase == corev1.PodRunning && !w.startRecorded {
		w.startRecorded = true
		w.cfg.Metrics.podStarted(w.cfg.Clock.Since(w.st.StartTime))
	}
	if w.cfg.Report != nil {
		w.cfg.Report(w.pod, s)
	}
}

// setup prepares the pod cgroup, network and sandbox; each step is idempotent.
func (w *PodWorker) setup(ctx context.Context) error {
	pod := w.pod
	if err := w.cfg.Cgroups.Ensure(string(pod.UID), podcgroup.PodResources(pod, w.cfg.PodPidsLimit)); err != nil {
		return err
	}
	var netns string
	if pod.Spec.HostNetwork {
		w.st.PodIPs = w.cfg.HostIPs
	} else {
		ns, err := w.cfg.Network.Setup(ctx, string(pod.UID))
		if err != nil {
			return fmt.Errorf("pod %s/%s network: %w", pod.Namespace, pod.Name, err)
		}
		netns, w.st.PodIPs = ns.NetNSPath, ns.IPs
	}
	hostname, fqdn := sandbox.Hostname(pod, w.cfg.ClusterDomain)
	var hosts []byte
	if pod.Spec.HostNetwork {
		hosts, _ = os.ReadFile("/etc/hosts")
	} else {
		var err error
		if hosts, err = sandbox.HostsFile(pod, w.st.PodIPs, hostname, fqdn); err != nil {
			return err
		}
	}
	sb, err := sandbox.Create(sandbox.Options{Dir: filepath.Join(w.cfg.SandboxDir, string(pod.UID)), Hostname: hostname,
		HostNetwork: pod.Spec.HostNetwork, HostIPC: pod.Spec.HostIPC, NetNSPath: netns, Hosts: hosts, ResolvConf: w.cfg.ResolvConf})
	if err != nil {
		return err
	}
	w.sandbox = sb
	if err := os.MkdirAll(w.podDir(), 0o700); err != nil {
		return err
	}
	return w.adopt(ctx)
}

// adopt takes over the pod's containers that a previous plinthd started (found by
// their checkpoint labels): running ones are watched again, never restarted; the
// latest run of each container counts, older ones are removed.
func (w *PodWorker) adopt(ctx context.Context) error {
	cps, err := w.cfg.Runtime.ListWithIDPrefix(containerIDPrefix(w.pod))
	if err != nil {
		w.cfg.Logger.Warn("list containers to adopt", "err", err)
	}
	latest := map[string]runc.Checkpoint{}
	for _, cp := range cps {
		if cp.Labels["pod.uid"] != string(w.pod.UID) || w.container(cp.Labels["container.name"]) == nil {
			continue
		}
		name := cp.Labels["container.name"]
		prev, seen := latest[name]
		if seen && attemptOf(prev) > attemptOf(cp) {
			prev, cp = cp, prev
		}
		if seen {
			if err := w.cfg.Runtime.Delete(ctx, prev.ID); err != nil {
				return err
			}
		}
		latest[name] = cp
	}
	adoptedApp := false
	if len(latest) > 0 {
		w.startRecorded = true
	}
	for name, cp := range latest {
		cs := w.st.Container(name)
		cs.Restarts = attemptOf(cp)
		started := cp.StartedAt
		if started.IsZero() {
			started = cp.CreatedAt
		}
		cs.Current = &Run{ID: cp.ID, State: Running, StartedAt: started}
		w.runs[name] = cp.ID
		if !isInit(w.pod, name) {
			w.trackProbes(w.container(name), w.cfg.Clock.Now())
			adoptedApp = true
		}
		w.watch(ctx, name, cp.ID)
		w.cfg.Logger.Info("adopted container", "pod", w.pod.Namespace+"/"+w.pod.Name, "container", name, "id", cp.ID)
	}
	if adoptedApp {
		// App containers run only after every init container succeeded; their runs
		// were removed when they exited, so record the successes rather than run
		// them again.
		for _, c := range w.pod.Spec.InitContainers {
			if cs := w.st.Container(c.Name); cs.Current == nil {
				cs.Current = &Run{State: Exited, ExitCode: 0}
			}
		}
	}
	return nil
}

// claim records the pod's containers that the runtime knows as the worker's runs
// without watching them, so Terminate stops and removes them (the pod was deleted
// while no worker ran it).
func (w *PodWorker) claim() error {
	cps, err := w.cfg.Runtime.List()
	for _, cp := range cps {
		if cp.Labels["pod.uid"] != string(w.pod.UID) {
			continue
		}
		name := cp.Labels["container.name"]
		if _, dup := w.runs[name]; dup || name == "" {
			name += "#" + cp.ID // an older run: stopped and removed all the same
		}
		w.runs[name] = cp.ID
	}
	return err
}

func isInit(pod *corev1.Pod, name string) bool {
	for _, c := range pod.Spec.InitContainers {
		if c.Name == name {
			return true
		}
	}
	return false
}

func attemptOf(cp runc.Checkpoint) int {
	n, _ := strconv.Atoi(cp.Labels["container.attempt"])
	return n
}

func (w *PodWorker) container(name string) *corev1.Container {
	for i := range w.pod.Spec.InitContainers {
		if w.pod.Spec.InitContainers[i].Name == name {
			return &w.pod.Spec.InitContainers[i]
		}
	}
	for i := range w.pod.Spec.Containers {
		if w.pod.Spec.Containers[i].Name == name {
			return &w.pod.Spec.Containers[i]
		}
	}
	return nil
}

// fail records a failed start: the container waits with reason and backs off.
func (w *PodWorker) fail(name, reason string, err error) {
	cs := w.st.Container(name)
	cs.Waiting = &Waiting{Reason: reason, Message: err.Error()}
	cs.Backoff.Failed(time.Time{}, w.cfg.Clock.Now())
	w.cfg.Logger.Warn("container not started", "pod", w.pod.Namespace+"/"+w.pod.Name, "container", name, "reason", reason, "err", err)
}

func (w *PodWorker) startContainer(ctx context.Context, a Action) {
	c := w.container(a.Container)
	cs := w.st.Container(c.Name)
	attempt := cs.Restarts
	if cs.Current != nil {
		attempt++
	}
	began := w.cfg.Clock.Now()
	img, err := w.cfg.Images.EnsureImage(ctx, ImageRequest{Image: c.Image, PullPolicy: c.ImagePullPolicy,
		PullSecrets: w.pullSecrets(), BackoffKey: string(w.pod.UID) + "/" + c.Image})
	w.cfg.Metrics.operation(OpPullImage, began, w.cfg.Clock.Now())
	began = w.cfg.Clock.Now()
	if err != nil {
		reason := "ErrImagePull"
		var pe *ImagePullError
		if errors.As(err, &pe) && pe.Reason != "" {
			reason = pe.Reason
		}
		w.fail(c.Name, reason, err)
		return
	}
	stopSignal, err := ParseStopSignal(img.StopSignal)
	if err != nil {
		w.fail(c.Name, "CreateContainerError", fmt.Errorf("image %s: %w", c.Image, err))
		return
	}
	id := fmt.Sprintf("%s%s-%d", containerIDPrefix(w.pod), c.Name, attempt)
	dir := filepath.Join(w.podDir(), c.Name, strconv.Itoa(attempt))
	cleanup := func() {
		_ = w.cfg.Images.RemoveRootFS(dir)
		_ = os.RemoveAll(dir)
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		w.fail(c.Name, "CreateContainerError", err)
		return
	}
	rootfs, err := w.cfg.Images.PrepareRootFS(id, img.ID, dir)
	if err != nil {
		cleanup()
		w.fail(c.Name, "CreateContainerError", err)
		return
	}
	spec, err := w.buildSpec(c, id, dir, rootfs, img)
	if err != nil {
		cleanup()
		w.fail(c.Name, "CreateContainerConfigError", err)
		return
	}
	// The profile depends on the capabilities the spec grants (RuntimeDefault allows
	// what CAP_SYS_ADMIN and friends need only to containers holding them).
	privileged := c.SecurityContext != nil && c.SecurityContext.Privileged != nil && *c.SecurityContext.Privileged
	if w.cfg.Seccomp != nil && !privileged {
		profile, err := w.cfg.Seccomp.ForContainer(&w.pod.Spec, c, privileged, spec.Process.Capabilities.Bounding)
		if err != nil {
			cleanup()
			w.fail(c.Name, "CreateContainerError", err)
			return
		}
		spec.Linux.Seccomp = profile
	}
	b, err := json.Marshal(spec)
	if err == nil {
		err = os.WriteFile(filepath.Join(dir, "config.json"), b, 0o600)
	}
	if err != nil {
		cleanup()
		w.fail(c.Name, "CreateContainerError", err)
		return
	}
	logPath := filepath.Join(w.cfg.LogsDir, fmt.Sprintf("%s_%s_%s", w.pod.Namespace, w.pod.Name, w.pod.UID), c.Name, strconv.Itoa(attempt)+".log")
	labels := map[string]string{"pod.uid": string(w.pod.UID), "pod.namespace": w.pod.Namespace, "pod.name": w.pod.Name,
		"container.name": c.Name, "container.attempt": strconv.Itoa(attempt)}
	if _, err := w.cfg.Runtime.Create(ctx, runc.CreateOptions{ID: id, Bundle: dir, LogPath: logPath, Labels: labels}); err != nil {
		cleanup()
		w.fail(c.Name, "CreateContainerError", err)
		return
	}
	w.cfg.Metrics.operation(OpCreateContainer, began, w.cfg.Clock.Now())
	began = w.cfg.Clock.Now()
	if err := w.cfg.Runtime.Start(ctx, id); err != nil {
		_ = w.cfg.Runtime.Delete(context.WithoutCancel(ctx), id)
		cleanup()
		w.fail(c.Name, "RunContainerError", err)
		return
	}
	now := w.cfg.Clock.Now()
	w.cfg.Metrics.operation(OpStartContainer, began, now)
	cs.RecordStart(Run{ID: id, ImageID: img.ID, State: Running, StartedAt: now})
	w.runs[c.Name] = id
	w.stopSignals[c.Name] = stopSignal
	if !a.Init {
		w.trackProbes(c, now)
	}
	w.watch(ctx, c.Name, id)
}

// containerIDPrefix starts the runtime ID of every container of pod
// ("<pod UID>-<container>-<attempt>").
func containerIDPrefix(pod *corev1.Pod) string { return string(pod.UID) + "-" }

func (w *PodWorker) pullSecrets() []corev1.Secret {
	if w.cfg.PullSecrets == nil {
		return nil
	}
	return w.cfg.PullSecrets(w.pod)
}

// trackProbes starts following c's probes for a run that started at started.
func (w *PodWorker) trackProbes(c *corev1.Container, started time.Time) {
	w.probes[c.Name] = map[ProbeKind]*ProbeTracker{}
	for kind, p := range map[ProbeKind]*corev1.Probe{StartupProbe: c.StartupProbe, LivenessProbe: c.LivenessProbe, ReadinessProbe: c.ReadinessProbe} {
		if p != nil {
			w.probes[c.Name][kind] = NewProbeTracker(kind, p, started)
		}
	}
}

// watch waits for the container's exit in a goroutine that Run owns and reports it as
// an event.
func (w *PodWorker) watch(ctx context.Context, name, id string) {
	w.waiters.Add(1)
	go func() {
		defer w.waiters.Done()
		st, err := w.cfg.Runtime.Wait(ctx, id)
		if ctx.Err() != nil {
			return // Run is ending; the container keeps running
		}
		select {
		case w.events <- exitEvent{name: name, id: id, status: st, err: err}:
		case <-ctx.Done():
		}
	}()
}

func (w *PodWorker) buildSpec(c *corev1.Container, id, dir, rootfs string, img Image) (*specs.Spec, error) {
	users, err := bundle.LookupUsers(rootfs)
	if err != nil {
		return nil, err
	}
	term := filepath.Join(dir, "termination-log")
	if err := os.WriteFile(term, nil, 0o666); err != nil {
		return nil, err
	}
	if err := os.Chmod(term, 0o666); err != nil { // any user in the container may write it
		return nil, err
	}
	vols, err := w.prepareVolumes()
	if err != nil {
		return nil, err
	}
	cg, err := podcgroup.Path(w.cfg.CgroupParent, string(w.pod.UID))
	if err != nil {
		return nil, err
	}
	var podIP string
	if len(w.st.PodIPs) > 0 {
		podIP = w.st.PodIPs[0]
	}
	var hostIP string
	if len(w.cfg.HostIPs) > 0 {
		hostIP = w.cfg.HostIPs[0]
	}
	return bundle.Build(bundle.Input{
		Pod: w.pod, Container: c, ContainerID: id, Image: img.Config, Users: users, RootfsPath: rootfs,
		Sandbox: w.sandbox, Volumes: vols, TerminationLogPath: term,
		CgroupParent: cg, CgroupNamespace: w.cfg.CgroupNamespace,
		NodeMemoryBytes: w.cfg.NodeMemoryBytes, NodeMilliCPU: w.cfg.NodeMilliCPU, Swap: w.cfg.Swap,
		MaxNOFILE: w.cfg.Limits.MaxNOFILE, MinOOMScoreAdj: w.cfg.Limits.MinOOMScoreAdj, PodIP: podIP, HostIP: hostIP,
	})
}

// prepareVolumes makes the pod's emptyDir directories (world-writable, or owned by
// fsGroup with the setgid bit, as kubelet does) and checks its hostPath volumes.
func (w *PodWorker) prepareVolumes() (map[string]string, error) {
	out := map[string]string{}
	var fsGroup *int64
	if w.pod.Spec.SecurityContext != nil {
		fsGroup = w.pod.Spec.SecurityContext.FSGroup
	}
	for i, v := range w.pod.Spec.Volumes {
		switch {
		case v.EmptyDir != nil:
			if v.EmptyDir.Medium != "" && v.EmptyDir.Medium != corev1.StorageMediumDefault {
				return nil, fmt.Errorf("spec.volumes[%d].emptyDir.medium: %q is not supported by this node yet", i, v.EmptyDir.Medium)
			}
			dir := filepath.Join(w.podDir(), "volumes", "empty-dir", v.Name)
			if err := os.MkdirAll(dir, 0o777); err != nil {
				return nil, err
			}
			mode := os.FileMode(0o777)
			if fsGroup != nil {
				if err := os.Chown(dir, -1, int(*fsGroup)); err != nil {
					return nil, err
				}
				mode |= os.ModeSetgid // new files inherit the group
			}
			if err := os.Chmod(dir, mode); err != nil {
				return nil, err
			}
			out[v.Name] = dir
		case v.HostPath != nil:
			p := v.HostPath.Path
			if !filepath.IsAbs(p) {
				return nil, fmt.Errorf("spec.volumes[%d].hostPath.path: %q is not absolute", i, p)
			}
			t := corev1.HostPathUnset
			if v.HostPath.Type != nil {
				t = *v.HostPath.Type
			}
			switch t {
			case corev1.HostPathDirectoryOrCreate:
				if err := os.MkdirAll(p, 0o755); err != nil {
					return nil, fmt.Errorf("spec.volumes[%d].hostPath: %w", i, err)
				}
			case corev1.HostPathDirectory, corev1.HostPathFile, corev1.HostPathSocket, corev1.HostPathCharDev, corev1.HostPathBlockDev:
				if _, err := os.Stat(p); err != nil {
					return nil, fmt.Errorf("spec.volumes[%d].hostPath: %w", i, err)
				}
			}
			out[v.Name] = p
		}
	}
	return out, nil
}

// containerExited records an exit, reads the termination message and removes the run
// from the runtime (its log file stays for `kubectl logs --previous`).
func (w *PodWorker) containerExited(ctx context.Context, ev exitEvent) {
	if w.runs[ev.name] != ev.id {
		return
	}
	cs := w.st.Container(ev.name)
	st := ev.status
	if ev.err != nil {
		st = runc.ExitStatus{Unknown: true}
		st.Code, st.FinishedAt = 255, w.cfg.Clock.Now()
	}
	attempt := cs.Restarts
	dir := filepath.Join(w.podDir(), ev.name, strconv.Itoa(attempt))
	msg := terminationMessage(filepath.Join(dir, "termination-log"))
	cs.RecordExit(Exit{FinishedAt: st.FinishedAt, ExitCode: st.Code, Signal: st.Signal, OOMKilled: st.OOMKilled, Unknown: st.Unknown, Message: msg}, w.cfg.Clock.Now())
	delete(w.runs, ev.name)
	delete(w.probes, ev.name)
	if err := w.cfg.Runtime.Delete(ctx, ev.id); err != nil {
		w.cfg.Logger.Warn("delete exited container", "id", ev.id, "err", err)
	}
	if err := w.cfg.Images.RemoveRootFS(dir); err != nil {
		w.cfg.Logger.Warn("remove root filesystem", "dir", dir, "err", err)
	}
	_ = os.RemoveAll(dir)
}

// terminationMessage reads at most 4 KiB of the termination-log file, as kubelet.
func terminationMessage(path string) string {
	f, err := os.Open(path)
	if err != nil {
		return ""
	}
	defer f.Close()
	b := make([]byte, 4096)
	n, _ := f.Read(b)
	return string(b[:n])
}

// killContainer stops a container whose liveness or startup probe failed; its exit
// arrives as an event and Plan restarts it by policy.
func (w *PodWorker) killContainer(ctx context.Context, name string) {
	id, ok := w.runs[name]
	if !ok {
		return
	}
	w.st.Container(name).LivenessFailed = false
	grace, sig := GracePeriod(w.pod), w.stopSignal(name)
	w.waiters.Add(1)
	go func() {
		defer w.waiters.Done()
		if _, err := w.cfg.Runtime.Stop(ctx, id, sig, grace); err != nil && ctx.Err() == nil {
			w.cfg.Logger.Warn("kill container", "id", id, "err", err)
		}
	}()
}

// stopSignal is the signal that asks the container's current run to stop: its image's
// STOPSIGNAL, SIGTERM for adopted runs (the image is not looked up again).
func (w *PodWorker) stopSignal(name string) unix.Signal {
	if sig, ok := w.stopSignals[name]; ok {
		return sig
	}
	return unix.SIGTERM
}

// runProbes runs the probes that are due and returns when the next one is.
func (w *PodWorker) runProbes(ctx context.Context) time.Time {
	var next time.Time
	for name, trackers := range w.probes {
		cs := w.st.Container(name)
		c := w.container(name)
		started := trackers[StartupProbe] == nil || trackers[StartupProbe].Verdict()
		for _, kind := range []ProbeKind{StartupProbe, LivenessProbe, ReadinessProbe} {
			t := trackers[kind]
			if t == nil || (kind != StartupProbe && !started) {
				continue
			}
			now := w.cfg.Clock.Now()
			if due := t.Next(); !due.IsZero() && !now.Before(due) {
				pctx, cancel := context.WithTimeout(ctx, t.Timeout())
				ok, _, err := w.cfg.Prober.Run(pctx, probeOf(c, kind), ProbeTarget{ContainerID: w.runs[name], Container: c, PodIP: firstOr(w.st.PodIPs)})
				cancel()
				t.Record(ok && err == nil, now)
			}
			switch kind {
			case StartupProbe:
				cs.Started = t.Verdict()
				started = cs.Started
			case ReadinessProbe:
				cs.Ready = t.Verdict()
			}
			if t.Failed() {
				cs.LivenessFailed = true
			}
			next = earliestTime(next, t.Next())
		}
	}
	return next
}

func probeOf(c *corev1.Container, k ProbeKind) *corev1.Probe {
	switch k {
	case StartupProbe:
		return c.StartupProbe
	case LivenessProbe:
		return c.LivenessProbe
	}
	return c.ReadinessProbe
}

func firstOr(s []string) string {
	if len(s) == 0 {
		return ""
	}
	return s[0]
}

// GracePeriod is how long a pod's containers get between SIGTERM and SIGKILL: the
// deletion's grace period when it is being deleted, else the spec's (30 s by default).
func GracePeriod(pod *corev1.Pod) time.Duration {
	if pod.DeletionGracePeriodSeconds != nil {
		return time.Duration(*pod.DeletionGracePeriodSeconds) * time.Second
	}
	if pod.Spec.TerminationGracePeriodSeconds != nil {
		return time.Duration(*pod.Spec.TerminationGracePeriodSeconds) * time.Second
	}
	return corev1.DefaultTerminationGracePeriodSeconds * time.Second
}

// Terminate stops the pod's running containers in parallel with its grace period,
// then removes them, the sandbox, the network, the cgroup and the pod's directory.
// Call it after Run returned.
func (w *PodWorker) Terminate(ctx context.Context) error { return w.terminate(ctx, GracePeriod(w.pod)) }

// terminate is Terminate with grace instead of the pod's own grace period (for
// node-pressure eviction).
func (w *PodWorker) terminate(ctx context.Context, grace time.Duration) error {
	w.st.Terminating = true
	var wg sync.WaitGroup
	var mu sync.Mutex
	var errs []error
	for name, id := range w.runs {
		sig := w.stopSignal(name)
		wg.Add(1)
		go func() {
			defer wg.Done()
			st, err := w.cfg.Runtime.Stop(ctx, id, sig, grace)
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				errs = append(errs, fmt.Errorf("stop %s: %w", name, err))
				return
			}
			w.st.Container(name).RecordExit(Exit{FinishedAt: st.FinishedAt, ExitCode: st.Code, Signal: st.Signal, OOMKilled: st.OOMKilled, Unknown: st.Unknown}, w.cfg.Clock.Now())
		}()
	}
	wg.Wait()
	for name, id := range w.runs {
		if err := w.cfg.Runtime.Delete(ctx, id); err != nil {
			errs = append(errs, err)
		}
		delete(w.runs, name)
	}
	w.report()
	if !w.pod.Spec.HostNetwork {
		if err := w.cfg.Network.Teardown(ctx, string(w.pod.UID)); err != nil {
			errs = append(errs, err)
		}
	}
	if err := sandbox.Remove(filepath.Join(w.cfg.SandboxDir, string(w.pod.UID))); err != nil {
		errs = append(errs, err)
	}
	if err := w.cfg.Cgroups.Remove(string(w.pod.UID)); err != nil {
		errs = append(errs, err)
	}
	if err := removePodDir(w.cfg.Images, w.podDir()); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// removePodDir removes a pod's directory after undoing the root filesystem of each
// container run under it (podDir/<container>/<attempt>): an overlay still mounted
// there would make the removal fail.
func removePodDir(images ImageService, podDir string) error {
	runs, _ := filepath.Glob(filepath.Join(podDir, "*", "*"))
	var errs []error
	for _, dir := range runs {
		if fi, err := os.Stat(dir); err != nil || !fi.IsDir() {
			continue
		}
		if err := images.RemoveRootFS(dir); err != nil {
			errs = append(errs, err)
		}
	}
	if err := os.RemoveAll(podDir); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}
