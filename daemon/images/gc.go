package images

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"golang.org/x/sys/unix"
)

// InUseFunc reports the IDs of images that containers on the node use (running or
// not), as the runtime knows them.
type InUseFunc func() (map[string]bool, error)

// Images lists the store's images with their sizes and times, marking those inUse
// reports (inUse may be nil: nothing in use).
func (s *Store) Images(inUse InUseFunc) ([]ImageInfo, error) {
	used := map[string]bool{}
	if inUse != nil {
		var err error
		if used, err = inUse(); err != nil {
			return nil, fmt.Errorf("images in use: %w", err)
		}
	}
	recs, err := s.records()
	if err != nil {
		return nil, err
	}
	out := make([]ImageInfo, 0, len(recs))
	for _, r := range recs {
		out = append(out, ImageInfo{
			ID: r.ID, RepoTags: r.RepoTags, RepoDigests: r.RepoDigests, Size: r.Size,
			PulledAt: r.PulledAt, LastUsed: r.LastUsed, InUse: used[r.ID],
		})
	}
	slices.SortFunc(out, func(a, b ImageInfo) int { return b.PulledAt.Compare(a.PulledAt) })
	return out, nil
}

// FSStats reports the capacity and free space of the file system under the store.
func (s *Store) FSStats() (FSStats, error) {
	var st unix.Statfs_t
	if err := unix.Statfs(s.root, &st); err != nil {
		return FSStats{}, fmt.Errorf("statfs %s: %w", s.root, err)
	}
	return FSStats{
		CapacityBytes:  int64(st.Blocks) * st.Bsize,
		AvailableBytes: int64(st.Bavail) * st.Bsize,
	}, nil
}

// DiskUsage is the bytes the store holds: each unpacked layer once, plus blobs.
func (s *Store) DiskUsage() (int64, error) {
	var total int64
	entries, err := os.ReadDir(filepath.Join(s.root, "layers"))
	if err != nil {
		return 0, err
	}
	for _, e := range entries {
		if m, err := s.readLayerMeta("sha256:" + e.Name()); err == nil {
			total += m.Size
		}
	}
	err = filepath.WalkDir(filepath.Join(s.root, "blobs"), func(_ string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		if fi, err := d.Info(); err == nil {
			total += fi.Size()
		}
		return nil
	})
	return total, err
}

// RemoveImage deletes an image's record, then the layers and blobs no other image
// uses, and returns the layer bytes freed. Removing an image that is not there is not
// an error. The caller decides that no container needs it.
func (s *Store) RemoveImage(id string) (int64, error) {
	unlock, err := s.lock(unix.LOCK_EX)
	if err != nil {
		return 0, err
	}
	defer unlock()
	victim, err := s.readRecord(id)
	if errors.Is(err, fs.ErrNotExist) {
		return 0, nil
	}
	if err != nil {
		return 0, err
	}
	p, _ := s.recordPath(id)
	if err := os.Remove(p); err != nil {
		return 0, fmt.Errorf("remove image %s: %w", id, err)
	}
	rest, err := s.records()
	if err != nil {
		return 0, err
	}
	keepLayers, keepBlobs := map[string]bool{}, map[string]bool{}
	for _, r := range rest {
		for _, c := range r.ChainIDs {
			keepLayers[c] = true
		}
		keepBlobs[r.ID], keepBlobs[r.ManifestDigest] = true, true
	}
	var freed int64
	for _, c := range victim.ChainIDs {
		if keepLayers[c] {
			continue
		}
		m, err := s.readLayerMeta(c)
		if err == nil {
			freed += m.Size
		}
		dir, _ := s.layerDir(c)
		// Rename first so that a crash mid-removal leaves a temporary for Open to clear,
		// never a layer directory with part of its files.
		tmp := filepath.Join(filepath.Dir(dir), tmpPrefix+"rm-"+filepath.Base(dir))
		if err := os.Rename(dir, tmp); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return freed, fmt.Errorf("remove layer %s: %w", c, err)
		}
		if err := os.RemoveAll(tmp); err != nil {
			return freed, fmt.Errorf("remove layer %s: %w", c, err)
		}
	}
	for _, b := range []string{victim.ID, victim.ManifestDigest} {
		if keepBlobs[b] {
			continue
		}
		if bp, err := s.blobPath(b); err == nil {
			if err := os.Remove(bp); err != nil && !errors.Is(err, fs.ErrNotExist) {
				return freed, err
			}
		}
	}
	return freed, nil
}

// removeOrphans deletes layer directories and blobs that no record names: what a
// crash between removing a record and its layers left, or layers a failed pull
// unpacked. Pulls write records under the exclusive lock after checking their layers
// are still there, so under that lock an unnamed layer belongs to nobody.
func (s *Store) removeOrphans() (int64, error) {
	unlock, err := s.lock(unix.LOCK_EX)
	if err != nil {
		return 0, err
	}
	defer unlock()
	recs, err := s.records()
	if err != nil {
		return 0, err
	}
	keep := map[string]bool{}
	for _, r := range recs {
		keep[r.ID], keep[r.ManifestDigest] = true, true
		for _, c := range r.ChainIDs {
			keep[c] = true
		}
	}
	var freed int64
	for _, sub := range []string{"layers", "blobs/sha256"} {
		dir := filepath.Join(s.root, sub)
		entries, err := os.ReadDir(dir)
		if err != nil {
			return freed, err
		}
		for _, e := range entries {
			digest := "sha256:" + e.Name()
			if keep[digest] || strings.HasPrefix(e.Name(), ".") {
				continue
			}
			if sub == "layers" {
				if m, err := s.readLayerMeta(digest); err == nil {
					freed += m.Size
				}
			}
			if err := os.RemoveAll(filepath.Join(dir, e.Name())); err != nil {
				return freed, fmt.Errorf("remove orphan %s: %w", filepath.Join(sub, e.Name()), err)
			}
		}
	}
	return freed, nil
}

// GCResult is what one image garbage collection did.
type GCResult struct {
	Plan       GCPlan
	Deleted    []string
	FreedBytes int64
}

// GarbageCollect removes orphaned layers and blobs, runs PlanGC on the store's images
// and file system and deletes the chosen images. An image that came into use since the
// plan was made is kept.
func (s *Store) GarbageCollect(ctx context.Context, p GCPolicy, inUse InUseFunc) (GCResult, error) {
	var res GCResult
	freed, err := s.removeOrphans()
	res.FreedBytes += freed
	if err != nil {
		return res, err
	}
	images, err := s.Images(inUse)
	if err != nil {
		return res, err
	}
	st, err := s.FSStats()
	if err != nil {
		return res, err
	}
	res.Plan = PlanGC(p, st, images, s.clock.Now())
	for i, id := range res.Plan.Delete {
		if err := ctx.Err(); err != nil {
			return res, err
		}
		if inUse != nil {
			used, err := inUse()
			if err != nil {
				return res, fmt.Errorf("images in use: %w", err)
			}
			if used[id] {
				continue
			}
		}
		freed, err := s.RemoveImage(id)
		if err != nil {
			return res, err
		}
		res.Deleted = append(res.Deleted, id)
		res.FreedBytes += freed
		reason := gcReasonSpace
		if i < res.Plan.AgeDeletions {
			reason = gcReasonAge
		}
		s.metrics.gcCollected.WithLabelValues(reason).Inc()
	}
	return res, nil
}
