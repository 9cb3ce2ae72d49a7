package plinthd

import (
	"context"
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"log/slog"
	"net"
	"os"
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/plinth/plinth/daemon/config"
	"github.com/plinth/plinth/daemon/nodeapi"
	"github.com/plinth/plinth/daemon/podlogs"
	"github.com/plinth/plinth/kernel/cgroup"
)

// nodeAPIPort is the port the Node reports in daemonEndpoints: the one in
// nodeAPIBindAddress, 0 when the node API is off.
func nodeAPIPort(cfg config.Config) int32 {
	if cfg.NodeAPIBindAddress == "" {
		return 0
	}
	_, p, err := net.SplitHostPort(cfg.NodeAPIBindAddress)
	if err != nil {
		return 0
	}
	n, _ := strconv.ParseInt(p, 10, 32)
	return int32(n)
}

// newNodeAPI builds the node API, or returns nil (with the reason logged) when it is
// off or has no serving certificate yet. Pods come from the pod runtime, which is not
// wired yet: /pods is empty and logs are found from the files alone.
func newNodeAPI(cfg config.Config, metrics prometheus.Gatherer, healthy func() error, logger *slog.Logger) (*nodeapi.Server, error) {
	if cfg.NodeAPIBindAddress == "" || cfg.Kubeconfig == "" {
		return nil, nil
	}
	certFile := cfg.ServingCertFile()
	if _, err := os.Stat(certFile); err != nil {
		logger.Warn("node API is off: no serving certificate", "file", certFile, "err", err)
		return nil, nil
	}
	ca, err := clusterCA(cfg.Kubeconfig)
	if err != nil {
		return nil, err
	}
	host, err := cgroup.DetectHost()
	if err != nil {
		return nil, fmt.Errorf("node API resource metrics: %w", err)
	}
	reason := nodeapi.ProbeCheckpointing(nil, false)
	return nodeapi.New(nodeapi.Config{
		Pods:         nodeapi.NoPods{},
		Logs:         podlogs.Locator{Root: cfg.PodLogsDir},
		Stats:        nodeapi.CgroupStats{Host: host, Now: time.Now},
		Checkpointer: nodeapi.UnavailableCheckpointer{Reason: reason},
		Certificate:  &nodeapi.FileCertificate{Path: certFile},
		ClientCA:     ca,
		Metrics:      metrics,
		Configz:      cfg,
		Healthy:      healthy,
		Logger:       logger,
	})
}

// clusterCA is the CA of plinthd's kubeconfig: it signed the control service's
// certificates, so it verifies the clients of the node API.
func clusterCA(kubeconfig string) (*x509.Certificate, error) {
	restCfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		return nil, fmt.Errorf("kubeconfig %s: %w", kubeconfig, err)
	}
	data := restCfg.TLSClientConfig.CAData
	if len(data) == 0 && restCfg.TLSClientConfig.CAFile != "" {
		if data, err = os.ReadFile(restCfg.TLSClientConfig.CAFile); err != nil {
			return nil, fmt.Errorf("kubeconfig %s: certificate-authority: %w", kubeconfig, err)
		}
	}
	block, _ := pem.Decode(data)
	if block == nil {
		return nil, fmt.Errorf("kubeconfig %s: no cluster CA certificate, which the node API needs to verify clients", kubeconfig)
	}
	return x509.ParseCertificate(block.Bytes)
}

// runNodeAPI serves until ctx is done.
func runNodeAPI(ctx context.Context, s *nodeapi.Server, addr string, logger *slog.Logger) error {
	return s.Run(ctx, addr, func(a net.Addr) { logger.Info("serving the node API", "address", a.String()) })
}
