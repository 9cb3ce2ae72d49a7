package pods

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// Execer runs a command in a container (daemon/pods/runc's Driver.Exec).
type Execer interface {
	Exec(ctx context.Context, containerID string, args []string) (output []byte, exitCode int, err error)
}

// Prober runs exec, HTTP and TCP probes as kubelet does.
type Prober struct {
	Exec Execer
	// UserAgent is sent with HTTP probes unless the probe sets one ("kube-probe/<v>").
	UserAgent string
}

// ProbeTarget is where a probe runs.
type ProbeTarget struct {
	ContainerID string
	Container   *corev1.Container // for named ports
	PodIP       string
}

// maxProbeBody is how much of an HTTP probe's response body is read.
const maxProbeBody = 10 * 1024

// Run runs p once within ctx (the caller bounds it with the probe's timeout) and
// reports success, with output for events. An error means the probe could not be run
// as written (bad port name, unsupported handler); it counts as a failure.
func (pr Prober) Run(ctx context.Context, p *corev1.Probe, tgt ProbeTarget) (bool, string, error) {
	switch {
	case p.Exec != nil:
		if pr.Exec == nil {
			return false, "", errors.New("exec probe: no runtime to exec in")
		}
		out, code, err := pr.Exec.Exec(ctx, tgt.ContainerID, p.Exec.Command)
		if err != nil {
			if ctx.Err() != nil {
				return false, "", fmt.Errorf("exec probe %q timed out", p.Exec.Command)
			}
			return false, string(out), err
		}
		return code == 0, string(out), nil
	case p.HTTPGet != nil:
		return pr.httpGet(ctx, p.HTTPGet, tgt)
	case p.TCPSocket != nil:
		port, err := resolvePort(p.TCPSocket.Port, tgt.Container)
		if err != nil {
			return false, "", err
		}
		host := p.TCPSocket.Host
		if host == "" {
			host = tgt.PodIP
		}
		var d net.Dialer
		conn, err := d.DialContext(ctx, "tcp", net.JoinHostPort(host, strconv.Itoa(port)))
		if err != nil {
			return false, err.Error(), nil
		}
		_ = conn.Close()
		return true, "", nil
	case p.GRPC != nil:
		return false, "", errors.New("gRPC probes are not supported by this node yet")
	}
	return false, "", errors.New("probe has no handler")
}

func (pr Prober) httpGet(ctx context.Context, g *corev1.HTTPGetAction, tgt ProbeTarget) (bool, string, error) {
	port, err := resolvePort(g.Port, tgt.Container)
	if err != nil {
		return false, "", err
	}
	host := g.Host
	if host == "" {
		host = tgt.PodIP
	}
	scheme := strings.ToLower(string(g.Scheme))
	if scheme == "" {
		scheme = "http"
	}
	if scheme != "http" && scheme != "https" {
		return false, "", fmt.Errorf("httpGet.scheme: %q is not HTTP or HTTPS", g.Scheme)
	}
	path := g.Path
	if !strings.HasPrefix(path, "/") {
		path = "/" + path
	}
	u, err := url.Parse(scheme + "://" + net.JoinHostPort(host, strconv.Itoa(port)) + path)
	if err != nil {
		return false, "", fmt.Errorf("httpGet.path: %q: %w", g.Path, err)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return false, "", err
	}
	req.Header.Set("User-Agent", pr.UserAgent)
	req.Header.Set("Accept", "*/*")
	for _, h := range g.HTTPHeaders {
		if strings.EqualFold(h.Name, "Host") {
			req.Host = h.Value
			continue
		}
		req.Header.Add(h.Name, h.Value)
	}
	client := &http.Client{
		// Probes check the target, not where it redirects; kubelet treats a redirect
		// elsewhere as success, and any 3xx is below 400.
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
		Transport: &http.Transport{
			TLSClientConfig:   &tls.Config{InsecureSkipVerify: true}, //nolint:gosec // kubelet does not verify probe targets
			DisableKeepAlives: true,
			Proxy:             nil,
		},
	}
	resp, err := client.Do(req)
	if err != nil {
		return false, err.Error(), nil
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, maxProbeBody))
	ok := resp.StatusCode >= 200 && resp.StatusCode < 400
	return ok, fmt.Sprintf("HTTP %d: %s", resp.StatusCode, body), nil
}

// resolvePort turns a probe's port (a number or a container port's name) into a number.
func resolvePort(p intstr.IntOrString, c *corev1.Container) (int, error) {
	if p.Type == intstr.Int {
		if p.IntVal < 1 || p.IntVal > 65535 {
			return 0, fmt.Errorf("probe port %d is out of range", p.IntVal)
		}
		return int(p.IntVal), nil
	}
	if c != nil {
		for _, cp := range c.Ports {
			if cp.Name == p.StrVal {
				return int(cp.ContainerPort), nil
			}
		}
	}
	if n, err := strconv.Atoi(p.StrVal); err == nil && n > 0 && n < 65536 {
		return n, nil
	}
	return 0, fmt.Errorf("probe port %q: no container port with that name", p.StrVal)
}
