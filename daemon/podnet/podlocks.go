package podnet

import "sync"

// podLocks serialises Setup and Teardown per pod UID, so two calls for one pod never
// race to create its namespace (two bind mounts on one file would leak a namespace),
// while different pods proceed in parallel.
type podLocks struct {
	mu    sync.Mutex
	locks map[string]*podLock
}

type podLock struct {
	sync.Mutex
	refs int
}

// lock takes the pod's lock and returns its release.
func (l *podLocks) lock(uid string) func() {
	l.mu.Lock()
	if l.locks == nil {
		l.locks = map[string]*podLock{}
	}
	pl := l.locks[uid]
	if pl == nil {
		pl = &podLock{}
		l.locks[uid] = pl
	}
	pl.refs++
	l.mu.Unlock()
	pl.Lock()
	return func() {
		pl.Unlock()
		l.mu.Lock()
		if pl.refs--; pl.refs == 0 {
			delete(l.locks, uid)
		}
		l.mu.Unlock()
	}
}
