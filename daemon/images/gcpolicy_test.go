package images

import (
	"reflect"
	"testing"
	"time"
)

func TestPlanGC(t *testing.T) {
	now := time.Unix(1_000_000, 0)
	ago := func(d time.Duration) time.Time { return now.Add(-d) }
	const gib = int64(1) << 30
	images := []ImageInfo{
		{ID: "old", Size: 3 * gib, PulledAt: ago(48 * time.Hour), LastUsed: ago(40 * time.Hour)},
		{ID: "mid", Size: 2 * gib, PulledAt: ago(48 * time.Hour), LastUsed: ago(5 * time.Hour)},
		{ID: "recent", Size: 4 * gib, PulledAt: ago(48 * time.Hour), LastUsed: ago(time.Hour)},
		{ID: "busy", Size: 9 * gib, PulledAt: ago(99 * time.Hour), LastUsed: ago(90 * time.Hour), InUse: true},
		{ID: "fresh", Size: 5 * gib, PulledAt: ago(time.Minute), LastUsed: ago(time.Minute)},
	}
	def := DefaultGCPolicy()
	cases := []struct {
		name       string
		policy     GCPolicy
		fs         FSStats
		wantDelete []string
		wantToFree int64
	}{
		{"below high threshold deletes nothing", def, FSStats{100 * gib, 16 * gib}, nil, 0},
		// 85% used: free to 80% = 20 GiB available, so 5 GiB: old (3) then mid (2).
		{"at high threshold frees to low, least recently used first", def, FSStats{100 * gib, 15 * gib}, []string{"old", "mid"}, 5 * gib},
		// 90% used: 10 GiB to free; old+mid+recent = 9, fresh too young, busy in use.
		{"in-use and young images are spared even when short", def, FSStats{100 * gib, 10 * gib}, []string{"old", "mid", "recent"}, 10 * gib},
		{"minimum age zero allows fresh images", GCPolicy{HighThresholdPercent: 85, LowThresholdPercent: 80}, FSStats{100 * gib, 5 * gib},
			[]string{"old", "mid", "recent", "fresh"}, 15 * gib},
		{"maximum age deletes unused old images at any usage", GCPolicy{HighThresholdPercent: 85, LowThresholdPercent: 80, MaximumAge: 24 * time.Hour},
			FSStats{100 * gib, 90 * gib}, []string{"old"}, 0},
		// Max age frees old (3 GiB) of the 5 needed; LRU adds mid.
		{"maximum age counts toward the space to free", GCPolicy{HighThresholdPercent: 85, LowThresholdPercent: 80, MaximumAge: 24 * time.Hour, MinimumAge: 2 * time.Minute},
			FSStats{100 * gib, 15 * gib}, []string{"old", "mid"}, 5 * gib},
		{"no capacity known: only the age rule", GCPolicy{HighThresholdPercent: 85, LowThresholdPercent: 80}, FSStats{}, nil, 0},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			plan := PlanGC(c.policy, c.fs, images, now)
			if !reflect.DeepEqual(plan.Delete, c.wantDelete) || plan.BytesToFree != c.wantToFree {
				t.Fatalf("plan %+v; want delete %v, to free %d", plan, c.wantDelete, c.wantToFree)
			}
			var freed int64
			for _, id := range plan.Delete {
				for _, im := range images {
					if im.ID == id {
						freed += im.Size
						if im.InUse {
							t.Fatalf("plan deletes in-use image %s", id)
						}
					}
				}
			}
			if freed != plan.FreedBytes {
				t.Fatalf("FreedBytes %d, sizes add up to %d", plan.FreedBytes, freed)
			}
		})
	}
}
