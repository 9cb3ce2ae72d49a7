//go:build !race

package cgroup_test

const raceEnabled = false
