package scheduler

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	v1 "k8s.io/api/core/v1"
)

// maxNodeScore is kube-scheduler's top score.
const maxNodeScore = 100

// leastAllocatedScore favours the node that stays emptiest after the pod is placed:
// for cpu and memory, with equal weight, the share of allocatable still free, 0 to 100.
// Requests count with the scoring defaults, so pods without requests count too.
func leastAllocatedScore(demand podDemand, c candidate) int64 {
	alloc := fromList(c.node.Status.Allocatable)
	free := func(capacity, used int64) int64 {
		if capacity <= 0 || used > capacity {
			return 0
		}
		return (capacity - used) * maxNodeScore / capacity
	}
	cpu := free(alloc[v1.ResourceCPU], c.usage.scoringCPU+demand.scoringCPU)
	mem := free(alloc[v1.ResourceMemory], c.usage.scoringMemory+demand.scoringMemory)
	return (cpu + mem) / 2
}

// decision is the outcome of one scheduling attempt.
type decision struct {
	node string // "" when nothing fits
	// message explains a failure, as kube-scheduler's FailedScheduling does.
	message string
}

// pickNode filters the candidates and returns the best-scoring node that fits; ties go
// to the node whose name sorts first, so the choice is stable.
func pickNode(pod *v1.Pod, candidates []candidate) decision {
	demand := demandOf(pod)
	reasons := map[string]int{}
	best, bestScore := "", int64(-1)
	for _, c := range candidates {
		if why := filter(pod, demand, c); len(why) > 0 {
			for _, r := range why {
				reasons[r]++
			}
			continue
		}
		score := leastAllocatedScore(demand, c)
		if score > bestScore || (score == bestScore && c.node.Name < best) {
			best, bestScore = c.node.Name, score
		}
	}
	if best != "" {
		return decision{node: best}
	}
	return decision{message: failureMessage(len(candidates), reasons)}
}

// failureMessage is kube-scheduler's wording: "0/3 nodes are available: 1 node(s) had
// untolerated taint {k: v}, 2 Insufficient memory." with the counts sorted as text.
func failureMessage(nodes int, reasons map[string]int) string {
	if nodes == 0 {
		return "0/0 nodes are available: no nodes available to schedule pods."
	}
	parts := make([]string, 0, len(reasons))
	for _, r := range slices.Sorted(maps.Keys(reasons)) {
		parts = append(parts, fmt.Sprintf("%d %s", reasons[r], r))
	}
	slices.Sort(parts)
	return fmt.Sprintf("0/%d nodes are available: %s.", nodes, strings.Join(parts, ", "))
}
