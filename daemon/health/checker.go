package health

import (
	"errors"
	"fmt"
	"slices"
	"sync"
)

// Checker is a named set of health checks. It is safe for concurrent use: checks may
// be registered while others run Check.
type Checker struct {
	mu     sync.Mutex
	checks []namedCheck // in registration order, so output is stable
}

type namedCheck struct {
	name  string
	check func() error
}

// checkResult is the outcome of one check; err is nil when it passed.
type checkResult struct {
	name string
	err  error
}

// NewChecker returns a Checker with no checks; with none, Check passes.
func NewChecker() *Checker { return &Checker{} }

// Register adds a check under name. Registering a name again replaces its check in
// place, so a subsystem that restarts can re-register without duplicating itself.
// An empty name or a nil check is a wiring bug and panics at startup rather than
// producing a health report nobody can read.
func (c *Checker) Register(name string, check func() error) {
	if name == "" {
		panic("health: Register called with an empty check name")
	}
	if check == nil {
		panic(fmt.Sprintf("health: Register(%q) called with a nil check", name))
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	for i := range c.checks {
		if c.checks[i].name == name {
			c.checks[i].check = check
			return
		}
	}
	c.checks = append(c.checks, namedCheck{name: name, check: check})
}

// Check runs every check in registration order. It returns nil when all pass, else
// the errors.Join of "name: err" for each failing check (errors.Is and errors.As see
// through to the checks' own errors).
func (c *Checker) Check() error {
	var errs []error
	for _, r := range c.run() {
		if r.err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", r.name, r.err))
		}
	}
	return errors.Join(errs...)
}

// run runs every check and reports each result. The checks run outside the lock, so
// a slow or hung check does not block Register or a concurrent run.
func (c *Checker) run() []checkResult {
	c.mu.Lock()
	checks := slices.Clone(c.checks)
	c.mu.Unlock()
	results := make([]checkResult, len(checks))
	for i, nc := range checks {
		results[i] = checkResult{name: nc.name, err: nc.check()}
	}
	return results
}
