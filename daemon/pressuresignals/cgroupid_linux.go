package pressuresignals

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
)

// cgroupSearchLimit bounds the directories searched to name a victim's cgroup.
const cgroupSearchLimit = 20000

// cgroupPathByID finds the cgroup whose id (its directory's inode number) is id under
// the hierarchy mounted at root, and returns its path as /proc/<pid>/cgroup prints it.
// It searches at most cgroupSearchLimit directories; OOM kills are rare enough for
// the walk.
func cgroupPathByID(root string, id uint64) (string, bool) {
	queue := []string{root}
	for seen := 0; len(queue) > 0 && seen < cgroupSearchLimit; seen++ {
		dir := queue[0]
		queue = queue[1:]
		var st syscall.Stat_t
		if err := syscall.Stat(dir, &st); err != nil {
			continue
		}
		if st.Ino == id {
			rel, err := filepath.Rel(root, dir)
			if err != nil {
				return "", false
			}
			return "/" + strings.TrimPrefix(filepath.ToSlash(rel), "."), true
		}
		entries, err := os.ReadDir(dir)
		if err != nil {
			continue
		}
		for _, e := range entries {
			if e.IsDir() {
				queue = append(queue, filepath.Join(dir, e.Name()))
			}
		}
	}
	return "", false
}
