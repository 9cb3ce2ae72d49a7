package staticpods

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/clock"
)

// DefaultFileCheckFrequency is kubelet's fileCheckFrequency.
const DefaultFileCheckFrequency = 20 * time.Second

// ReasonInvalidManifest is the reason of the Warning Event posted on the Node when a
// manifest cannot be turned into a pod.
const ReasonInvalidManifest = "InvalidStaticPodManifest"

// eventTimeout bounds posting one Event, so an unreachable control service delays the
// next read of the directory by little.
const eventTimeout = 5 * time.Second

// EventSink posts Events (pressuresignals.APIEvents is one over the API).
type EventSink interface {
	Create(ctx context.Context, ev *corev1.Event) error
}

// dirWatcher signals that a directory may have changed; Events closes when the watch
// has ended and must be set up again.
type dirWatcher interface {
	Events() <-chan struct{}
	Close() error
}

// SourceConfig configures a Source.
type SourceConfig struct {
	// Dir is staticPodPath, the directory of manifests.
	Dir string
	// NodeName is this node's name, as registered.
	NodeName string
	// CheckFrequency is fileCheckFrequency: the directory is read again this often
	// even without a change notification. Zero means DefaultFileCheckFrequency.
	CheckFrequency time.Duration
	// OnUpdate receives the full desired set of static pods, sorted by namespace and
	// name, after the first read and after every read that changed it. It is called
	// from Run's goroutine, one call at a time, and should return quickly. The Source
	// never touches the pods again; they are read-only for the consumers it fans out to
	// (the runtime and MirrorPods share them).
	OnUpdate func(pods []*corev1.Pod)
	// Events, when set, receives a Warning Event about the Node for each manifest that
	// turns invalid (once per distinct error, not at every re-read).
	Events EventSink
	// Clock drives the periodic re-read and config.seen. Nil means the real clock.
	Clock clock.WithTicker
	// Registerer takes the metrics; nil registers none.
	Registerer prometheus.Registerer
	// Logger; nil means slog.Default().
	Logger *slog.Logger

	// watch sets up change notifications; nil means inotify (tests replace it).
	watch func(dir string) (dirWatcher, error)
	// afterRead, in tests, is called after every read of the directory.
	afterRead func()
}

// Source reads static pod manifests from a directory; see the package comment.
type Source struct {
	cfg     SourceConfig
	metrics *sourceMetrics

	// State of Run's goroutine only.
	seen      map[types.UID]metav1.Time // when each current pod version was first read
	reported  map[string]string         // file -> the error last reported for it
	emitted   bool
	lastUIDs  []types.UID
	dirMissed bool // the directory was missing at the last read (said once)
	eventSeq  int
}

// NewSource checks cfg and returns a Source; Run starts it.
func NewSource(cfg SourceConfig) (*Source, error) {
	if !filepath.IsAbs(cfg.Dir) {
		return nil, fmt.Errorf("static pod path %q must be an absolute path", cfg.Dir)
	}
	if cfg.NodeName == "" {
		return nil, errors.New("static pods need the node name")
	}
	if cfg.OnUpdate == nil {
		return nil, errors.New("static pods need a consumer (OnUpdate)")
	}
	if cfg.CheckFrequency <= 0 {
		cfg.CheckFrequency = DefaultFileCheckFrequency
	}
	if cfg.Clock == nil {
		cfg.Clock = clock.RealClock{}
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.watch == nil {
		cfg.watch = watchDir
	}
	m, err := newSourceMetrics(cfg.Registerer)
	if err != nil {
		return nil, err
	}
	return &Source{cfg: cfg, metrics: m, seen: map[types.UID]metav1.Time{}, reported: map[string]string{}}, nil
}

// Run reads the directory at once, then again on every change notification and every
// CheckFrequency, until ctx is done. It returns nil when ctx ends; no error in a
// manifest or the directory stops it.
func (s *Source) Run(ctx context.Context) error {
	ticker := s.cfg.Clock.NewTicker(s.cfg.CheckFrequency)
	defer ticker.Stop()
	var w dirWatcher
	defer func() {
		if w != nil {
			w.Close()
		}
	}()
	watchFailed := ""
	ensureWatch := func() {
		if w != nil {
			return
		}
		var err error
		if w, err = s.cfg.watch(s.cfg.Dir); err != nil {
			w = nil
			if msg := err.Error(); msg != watchFailed {
				s.cfg.Logger.Info("static pod directory not watched; it is read every fileCheckFrequency", "dir", s.cfg.Dir, "every", s.cfg.CheckFrequency, "reason", err)
				watchFailed = msg
			}
			return
		}
		watchFailed = ""
	}
	// Watch before reading, so no change between the read and the watch is missed.
	ensureWatch()
	s.readAndTell(ctx)
	for {
		var events <-chan struct{}
		if w != nil {
			events = w.Events()
		}
		select {
		case <-ctx.Done():
			return nil
		case <-ticker.C():
			ensureWatch()
		case _, ok := <-events:
			if !ok { // the directory went away or was replaced: watch it again
				w.Close()
				w = nil
				ensureWatch()
			}
		}
		s.readAndTell(ctx)
	}
}

func (s *Source) readAndTell(ctx context.Context) {
	s.read(ctx)
	if s.cfg.afterRead != nil {
		s.cfg.afterRead()
	}
}

// manifestResult is one file's outcome.
type manifestResult struct {
	file string
	pod  *corev1.Pod
	err  error
}

// read reads the directory once, reports manifest errors that are new, and hands
// the set to the consumer if it changed.
func (s *Source) read(ctx context.Context) {
	results, err := s.readDir()
	if err != nil {
		// The directory cannot be listed (permissions, I/O): keep the pods as they
		// are rather than stop them all for what may be a passing fault.
		s.cfg.Logger.Error("static pod directory unreadable; keeping the current static pods", "dir", s.cfg.Dir, "err", err)
		return
	}
	now := metav1.NewTime(s.cfg.Clock.Now())
	byName := map[string]string{} // namespace/name -> file
	var pods []*corev1.Pod
	var failed []manifestResult
	for _, r := range results {
		if r.err == nil {
			key := r.pod.Namespace + "/" + r.pod.Name
			if first, dup := byName[key]; dup {
				r.err = &ManifestError{File: r.file, Err: fmt.Errorf("pod %s is already defined by %s; names of static pods must be unique", key, first)}
			} else {
				byName[key] = r.file
				pods = append(pods, r.pod)
			}
		}
		if r.err != nil {
			failed = append(failed, r)
		}
	}
	s.reportErrors(ctx, failed)

	slices.SortFunc(pods, func(a, b *corev1.Pod) int {
		return strings.Compare(a.Namespace+"/"+a.Name, b.Namespace+"/"+b.Name)
	})
	uids := make([]types.UID, len(pods))
	seen := make(map[types.UID]metav1.Time, len(pods))
	for i, p := range pods {
		uids[i] = p.UID
		t, ok := s.seen[p.UID]
		if !ok {
			t = now
		}
		seen[p.UID] = t
		p.Annotations[AnnotationConfigSeen] = t.UTC().Format(time.RFC3339Nano)
	}
	s.seen = seen
	s.metrics.pods.Set(float64(len(pods)))
	if s.emitted && slices.Equal(uids, s.lastUIDs) {
		return
	}
	s.emitted, s.lastUIDs = true, uids
	s.cfg.Logger.Info("static pods", "dir", s.cfg.Dir, "pods", podKeys(pods))
	s.cfg.OnUpdate(pods)
}

// readDir decodes every manifest in the directory, in name order. A missing directory
// holds no pods.
func (s *Source) readDir() ([]manifestResult, error) {
	entries, err := os.ReadDir(s.cfg.Dir)
	if errors.Is(err, fs.ErrNotExist) {
		if !s.dirMissed {
			s.cfg.Logger.Info("static pod directory does not exist; no static pods until it is created", "dir", s.cfg.Dir)
			s.dirMissed = true
		}
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	s.dirMissed = false
	var out []manifestResult
	for _, e := range entries {
		if ignoredName(e.Name()) {
			continue
		}
		file := filepath.Join(s.cfg.Dir, e.Name())
		// Stat follows symbolic links: a link to a manifest is a manifest.
		info, err := os.Stat(file)
		if errors.Is(err, fs.ErrNotExist) {
			continue // removed since the listing, or a dangling link
		}
		if err != nil {
			out = append(out, manifestResult{file: file, err: &ManifestError{File: file, Err: err}})
			continue
		}
		if !info.Mode().IsRegular() {
			continue // kubelet does not descend into directories either
		}
		if info.Size() == 0 {
			// Being written (created, not yet filled: IN_CREATE comes first), or
			// emptied on purpose: either way no pod, and nothing to complain about.
			continue
		}
		pod, err := s.load(file)
		out = append(out, manifestResult{file: file, pod: pod, err: err})
	}
	return out, nil
}

// load reads and decodes one manifest and defaults it for this node.
func (s *Source) load(file string) (*corev1.Pod, error) {
	f, err := os.Open(file)
	if err != nil {
		return nil, &ManifestError{File: file, Err: err}
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, maxManifestBytes+1))
	if err != nil {
		return nil, &ManifestError{File: file, Err: err}
	}
	if len(data) > maxManifestBytes {
		return nil, &ManifestError{File: file, Err: fmt.Errorf("larger than %d MiB; a pod manifest is a few KiB", maxManifestBytes>>20)}
	}
	pod, err := DecodeManifest(file, data)
	if err != nil {
		return nil, err
	}
	if err := applyDefaults(pod, file, s.cfg.NodeName); err != nil {
		return nil, &ManifestError{File: file, Err: err}
	}
	return pod, nil
}

// ignoredName reports whether a directory entry is not a manifest: hidden files (as
// kubelet skips them; editors keep swap files there, such as vim's .pod.yaml.swp) and
// editor backups and lock files kubelet would try and fail to decode (emacs' pod.yaml~,
// #pod.yaml# and .#pod.yaml, vim's 4913 probe is a regular file only for an instant).
func ignoredName(name string) bool {
	return strings.HasPrefix(name, ".") || strings.HasSuffix(name, "~") ||
		(strings.HasPrefix(name, "#") && strings.HasSuffix(name, "#")) ||
		strings.HasSuffix(name, ".swp") || strings.HasSuffix(name, ".bak") || strings.HasSuffix(name, ".orig") ||
		strings.HasSuffix(name, ".dpkg-old") || strings.HasSuffix(name, ".dpkg-new") || strings.HasSuffix(name, ".dpkg-dist") ||
		strings.HasSuffix(name, ".rpmsave") || strings.HasSuffix(name, ".rpmnew")
}

// reportErrors logs, counts and posts an Event for each manifest error not reported
// before, and says when a file that failed is fine (or gone) again.
func (s *Source) reportErrors(ctx context.Context, failed []manifestResult) {
	current := map[string]string{}
	for _, r := range failed {
		msg := r.err.Error()
		current[r.file] = msg
		if s.reported[r.file] == msg {
			continue
		}
		s.metrics.errors.Inc()
		s.cfg.Logger.Error("invalid static pod manifest; it is not run", "file", r.file, "err", r.err)
		s.postEvent(ctx, msg)
	}
	for file := range s.reported {
		if _, still := current[file]; !still {
			s.cfg.Logger.Info("static pod manifest no longer failing", "file", file)
		}
	}
	s.reported = current
	s.metrics.invalid.Set(float64(len(current)))
}

func (s *Source) postEvent(ctx context.Context, message string) {
	if s.cfg.Events == nil {
		return
	}
	now := s.cfg.Clock.Now()
	t := metav1.NewTime(now)
	node := s.cfg.NodeName
	s.eventSeq++
	ev := &corev1.Event{
		ObjectMeta: metav1.ObjectMeta{
			// client-go's recorder names events <object>.<time in hex>; the sequence
			// keeps two errors found in one read apart.
			Name:      fmt.Sprintf("%s.%x.%d", node, now.UnixNano(), s.eventSeq),
			Namespace: metav1.NamespaceDefault,
		},
		InvolvedObject:      corev1.ObjectReference{Kind: "Node", Name: node, UID: types.UID(node)},
		Reason:              ReasonInvalidManifest,
		Message:             message,
		Type:                corev1.EventTypeWarning,
		Source:              corev1.EventSource{Component: eventComponent, Host: node},
		FirstTimestamp:      t,
		LastTimestamp:       t,
		Count:               1,
		ReportingController: eventComponent,
		ReportingInstance:   node,
	}
	ctx, cancel := context.WithTimeout(ctx, eventTimeout)
	defer cancel()
	if err := s.cfg.Events.Create(ctx, ev); err != nil {
		s.cfg.Logger.Warn("could not post the event about an invalid static pod manifest", "err", err)
	}
}

// eventComponent is the source of plinthd's Events.
const eventComponent = "plinthd"

func podKeys(pods []*corev1.Pod) []string {
	out := make([]string, len(pods))
	for i, p := range pods {
		out[i] = p.Namespace + "/" + p.Name
	}
	return out
}
