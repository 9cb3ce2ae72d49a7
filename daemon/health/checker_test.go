package health

import (
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
)

func TestCheckerWithNoChecksPasses(t *testing.T) {
	if err := NewChecker().Check(); err != nil {
		t.Fatalf("Check() with no checks = %v, want nil", err)
	}
}

func TestCheckerReportsEachFailingCheckByName(t *testing.T) {
	c := NewChecker()
	errDisk := errors.New("statfs /var/lib/plinth: input/output error")
	errLease := errors.New("no renewal for 2m0s")
	calls := map[string]int{}
	register := func(name string, err error) {
		c.Register(name, func() error { calls[name]++; return err })
	}
	register("disk", errDisk)
	register("pods", nil)
	register("lease", errLease)

	err := c.Check()
	if err == nil {
		t.Fatal("Check() = nil with two failing checks")
	}
	if !errors.Is(err, errDisk) || !errors.Is(err, errLease) {
		t.Fatalf("Check() = %v, want it to wrap both checks' errors", err)
	}
	want := "disk: " + errDisk.Error() + "\nlease: " + errLease.Error()
	if err.Error() != want {
		t.Fatalf("Check() = %q, want %q (failing checks in registration order)", err, want)
	}
	for _, name := range []string{"disk", "pods", "lease"} {
		if calls[name] != 1 {
			t.Errorf("check %q ran %d times, want 1", name, calls[name])
		}
	}
}

func TestCheckerRegisterReplacesSameName(t *testing.T) {
	c := NewChecker()
	c.Register("lease", func() error { return errors.New("stale") })
	c.Register("lease", func() error { return nil })
	if err := c.Check(); err != nil {
		t.Fatalf("Check() = %v after replacing the failing check with a passing one", err)
	}
	if n := len(c.run()); n != 1 {
		t.Fatalf("re-registering a name left %d checks, want 1", n)
	}
}

func TestCheckerRegisterRejectsWiringBugs(t *testing.T) {
	for name, register := range map[string]func(*Checker){
		"empty name": func(c *Checker) { c.Register("", func() error { return nil }) },
		"nil check":  func(c *Checker) { c.Register("lease", nil) },
	} {
		t.Run(name, func(t *testing.T) {
			defer func() {
				if recover() == nil {
					t.Fatal("Register did not panic")
				}
			}()
			register(NewChecker())
		})
	}
}

func TestCheckerConcurrentRegisterAndCheck(t *testing.T) {
	c := NewChecker()
	var wg sync.WaitGroup
	const n = 50
	for i := range n {
		wg.Add(2)
		go func() {
			defer wg.Done()
			c.Register(fmt.Sprintf("check-%d", i), func() error { return fmt.Errorf("failing %d", i) })
		}()
		go func() {
			defer wg.Done()
			_ = c.Check()
		}()
	}
	wg.Wait()
	err := c.Check()
	if err == nil {
		t.Fatal("Check() = nil with every check failing")
	}
	if got := strings.Count(err.Error(), "\n") + 1; got != n {
		t.Fatalf("Check() listed %d failures, want %d:\n%v", got, n, err)
	}
}
