//go:build race

package cgroup_test

// raceEnabled: the race detector's shadow memory makes a helper that touches 40 MiB
// need far more than 64 MiB.
const raceEnabled = true
