package admission

import (
	corev1 "k8s.io/api/core/v1"
)

// Reasons a pod is refused, as kubelet puts them in the pod's status.reason (the pod
// then goes Failed with that reason and the message).
const (
	// ReasonEvicted: the node is under a pressure condition the pod may not start under.
	ReasonEvicted = "Evicted"
	// ReasonNodeShutdown: the node is shutting down.
	ReasonNodeShutdown = "NodeShutdown"
	// ReasonTerminated and MessageTerminated are what kubelet's graceful node shutdown
	// sets on the pods it stops; not an admission reason, kept here beside
	// ReasonNodeShutdown so the runtime uses the pair consistently.
	ReasonTerminated  = "Terminated"
	MessageTerminated = "Pod was terminated in response to imminent node shutdown."

	ReasonOutOfCPU              = "OutOfcpu"
	ReasonOutOfMemory           = "OutOfmemory"
	ReasonOutOfEphemeralStorage = "OutOfephemeral-storage"
	ReasonOutOfPods             = "OutOfpods"
	// ReasonOutOfPrefix prefixes the name of any other resource that does not fit
	// (OutOfexample.com/gpu, OutOfhugepages-2Mi).
	ReasonOutOfPrefix = "OutOf"

	ReasonNodeAffinity    = "NodeAffinity"
	ReasonNodeName        = "NodeName"
	ReasonNodePorts       = "NodePorts"
	ReasonTaintToleration = "TaintToleration"

	ReasonOSSelectorMismatch = "PodOSSelectorNodeLabelDoesNotMatch"
	ReasonOSNotSupported     = "PodOSNotSupported"
	ReasonInvalidNodeInfo    = "InvalidNodeInfo"

	// ReasonInvalidSeccompProfile is Plinth's: kubelet lets such a pod in and fails the
	// container with CreateContainerError; Plinth refuses the pod up front, naming the
	// container and the profile's problem.
	ReasonInvalidSeccompProfile = "InvalidSeccompProfile"
)

const messageNodeShutdown = "Pod was rejected as the node is shutting down."

// Input is everything admission looks at for one pod.
type Input struct {
	// Pod is the pod asking to start.
	Pod *corev1.Pod
	// OtherPods are the pods already admitted on this node and not yet terminated
	// (kubelet's active pods), without Pod itself.
	OtherPods []*corev1.Pod
	// Node is this node as last seen: labels, spec.taints, status.allocatable. A nil
	// Node refuses every pod (InvalidNodeInfo), as kubelet does when it cannot get it.
	Node *corev1.Node
	// Pressure lists the pressure conditions the node's eviction manager currently
	// holds True (MemoryPressure, DiskPressure, PIDPressure); see PressureFromNode.
	Pressure []corev1.NodeConditionType
	// ShuttingDown is set once graceful node shutdown has begun.
	ShuttingDown bool
	// OS is the node's operating system as runtime.GOOS names it; empty means "linux".
	OS string
}

// Result is an admission decision. Reason and Message are empty when admitted.
type Result struct {
	Admit   bool
	Reason  string
	Message string
}

var admitted = Result{Admit: true}

func refuse(reason, message string) Result {
	return Result{Reason: reason, Message: message}
}

// Handler is one admission check.
type Handler interface {
	Admit(in *Input) Result
}

// HandlerFunc turns a function into a Handler.
type HandlerFunc func(in *Input) Result

// Admit calls f.
func (f HandlerFunc) Admit(in *Input) Result { return f(in) }

// Admitter runs the admission checks in order and returns the first refusal.
type Admitter struct {
	handlers []Handler
}

// New returns an Admitter running kubelet's checks (node pressure first, as kubelet
// registers its eviction handler first; then the general predicates; then graceful
// node shutdown) followed by extra, in the order given (such as SeccompCheck).
func New(extra ...Handler) *Admitter {
	hs := []Handler{HandlerFunc(admitUnderPressure), HandlerFunc(admitByPredicates), HandlerFunc(admitUnlessShuttingDown)}
	return &Admitter{handlers: append(hs, extra...)}
}

// Admit decides whether in.Pod may start on the node. It changes nothing in in.
func (a *Admitter) Admit(in Input) Result {
	for _, h := range a.handlers {
		if r := h.Admit(&in); !r.Admit {
			return r
		}
	}
	return admitted
}

// admitUnlessShuttingDown is graceful node shutdown's admit handler.
func admitUnlessShuttingDown(in *Input) Result {
	if in.ShuttingDown {
		return refuse(ReasonNodeShutdown, messageNodeShutdown)
	}
	return admitted
}
