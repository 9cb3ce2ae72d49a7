// Package preflight judges whether this host can run plinthd as configured: every
// kernel and system feature Plinth uses (kernel/features' probes, the linked libseccomp,
// the configured runc binary, swap, sysctls) becomes a Check with PASS, WARN or FAIL and
// a reason naming what is missing and what needs it. A FAIL is a feature the
// configuration needs and the host lacks, so plinthd cannot do its work: `plinthctl
// check` exits non-zero on one, and plinthd refuses to start, naming them, before it
// changes anything. A WARN is a feature whose absence degrades plinthd (a pressure feed
// is off, swap cannot be limited) or that the configuration does not use.
//
// It owns nothing and changes nothing on the host: it reads through kernel/features
// (whose probes of the running kernel create a BPF map and programs and an nftables
// table in a throwaway network namespace, all freed at once) and runs `runc --version`.
package preflight
