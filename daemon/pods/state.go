package pods

import "time"

// RunState is where one run of a container is.
type RunState int

const (
	// Created: the runtime created it; its program has not started.
	Created RunState = iota + 1
	// Running: its program runs.
	Running
	// Exited: it ended (ExitCode, Signal, OOMKilled say how).
	Exited
)

// Run is one run of a container as the runtime reported it.
type Run struct {
	ID        string // runtime container ID
	ImageID   string
	State     RunState
	StartedAt time.Time
	// FinishedAt, ExitCode, Signal and OOMKilled are set once Exited.
	FinishedAt time.Time
	ExitCode   int
	Signal     int
	OOMKilled  bool
	// Unknown: the exit status was lost (ContainerStatusUnknown).
	Unknown bool
	// Message is the termination message (the termination-log file, or the log tail
	// with FallbackToLogsOnError).
	Message string
}

// Waiting is why a container is not running when the cause is not a previous run: a
// failed pull or create, recorded by the worker that tried.
type Waiting struct {
	Reason  string // ErrImagePull, ImagePullBackOff, ErrImageNeverPull, CreateContainerError, ...
	Message string
}

// ContainerState is everything the lifecycle knows about one container of a pod.
type ContainerState struct {
	// Current is the latest run, Previous the one before it (lastState); nil if none.
	Current, Previous *Run
	// Restarts counts runs after the first.
	Restarts int
	// Waiting is set while starting fails; cleared by a successful start.
	Waiting *Waiting
	// Backoff is the container's crash-loop (or pull) backoff.
	Backoff Backoff
	// Ready and Started are the readiness and startup probes' verdicts for Current.
	Ready, Started bool
	// LivenessFailed asks for Current to be killed and restarted by policy.
	LivenessFailed bool
}

// PodState is what the lifecycle knows about a pod on the node.
type PodState struct {
	// Containers by name, init containers included.
	Containers map[string]*ContainerState
	// PodIPs, primary first (empty for hostNetwork pods until the node IP is known).
	PodIPs  []string
	HostIPs []string
	// StartTime is when the node accepted the pod.
	StartTime time.Time
	// Terminating is set once the pod is being stopped for good: nothing restarts, and
	// the status shows the containers' final states.
	Terminating bool
}

// Container returns the state of name, creating an empty one.
func (p *PodState) Container(name string) *ContainerState {
	if p.Containers == nil {
		p.Containers = map[string]*ContainerState{}
	}
	c, ok := p.Containers[name]
	if !ok {
		c = &ContainerState{}
		p.Containers[name] = c
	}
	return c
}

// RecordStart records that a new run of the container was created and started, moving
// the current run to Previous.
func (c *ContainerState) RecordStart(r Run) {
	if c.Current != nil {
		c.Previous = c.Current
		c.Restarts++
	}
	rc := r
	c.Current = &rc
	c.Waiting = nil
	c.Ready, c.Started, c.LivenessFailed = false, false, false
}

// Exit is how a run ended, as the runtime reported it.
type Exit struct {
	FinishedAt         time.Time
	ExitCode, Signal   int
	OOMKilled, Unknown bool
	Message            string
}

// RecordExit records how the current run ended, observed at now, and advances the
// crash-loop backoff. The backoff counts from now on the lifecycle's clock (the
// runtime's FinishedAt comes from another process's clock).
func (c *ContainerState) RecordExit(e Exit, now time.Time) {
	if c.Current == nil {
		return
	}
	r := c.Current
	r.State, r.FinishedAt, r.ExitCode, r.Signal, r.OOMKilled, r.Unknown, r.Message = Exited, e.FinishedAt, e.ExitCode, e.Signal, e.OOMKilled, e.Unknown, e.Message
	c.Ready, c.LivenessFailed = false, false
	c.Backoff.Failed(r.StartedAt, now)
}
