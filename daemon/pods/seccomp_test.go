package pods

import "github.com/plinth/plinth/daemon/seccomp"

// daemon/seccomp's Profiles is the resolver plinthd wires in.
var _ SeccompResolver = (*seccomp.Profiles)(nil)
