package nodelifecycle

import "k8s.io/apimachinery/pkg/runtime"

// Event reasons, as the Kubernetes node controller records them.
const (
	eventRegisteredNode = "RegisteredNode"
	eventRemovingNode   = "RemovingNode"
	eventNodeNotReady   = "NodeNotReady"
)

// discardEvents is the recorder when none is configured.
type discardEvents struct{}

func (discardEvents) Event(runtime.Object, string, string, string) {}
