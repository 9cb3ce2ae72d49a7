package sandbox

import (
	"fmt"
	"net/netip"
	"strings"

	corev1 "k8s.io/api/core/v1"
)

// HostsFile is the pod's /etc/hosts as kubelet writes it: the localhost entries, the
// pod's own addresses under its host name (FQDN first when it has a subdomain), and its
// hostAliases. Invalid alias addresses are errors naming the field.
func HostsFile(pod *corev1.Pod, podIPs []string, hostname, fqdn string) ([]byte, error) {
	var b strings.Builder
	b.WriteString("# Kubernetes-managed hosts file.\n")
	b.WriteString("127.0.0.1\tlocalhost\n")
	b.WriteString("::1\tlocalhost ip6-localhost ip6-loopback\n")
	b.WriteString("fe00::0\tip6-localnet\n")
	b.WriteString("fe00::0\tip6-mcastprefix\n")
	b.WriteString("fe00::1\tip6-allnodes\n")
	b.WriteString("fe00::2\tip6-allrouters\n")
	names := hostname
	if fqdn != "" && fqdn != hostname {
		names = fqdn + "\t" + hostname
	}
	for _, ip := range podIPs {
		if _, err := netip.ParseAddr(ip); err != nil {
			return nil, fmt.Errorf("pod IP %q: %w", ip, err)
		}
		fmt.Fprintf(&b, "%s\t%s\n", ip, names)
	}
	if len(pod.Spec.HostAliases) > 0 {
		b.WriteString("\n# Entries added by HostAliases.\n")
	}
	for i, a := range pod.Spec.HostAliases {
		if _, err := netip.ParseAddr(a.IP); err != nil {
			return nil, fmt.Errorf("spec.hostAliases[%d].ip: %q is not an IP address", i, a.IP)
		}
		for j, h := range a.Hostnames {
			if h == "" || strings.ContainsAny(h, " \t\n#") {
				return nil, fmt.Errorf("spec.hostAliases[%d].hostnames[%d]: %q is not a host name", i, j, h)
			}
		}
		fmt.Fprintf(&b, "%s\t%s\n", a.IP, strings.Join(a.Hostnames, "\t"))
	}
	return []byte(b.String()), nil
}

// Hostname returns the pod's host name (spec.hostname, else the pod name, cut to 63
// characters as kubelet does) and its FQDN when spec.subdomain is set.
func Hostname(pod *corev1.Pod, clusterDomain string) (hostname, fqdn string) {
	hostname = pod.Spec.Hostname
	if hostname == "" {
		hostname = pod.Name
	}
	if len(hostname) > 63 {
		hostname = strings.TrimRight(hostname[:63], "-.")
	}
	if pod.Spec.Subdomain != "" && clusterDomain != "" {
		fqdn = fmt.Sprintf("%s.%s.%s.svc.%s", hostname, pod.Spec.Subdomain, pod.Namespace, clusterDomain)
	}
	return hostname, fqdn
}
