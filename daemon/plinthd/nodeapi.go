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
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/plinth/plinth/controlclient"
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

// newNodeAPI builds the node API, or returns nil when it is off. /pods lists what pods
// reports (nodeapi.NoPods when the pod runtime is off); logs are found from the files.
func newNodeAPI(cfg config.Config, pods nodeapi.PodSource, metrics prometheus.Gatherer, healthy func() error, logger *slog.Logger) (*nodeapi.Server, error) {
	if cfg.NodeAPIBindAddress == "" || cfg.Kubeconfig == "" {
		return nil, nil
	}
	certFile := cfg.ServingCertFile()
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
		Pods:         pods,
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

// newServingCerts keeps the node API's serving certificate when plinthd manages it
// (no tlsCertFile configured): requested from the control service for the node's
// Hostname and InternalIP, renewed like the client certificate. nil when the operator
// supplies the certificate or the node API is off.
func newServingCerts(cfg config.Config, nodeName string, addresses func() []corev1.NodeAddress,
	registry prometheus.Registerer, logger *slog.Logger) (*controlclient.ServingCertManager, error) {
	if cfg.NodeAPIBindAddress == "" || cfg.Kubeconfig == "" || cfg.TLSCertFile != "" {
		return nil, nil
	}
	names := func() (dns []string, ips []net.IP) {
		for _, a := range addresses() {
			switch a.Type {
			case corev1.NodeHostName, corev1.NodeInternalDNS:
				dns = append(dns, a.Address)
			case corev1.NodeInternalIP:
				if ip := net.ParseIP(a.Address); ip != nil {
					ips = append(ips, ip)
				}
			}
		}
		return dns, ips
	}
	return controlclient.NewServingCertManager(cfg.Kubeconfig, cfg.ServingCertFile(), nodeName, names,
		controlclient.RenewerOptions{Registerer: registry, Logger: logger})
}

// startNodeAPI starts the serving certificate manager and the node API on wg, once the
// Node is registered (the control service signs only names the Node reports). A node
// API that fails to serve cancels plinthd.
func startNodeAPI(ctx context.Context, wg *sync.WaitGroup, cancel context.CancelCauseFunc, cfg config.Config, nodeName string,
	addresses func() []corev1.NodeAddress, pods nodeapi.PodSource, registry *prometheus.Registry, healthy func() error, logger *slog.Logger) error {
	servingCerts, err := newServingCerts(cfg, nodeName, addresses, registry, logger.With("component", "certificates"))
	if err != nil {
		return err
	}
	if servingCerts != nil {
		wg.Go(func() { _ = servingCerts.Run(ctx) })
	}
	api, err := newNodeAPI(cfg, pods, registry, healthy, logger.With("component", "nodeapi"))
	if err != nil || api == nil {
		return err
	}
	wg.Go(func() {
		err := api.Run(ctx, cfg.NodeAPIBindAddress, func(a net.Addr) {
			logger.Info("serving the node API", "address", a.String(), "certificate", cfg.ServingCertFile())
		})
		if err != nil {
			cancel(fmt.Errorf("node API (nodeAPIBindAddress): %w", err))
		}
	})
	return nil
}
