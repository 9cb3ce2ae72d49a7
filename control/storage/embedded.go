package storage

import (
	"context"
	"fmt"
	"log/slog"
	"net/url"
	"os"
	"path/filepath"
	"sync/atomic"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/server/v3/embed"
	"go.etcd.io/etcd/server/v3/etcdserver/api/v3client"
)

// Embedded is a single-member etcd running inside the control service. It listens only
// on unix sockets inside its data directory (mode 0700), so nothing but root on this
// machine can reach it; the control service talks to it in-process.
type Embedded struct {
	etcd    *embed.Etcd
	Client  *clientv3.Client
	closing *atomic.Bool
}

// StartEmbedded starts etcd with its data in dir and waits until it serves, or until
// readyTimeout passes. etcd's warnings and errors go to logger (nil: discarded).
func StartEmbedded(ctx context.Context, dir string, readyTimeout time.Duration, logger *slog.Logger) (*Embedded, error) {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("embedded etcd: create data directory: %w", err)
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, fmt.Errorf("embedded etcd: %w", err)
	}
	cfg := embed.NewConfig()
	cfg.Name = "plinth"
	cfg.Dir = filepath.Join(abs, "member-data")
	client := url.URL{Scheme: "unix", Path: filepath.Join(abs, "client.sock")}
	clientHTTP := url.URL{Scheme: "unix", Path: filepath.Join(abs, "client-http.sock")}
	peer := url.URL{Scheme: "unix", Path: filepath.Join(abs, "peer.sock")}
	cfg.ListenClientUrls = []url.URL{client}
	cfg.ListenClientHttpUrls = []url.URL{clientHTTP}
	cfg.AdvertiseClientUrls = []url.URL{client}
	cfg.ListenPeerUrls = []url.URL{peer}
	cfg.AdvertisePeerUrls = []url.URL{peer}
	cfg.InitialCluster = cfg.Name + "=" + peer.String()
	closing := new(atomic.Bool)
	cfg.ZapLoggerBuilder = embed.NewZapLoggerBuilder(newEtcdLogger(logger, closing))
	// Stale sockets from a crashed run would make the listeners fail.
	for _, u := range []url.URL{client, clientHTTP, peer} {
		_ = os.Remove(u.Path)
	}
	e, err := embed.StartEtcd(cfg)
	if err != nil {
		return nil, fmt.Errorf("embedded etcd in %s: %w", abs, err)
	}
	timer := time.NewTimer(readyTimeout)
	defer timer.Stop()
	select {
	case <-e.Server.ReadyNotify():
	case err := <-e.Err():
		closing.Store(true)
		e.Close()
		return nil, fmt.Errorf("embedded etcd in %s: %w", abs, err)
	case <-timer.C:
		closing.Store(true)
		e.Close()
		return nil, fmt.Errorf("embedded etcd in %s: not ready after %s", abs, readyTimeout)
	case <-ctx.Done():
		closing.Store(true)
		e.Close()
		return nil, ctx.Err()
	}
	return &Embedded{etcd: e, Client: v3client.New(e.Server), closing: closing}, nil
}

// Err reports a fatal etcd error while running.
func (e *Embedded) Err() <-chan error { return e.etcd.Err() }

// Close stops etcd and waits for it to flush.
func (e *Embedded) Close() {
	e.closing.Store(true)
	_ = e.Client.Close()
	e.etcd.Close()
}
