package pki

import (
	"fmt"
	"net"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation"
)

// servingHosts is the set of subject alternative names a serving certificate must carry.
type servingHosts struct {
	dnsNames []string
	ips      []net.IP
}

// parseServingHosts turns user-supplied host strings into SANs. Each entry must be an IP
// address or a DNS name (optionally a leading wildcard label, "*.example.com"); DNS names
// are lower-cased because certificate name matching is case-insensitive. Duplicates are
// dropped; order is kept so the certificate is stable across runs.
func parseServingHosts(hosts []string) (servingHosts, error) {
	var sh servingHosts
	for i, h := range hosts {
		if h == "" {
			return servingHosts{}, fmt.Errorf("serving host [%d] is empty: want a DNS name or an IP address", i)
		}
		if ip := net.ParseIP(h); ip != nil {
			if !slices.ContainsFunc(sh.ips, ip.Equal) {
				sh.ips = append(sh.ips, ip)
			}
			continue
		}
		name := strings.ToLower(h)
		if problems := dnsNameProblems(name); len(problems) > 0 {
			return servingHosts{}, fmt.Errorf("serving host [%d] %q is neither an IP address nor a DNS name: %s", i, h, strings.Join(problems, "; "))
		}
		if !slices.Contains(sh.dnsNames, name) {
			sh.dnsNames = append(sh.dnsNames, name)
		}
	}
	return sh, nil
}

func dnsNameProblems(name string) []string {
	if strings.HasPrefix(name, "*.") {
		return validation.IsWildcardDNS1123Subdomain(name)
	}
	return validation.IsDNS1123Subdomain(name)
}

// missingFrom reports which of the wanted names and addresses dnsNames and ips lack, as
// strings for a log message; an empty result means every one is covered.
func (sh servingHosts) missingFrom(dnsNames []string, ips []net.IP) []string {
	var missing []string
	for _, name := range sh.dnsNames {
		if !slices.ContainsFunc(dnsNames, func(have string) bool { return strings.EqualFold(have, name) }) {
			missing = append(missing, name)
		}
	}
	for _, ip := range sh.ips {
		if !slices.ContainsFunc(ips, ip.Equal) {
			missing = append(missing, ip.String())
		}
	}
	return missing
}

// mergeServingHosts returns a followed by the entries of b that a lacks.
func mergeServingHosts(a, b servingHosts) servingHosts {
	merged := servingHosts{
		dnsNames: append([]string(nil), a.dnsNames...),
		ips:      append([]net.IP(nil), a.ips...),
	}
	for _, name := range b.dnsNames {
		if !slices.Contains(merged.dnsNames, name) {
			merged.dnsNames = append(merged.dnsNames, name)
		}
	}
	for _, ip := range b.ips {
		if !slices.ContainsFunc(merged.ips, ip.Equal) {
			merged.ips = append(merged.ips, ip)
		}
	}
	return merged
}
