package registry

import "github.com/plinth/plinth/control/apiserver"

// All returns every resource the control service serves.
func All() []*apiserver.Resource {
	return []*apiserver.Resource{Nodes(), Leases()}
}
