package podnet

import (
	"context"
	"fmt"
	"net/netip"
	"sync"
)

// Fake is a Network for the pod runtime's unit tests: real address allocation (in
// memory), no kernel. NetNSPath is a path under /run/plinth-fake/netns that does not
// exist. Err, when set, is returned by every call instead.
type Fake struct {
	alloc *Allocator

	mu        sync.Mutex
	Err       error
	setups    map[string]int // by pod UID
	teardowns map[string]int
	cleanups  int
}

var _ Network = (*Fake)(nil)

// NewFake returns a Fake allocating from podCIDRs.
func NewFake(podCIDRs ...netip.Prefix) (*Fake, error) {
	a, err := OpenAllocator("", podCIDRs)
	if err != nil {
		return nil, err
	}
	return &Fake{alloc: a, setups: map[string]int{}, teardowns: map[string]int{}}, nil
}

// Setup implements Network.
func (f *Fake) Setup(_ context.Context, podUID, netnsName string) (Attachment, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.Err != nil {
		return Attachment{}, f.Err
	}
	if err := checkPodUID(podUID); err != nil {
		return Attachment{}, fmt.Errorf("podnet: %w", err)
	}
	if netnsName == "" {
		netnsName = podUID
	}
	r, err := f.alloc.Allocate(podUID, netnsName)
	if err != nil {
		return Attachment{}, err
	}
	f.setups[podUID]++
	return Attachment{IPs: r.IPs, NetNSPath: netnsPath("/run/plinth-fake/netns", r.NetNS)}, nil
}

// Teardown implements Network.
func (f *Fake) Teardown(_ context.Context, podUID string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.Err != nil {
		return f.Err
	}
	f.teardowns[podUID]++
	return f.alloc.Release(podUID)
}

// Cleanup implements Network.
func (f *Fake) Cleanup(context.Context) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.Err != nil {
		return f.Err
	}
	f.cleanups++
	return nil
}

// Attached lists the pods holding addresses, sorted.
func (f *Fake) Attached() []string { return f.alloc.Pods() }

// Calls reports how often Setup and Teardown ran for the pod.
func (f *Fake) Calls(podUID string) (setups, teardowns int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.setups[podUID], f.teardowns[podUID]
}
