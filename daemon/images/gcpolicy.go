package images

import (
	"sort"
	"time"
)

// GCPolicy is kubelet's image garbage collection policy.
type GCPolicy struct {
	// HighThresholdPercent: at or above this disk usage, images are deleted (85).
	HighThresholdPercent int
	// LowThresholdPercent: deletion goes on until usage is below this (80).
	LowThresholdPercent int
	// MaximumAge deletes unused images not used for this long, whatever the disk
	// usage (imageMaximumGCAge); 0 turns it off (the default).
	MaximumAge time.Duration
	// MinimumAge protects images pulled less than this long ago from disk-usage GC
	// (imageMinimumGCAge, kubelet's default 2 min), so an image is not deleted between
	// its pull and its container's start.
	MinimumAge time.Duration
}

// DefaultGCPolicy is kubelet's default.
func DefaultGCPolicy() GCPolicy {
	return GCPolicy{HighThresholdPercent: 85, LowThresholdPercent: 80, MinimumAge: 2 * time.Minute}
}

// FSStats is the capacity and free space of the file system holding the images.
type FSStats struct {
	CapacityBytes  int64
	AvailableBytes int64
}

// ImageInfo is what image GC knows of one image.
type ImageInfo struct {
	ID          string
	RepoTags    []string
	RepoDigests []string
	Size        int64
	PulledAt    time.Time
	LastUsed    time.Time
	InUse       bool // a container (running or not) uses it, as the runtime reports
}

// GCPlan is which images to delete, oldest use first, and why.
type GCPlan struct {
	// Delete lists the images to delete; the first AgeDeletions of them for MaximumAge,
	// the rest for disk space.
	Delete       []string
	AgeDeletions int
	// BytesToFree is how much the disk-usage rule wanted freed (0 below the high
	// threshold); FreedBytes what the chosen images add up to.
	BytesToFree int64
	FreedBytes  int64
	// UsagePercent is the disk usage the plan was made at.
	UsagePercent int
}

// PlanGC applies the policy, as kubelet does: first every unused image older than
// MaximumAge (by last use), then, when disk usage is at or above HighThresholdPercent,
// unused images by least recent use (those pulled within MinimumAge excepted) until
// the space freed brings usage under LowThresholdPercent. Images in use are never
// chosen.
func PlanGC(p GCPolicy, fs FSStats, images []ImageInfo, now time.Time) GCPlan {
	var plan GCPlan
	candidates := make([]ImageInfo, 0, len(images))
	for _, im := range images {
		if !im.InUse {
			candidates = append(candidates, im)
		}
	}
	sort.SliceStable(candidates, func(i, j int) bool {
		if !candidates[i].LastUsed.Equal(candidates[j].LastUsed) {
			return candidates[i].LastUsed.Before(candidates[j].LastUsed)
		}
		if !candidates[i].PulledAt.Equal(candidates[j].PulledAt) {
			return candidates[i].PulledAt.Before(candidates[j].PulledAt)
		}
		return candidates[i].ID < candidates[j].ID
	})
	chosen := map[string]bool{}
	if p.MaximumAge > 0 {
		for _, im := range candidates {
			if now.Sub(lastActivity(im)) > p.MaximumAge {
				chosen[im.ID] = true
				plan.Delete = append(plan.Delete, im.ID)
				plan.FreedBytes += im.Size
			}
		}
		plan.AgeDeletions = len(plan.Delete)
	}
	if fs.CapacityBytes <= 0 {
		return plan
	}
	used := fs.CapacityBytes - fs.AvailableBytes
	plan.UsagePercent = int(used * 100 / fs.CapacityBytes)
	if plan.UsagePercent < p.HighThresholdPercent {
		return plan
	}
	plan.BytesToFree = fs.CapacityBytes*int64(100-p.LowThresholdPercent)/100 - fs.AvailableBytes
	for _, im := range candidates {
		if plan.FreedBytes >= plan.BytesToFree {
			break
		}
		if chosen[im.ID] || now.Sub(im.PulledAt) < p.MinimumAge {
			continue
		}
		chosen[im.ID] = true
		plan.Delete = append(plan.Delete, im.ID)
		plan.FreedBytes += im.Size
	}
	return plan
}

// lastActivity is when an image was last used, or pulled if it never was.
func lastActivity(im ImageInfo) time.Time {
	if im.LastUsed.After(im.PulledAt) {
		return im.LastUsed
	}
	return im.PulledAt
}
