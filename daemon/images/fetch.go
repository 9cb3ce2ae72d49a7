package images

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"golang.org/x/sys/unix"
)

// chainIDs computes the OCI chain IDs of a layer stack (bottom first): the first is the
// first diff ID, each next one sha256("<previous chain ID> <diff ID>").
func chainIDs(diffIDs []string) []string {
	out := make([]string, len(diffIDs))
	for i, d := range diffIDs {
		if i == 0 {
			out[i] = d
			continue
		}
		sum := sha256.Sum256([]byte(out[i-1] + " " + d))
		out[i] = "sha256:" + hex.EncodeToString(sum[:])
	}
	return out
}

// storeImage writes img into the store (layers not yet present are unpacked, manifest
// and config kept as blobs) and records it under the given names. Every digest is
// checked: the config against the manifest, each layer's uncompressed content against
// the config's diff IDs, and the image ID is the config's digest.
func (s *Store) storeImage(ctx context.Context, img v1.Image, repoTags, repoDigests []string) (*Record, error) {
	rawManifest, err := img.RawManifest()
	if err != nil {
		return nil, fmt.Errorf("manifest: %w", err)
	}
	manifestDigest, err := img.Digest()
	if err != nil {
		return nil, fmt.Errorf("manifest: %w", err)
	}
	manifest, err := img.Manifest()
	if err != nil {
		return nil, fmt.Errorf("manifest: %w", err)
	}
	rawConfig, err := img.RawConfigFile()
	if err != nil {
		return nil, fmt.Errorf("config: %w", err)
	}
	imageID := manifest.Config.Digest.String()
	if sum := sha256.Sum256(rawConfig); "sha256:"+hex.EncodeToString(sum[:]) != imageID {
		return nil, fmt.Errorf("config: content does not have the manifest's digest %s", imageID)
	}
	cfg, err := img.ConfigFile()
	if err != nil {
		return nil, fmt.Errorf("config: %w", err)
	}
	layers, err := img.Layers()
	if err != nil {
		return nil, fmt.Errorf("layers: %w", err)
	}
	if len(layers) != len(cfg.RootFS.DiffIDs) {
		return nil, fmt.Errorf("manifest lists %d layers, config %d diff IDs", len(layers), len(cfg.RootFS.DiffIDs))
	}
	diffIDs := make([]string, len(layers))
	for i, d := range cfg.RootFS.DiffIDs {
		diffIDs[i] = d.String()
		if _, err := digestHex(diffIDs[i]); err != nil {
			return nil, fmt.Errorf("config: rootfs.diff_ids[%d]: %w", i, err)
		}
	}
	chain := chainIDs(diffIDs)

	// Unpacking may have to run again if an image GC removed a freshly unpacked layer
	// before the record that keeps it was written.
	for attempt := 0; ; attempt++ {
		size, err := s.unpackLayers(ctx, layers, diffIDs, chain, manifestDigest.String(), rawManifest, imageID, rawConfig)
		if err != nil {
			return nil, err
		}
		now := s.clock.Now()
		rec := &Record{
			ID: imageID, RepoTags: union(nil, repoTags), RepoDigests: union(nil, repoDigests),
			ManifestDigest: manifestDigest.String(), DiffIDs: diffIDs, ChainIDs: chain,
			Size: size, PulledAt: now, LastUsed: now,
		}
		err = s.commitRecord(rec)
		if errors.Is(err, errLayersGone) && attempt < 2 {
			continue
		}
		if err != nil {
			return nil, err
		}
		return rec, nil
	}
}

// unpackLayers runs under the shared lock, so no GC deletes layers meanwhile.
func (s *Store) unpackLayers(ctx context.Context, layers []v1.Layer, diffIDs, chain []string,
	manifestDigest string, rawManifest []byte, imageID string, rawConfig []byte) (int64, error) {
	unlock, err := s.lock(unix.LOCK_SH)
	if err != nil {
		return 0, err
	}
	defer unlock()
	var size int64
	for i, l := range layers {
		if err := ctx.Err(); err != nil {
			return 0, err
		}
		parent := ""
		if i > 0 {
			parent = chain[i-1]
		}
		m, err := s.readLayerMeta(chain[i])
		if err != nil {
			m, err = s.unpackOne(l, chain[i], parent, diffIDs[i])
			if err != nil {
				return 0, err
			}
		}
		size += m.Size
	}
	if err := s.writeBlob(imageID, rawConfig); err != nil {
		return 0, err
	}
	if err := s.writeBlob(manifestDigest, rawManifest); err != nil {
		return 0, err
	}
	return size, nil
}

func (s *Store) unpackOne(l v1.Layer, chainID, parent, diffID string) (*layerMeta, error) {
	rc, err := l.Uncompressed()
	if err != nil {
		return nil, fmt.Errorf("layer %s: %w", diffID, err)
	}
	// Reading to the end lets a verifying reader (remote blobs) check the compressed
	// digest; its error surfaces from Read or Close.
	m, err := s.unpackLayer(chainID, parent, diffID, rc)
	if cerr := rc.Close(); err == nil && cerr != nil {
		err = fmt.Errorf("layer %s: %w", diffID, cerr)
	}
	if err != nil {
		return nil, err
	}
	return m, nil
}
