package podnet

import (
	"sync"
	"sync/atomic"
	"testing"
)

func TestPodLocksSerialisePerPodOnly(t *testing.T) {
	var l podLocks
	var inside atomic.Int32
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			unlock := l.lock("same")
			if n := inside.Add(1); n != 1 {
				t.Errorf("%d holders of one pod's lock at once", n)
			}
			inside.Add(-1)
			unlock()
		})
	}
	wg.Wait()
	// Another pod's lock is free while one is held.
	unlockA := l.lock("a")
	done := make(chan struct{})
	go func() { l.lock("b")(); close(done) }()
	<-done
	unlockA()
	if len(l.locks) != 0 {
		t.Errorf("%d lock entries left after every holder released", len(l.locks))
	}
}
