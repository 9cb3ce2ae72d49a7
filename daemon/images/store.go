package images

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/prometheus/client_golang/prometheus"
	"golang.org/x/sys/unix"
	"k8s.io/utils/clock"

	"github.com/plinth/plinth/internal/atomicfile"
)

// DefaultRoot is where plinthd keeps images.
const DefaultRoot = "/var/lib/plinth/images"

// tmpPrefix marks a directory or file being written; Open removes leftovers of a crash.
const tmpPrefix = ".tmp-"

// Record is what the store knows about one image. The image ID is the digest of its
// config, as for docker and CRI runtimes.
type Record struct {
	ID             string    `json:"id"`
	RepoTags       []string  `json:"repoTags,omitempty"`    // registry/repo:tag, fully qualified
	RepoDigests    []string  `json:"repoDigests,omitempty"` // registry/repo@sha256:..., fully qualified
	ManifestDigest string    `json:"manifestDigest"`
	DiffIDs        []string  `json:"diffIDs"`  // uncompressed layer digests, bottom first
	ChainIDs       []string  `json:"chainIDs"` // bottom first; each names a directory under layers/
	Size           int64     `json:"size"`     // bytes of the unpacked layers, shared ones counted
	PulledAt       time.Time `json:"pulledAt"` // last pull, import, or Always check that confirmed it
	LastUsed       time.Time `json:"lastUsed"` // last container root prepared from it
}

// Image is a Record together with its parsed config (entrypoint, cmd, env, working
// directory, user), which the runtime turns into the container's process.
type Image struct {
	Record
	Config *v1.ConfigFile
}

// Options configure a Store. Zero values mean the defaults.
type Options struct {
	Root   string      // DefaultRoot when empty
	Clock  clock.Clock // the real clock when nil
	Logger *slog.Logger
	// RootFSMode forces "overlay" or "copy" for container roots; empty probes overlayfs
	// once and falls back to copying when it does not work.
	RootFSMode RootFSMode
	// Registerer gets the store's metrics; nil registers none.
	Registerer prometheus.Registerer
}

// Store is the on-disk image store. It is safe for concurrent use, and several
// processes (plinthd, plinthctl image import) may use one root at once.
type Store struct {
	root    string
	clock   clock.Clock
	log     *slog.Logger
	puller  *puller
	metrics *storeMetrics

	// whiteouts is how unpacked layers mark deletions: overlayfs's own form (character
	// devices 0/0 and the trusted.overlay.opaque xattr) when this process may create
	// them, else the OCI .wh. files as they come in the tar.
	whiteouts whiteoutFormat

	rootfsMu   sync.Mutex
	rootfsMode RootFSMode // resolved lazily by probing
	// containerRoots serializes PrepareRootFS per container directory, so two calls
	// cannot both find the root unmounted and mount it twice.
	containerRoots keyedMutex
}

// Open opens (creating it if needed) the store at opts.Root and removes what a crash
// left half-written.
func Open(opts Options) (*Store, error) {
	s := &Store{root: opts.Root, clock: opts.Clock, log: opts.Logger, rootfsMode: opts.RootFSMode}
	if s.root == "" {
		s.root = DefaultRoot
	}
	if s.clock == nil {
		s.clock = clock.RealClock{}
	}
	if s.log == nil {
		s.log = slog.Default()
	}
	switch s.rootfsMode {
	case "", RootFSOverlay, RootFSCopy:
	default:
		return nil, fmt.Errorf("image store: rootfs mode %q is not overlay or copy", s.rootfsMode)
	}
	for _, d := range []string{"", "blobs/sha256", "layers", "records"} {
		if err := os.MkdirAll(filepath.Join(s.root, d), 0o700); err != nil {
			return nil, fmt.Errorf("image store: %w", err)
		}
	}
	err := s.removeLeftovers()
	if err != nil {
		return nil, err
	}
	s.whiteouts = probeWhiteoutFormat(s.root)
	s.puller = newPuller(s)
	if s.metrics, err = newStoreMetrics(opts.Registerer); err != nil {
		return nil, fmt.Errorf("image store metrics: %w", err)
	}
	return s, nil
}

// Root returns the store's directory.
func (s *Store) Root() string { return s.root }

func (s *Store) removeLeftovers() error {
	unlock, err := s.lock(unix.LOCK_EX)
	if err != nil {
		return err
	}
	defer unlock()
	for _, d := range []string{"blobs/sha256", "layers", "records"} {
		entries, err := os.ReadDir(filepath.Join(s.root, d))
		if err != nil {
			return fmt.Errorf("image store: %w", err)
		}
		for _, e := range entries {
			if strings.HasPrefix(e.Name(), tmpPrefix) || strings.HasPrefix(e.Name(), ".") {
				p := filepath.Join(s.root, d, e.Name())
				if err := os.RemoveAll(p); err != nil {
					return fmt.Errorf("image store: remove leftover %s: %w", p, err)
				}
			}
		}
	}
	return nil
}

// lock takes the store's file lock: LOCK_SH while pulling or importing (layers are
// written but nothing is deleted), LOCK_EX while records change or layers are deleted.
// Each call opens its own descriptor, so goroutines of one process exclude each other
// like separate processes do.
func (s *Store) lock(how int) (unlock func(), err error) {
	f, err := os.OpenFile(filepath.Join(s.root, "lock"), os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("image store lock: %w", err)
	}
	for {
		err = unix.Flock(int(f.Fd()), how)
		if !errors.Is(err, unix.EINTR) {
			break
		}
	}
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("image store lock: %w", err)
	}
	return func() { f.Close() }, nil
}

func (s *Store) blobPath(digest string) (string, error) {
	hexPart, err := digestHex(digest)
	if err != nil {
		return "", err
	}
	return filepath.Join(s.root, "blobs", "sha256", hexPart), nil
}

func (s *Store) recordPath(id string) (string, error) {
	hexPart, err := digestHex(id)
	if err != nil {
		return "", err
	}
	return filepath.Join(s.root, "records", hexPart), nil
}

func (s *Store) layerDir(chainID string) (string, error) {
	hexPart, err := digestHex(chainID)
	if err != nil {
		return "", err
	}
	return filepath.Join(s.root, "layers", hexPart), nil
}

// digestHex checks that d is sha256:<64 lowercase hex> and returns the hex, so no
// digest from a peer can name a path outside the store.
func digestHex(d string) (string, error) {
	h, ok := strings.CutPrefix(d, "sha256:")
	if !ok || len(h) != 64 {
		return "", fmt.Errorf("digest %q is not sha256:<64 hex digits>", d)
	}
	for _, c := range h {
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f') {
			return "", fmt.Errorf("digest %q is not sha256:<64 hex digits>", d)
		}
	}
	return h, nil
}

// writeBlob stores data under its digest, checking that it has that digest.
func (s *Store) writeBlob(digest string, data []byte) error {
	sum := sha256.Sum256(data)
	if got := "sha256:" + hex.EncodeToString(sum[:]); got != digest {
		return fmt.Errorf("blob %s: content has digest %s", digest, got)
	}
	p, err := s.blobPath(digest)
	if err != nil {
		return err
	}
	if _, err := os.Stat(p); err == nil {
		return nil
	}
	return atomicfile.Write(p, data, 0o600)
}

func (s *Store) readBlob(digest string) ([]byte, error) {
	p, err := s.blobPath(digest)
	if err != nil {
		return nil, err
	}
	return os.ReadFile(p)
}

func (s *Store) writeRecord(r *Record) error {
	p, err := s.recordPath(r.ID)
	if err != nil {
		return err
	}
	data, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return err
	}
	return atomicfile.Write(p, data, 0o600)
}

func (s *Store) readRecord(id string) (*Record, error) {
	p, err := s.recordPath(id)
	if err != nil {
		return nil, err
	}
	data, err := os.ReadFile(p)
	if err != nil {
		return nil, err
	}
	r := &Record{}
	if err := json.Unmarshal(data, r); err != nil {
		return nil, fmt.Errorf("image record %s: %w", p, err)
	}
	return r, nil
}

// records reads every image record. The directory is read each time rather than cached
// so that another process's import is seen at once; a node holds tens of images.
func (s *Store) records() ([]*Record, error) {
	entries, err := os.ReadDir(filepath.Join(s.root, "records"))
	if err != nil {
		return nil, fmt.Errorf("image store: %w", err)
	}
	out := make([]*Record, 0, len(entries))
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), ".") {
			continue
		}
		r, err := s.readRecord("sha256:" + e.Name())
		if errors.Is(err, fs.ErrNotExist) {
			continue // deleted meanwhile
		}
		if err != nil {
			return nil, err
		}
		out = append(out, r)
	}
	return out, nil
}

// Lookup finds the image a reference names on the node: by tag, by repository digest,
// or by image ID ("sha256:..."). It returns nil, nil when the image is not present.
func (s *Store) Lookup(image string) (*Image, error) {
	rec, err := s.lookupRecord(image)
	if err != nil || rec == nil {
		return nil, err
	}
	return s.withConfig(rec)
}

func (s *Store) lookupRecord(image string) (*Record, error) {
	if _, err := digestHex(image); err == nil {
		r, err := s.readRecord(image)
		if errors.Is(err, fs.ErrNotExist) {
			return nil, nil
		}
		return r, err
	}
	ref, err := ParseReference(image)
	if err != nil {
		return nil, err
	}
	recs, err := s.records()
	if err != nil {
		return nil, err
	}
	want := ref.Name()
	for _, r := range recs {
		if slices.Contains(r.RepoTags, want) || slices.Contains(r.RepoDigests, want) {
			if s.layersPresent(r) {
				return r, nil
			}
		}
	}
	return nil, nil
}

func (s *Store) layersPresent(r *Record) bool {
	for _, c := range r.ChainIDs {
		d, err := s.layerDir(c)
		if err != nil {
			return false
		}
		if _, err := os.Stat(filepath.Join(d, layerMetaFile)); err != nil {
			return false
		}
	}
	return true
}

func (s *Store) withConfig(r *Record) (*Image, error) {
	raw, err := s.readBlob(r.ID)
	if err != nil {
		return nil, fmt.Errorf("image %s: config: %w", r.ID, err)
	}
	cfg, err := v1.ParseConfigFile(strings.NewReader(string(raw)))
	if err != nil {
		return nil, fmt.Errorf("image %s: config: %w", r.ID, err)
	}
	return &Image{Record: *r, Config: cfg}, nil
}

// commitRecord writes rec under the exclusive lock: the names it carries are taken
// from any other image that had them (that image stays, untagged, for GC), and the
// times of an existing record for the same ID are kept where newer. The layers must be
// present: a GC between unpacking and commit would have removed them, and the caller
// unpacks again.
func (s *Store) commitRecord(rec *Record) error {
	unlock, err := s.lock(unix.LOCK_EX)
	if err != nil {
		return err
	}
	defer unlock()
	if !s.layersPresent(rec) {
		return errLayersGone
	}
	recs, err := s.records()
	if err != nil {
		return err
	}
	for _, other := range recs {
		if other.ID == rec.ID {
			rec.RepoTags = union(other.RepoTags, rec.RepoTags)
			rec.RepoDigests = union(other.RepoDigests, rec.RepoDigests)
			if other.LastUsed.After(rec.LastUsed) {
				rec.LastUsed = other.LastUsed
			}
			continue
		}
		tags := slices.DeleteFunc(slices.Clone(other.RepoTags), func(t string) bool { return slices.Contains(rec.RepoTags, t) })
		if len(tags) != len(other.RepoTags) {
			other.RepoTags = tags
			if err := s.writeRecord(other); err != nil {
				return err
			}
		}
	}
	return s.writeRecord(rec)
}

var errLayersGone = errors.New("layers removed while the image was being stored")

func union(a, b []string) []string {
	out := slices.Clone(a)
	for _, x := range b {
		if !slices.Contains(out, x) {
			out = append(out, x)
		}
	}
	slices.Sort(out)
	return out
}

// MarkUsed sets the image's last-used time to now (image GC deletes the least recently
// used first). PrepareRootFS calls it.
func (s *Store) MarkUsed(id string) error {
	unlock, err := s.lock(unix.LOCK_EX)
	if err != nil {
		return err
	}
	defer unlock()
	r, err := s.readRecord(id)
	if err != nil {
		return fmt.Errorf("image %s: %w", id, err)
	}
	r.LastUsed = s.clock.Now()
	return s.writeRecord(r)
}
