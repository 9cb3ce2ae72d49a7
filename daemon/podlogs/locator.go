package podlogs

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// DefaultRoot is where kubelet and plinthd keep pod logs (kubelet's podLogsDir).
const DefaultRoot = "/var/log/pods"

// ErrNotFound is wrapped by Locate when there is no such log; the error says which
// part is missing (the pod, the container, the previous instance).
var ErrNotFound = errors.New("log not found")

// PodDir is the directory of one pod's logs under root.
func PodDir(root, namespace, name, uid string) string {
	return filepath.Join(root, namespace+"_"+name+"_"+uid)
}

// ContainerLogPath is the file of one container instance: restartCount counts from 0.
func ContainerLogPath(root, namespace, name, uid, container string, restartCount int) string {
	return filepath.Join(PodDir(root, namespace, name, uid), container, strconv.Itoa(restartCount)+".log")
}

// Locator finds container log files under Root by looking at the files alone, so logs
// stay readable when nothing else knows the pod (a runtime restarted, a pod just
// deleted).
type Locator struct {
	Root string
}

// Locate returns the log file of the container's current instance (the highest
// restart count), or with previous the one before it (restart count minus one). uid
// may be empty: the pod's most recently modified log directory is used then, since an
// older one belongs to a deleted pod of the same name.
func (l Locator) Locate(namespace, pod, uid, container string, previous bool) (string, error) {
	for what, v := range map[string]string{"namespace": namespace, "pod": pod, "container": container} {
		if err := checkName(what, v); err != nil {
			return "", err
		}
	}
	if uid != "" {
		if err := checkName("pod uid", uid); err != nil {
			return "", err
		}
	}
	dir, err := l.podDir(namespace, pod, uid)
	if err != nil {
		return "", err
	}
	cdir := filepath.Join(dir, container)
	entries, err := os.ReadDir(cdir)
	if errors.Is(err, os.ErrNotExist) {
		return "", fmt.Errorf("container %q in pod %s/%s has no logs on this node: %w", container, namespace, pod, ErrNotFound)
	}
	if err != nil {
		return "", err
	}
	latest := -1
	have := map[int]bool{}
	for _, e := range entries {
		n, ok := restartCountOf(e.Name())
		if !ok {
			continue
		}
		have[n] = true
		latest = max(latest, n)
	}
	switch {
	case latest < 0:
		return "", fmt.Errorf("container %q in pod %s/%s has no logs on this node: %w", container, namespace, pod, ErrNotFound)
	case !previous:
		return filepath.Join(cdir, strconv.Itoa(latest)+".log"), nil
	case latest == 0 || !have[latest-1]:
		return "", fmt.Errorf("previous terminated container %q in pod %s/%s not found: %w", container, namespace, pod, ErrNotFound)
	}
	return filepath.Join(cdir, strconv.Itoa(latest-1)+".log"), nil
}

func (l Locator) podDir(namespace, pod, uid string) (string, error) {
	if uid != "" {
		dir := PodDir(l.Root, namespace, pod, uid)
		if _, err := os.Stat(dir); err != nil {
			return "", fmt.Errorf("pod %s/%s (uid %s) has no logs on this node: %w", namespace, pod, uid, ErrNotFound)
		}
		return dir, nil
	}
	matches, err := filepath.Glob(filepath.Join(l.Root, globEscape(namespace+"_"+pod+"_")+"*"))
	if err != nil {
		return "", err
	}
	var best string
	var bestTime int64
	for _, m := range matches {
		// Names have no "_" (DNS labels and subdomains), so the rest is the UID.
		if strings.Contains(strings.TrimPrefix(filepath.Base(m), namespace+"_"+pod+"_"), "_") {
			continue
		}
		fi, err := os.Stat(m)
		if err != nil || !fi.IsDir() {
			continue
		}
		if t := fi.ModTime().UnixNano(); best == "" || t > bestTime {
			best, bestTime = m, t
		}
	}
	if best == "" {
		return "", fmt.Errorf("pod %s/%s has no logs on this node: %w", namespace, pod, ErrNotFound)
	}
	return best, nil
}

// restartCountOf reads "<n>.log"; rotated files ("0.log.20240101-000000") are not
// instances.
func restartCountOf(name string) (int, bool) {
	s, ok := strings.CutSuffix(name, ".log")
	if !ok || s == "" || strings.TrimLeft(s, "0123456789") != "" {
		return 0, false
	}
	n, err := strconv.Atoi(s)
	return n, err == nil
}

// checkName refuses what could leave the log root or match other pods' directories.
func checkName(what, v string) error {
	if v == "" || v == "." || v == ".." || strings.ContainsAny(v, "/\\_*?[\x00") {
		return fmt.Errorf("%s %q is not a valid name", what, v)
	}
	return nil
}

func globEscape(s string) string {
	r := strings.NewReplacer(`*`, `\*`, `?`, `\?`, `[`, `\[`, `\`, `\\`)
	return r.Replace(s)
}
