package config

import (
	"path/filepath"

	"k8s.io/apimachinery/pkg/util/validation/field"
)

// PodsConfig configures the pod runtime (daemon/pods under runc), the YAML section
// pods:. Empty paths take the defaults named on each field, most of them under
// stateDir so that moving stateDir moves the pods' state with it.
type PodsConfig struct {
	// Enabled turns the pod runtime on or off; null (the default) means on exactly
	// when a kubeconfig is set.
	Enabled *bool `json:"enabled"`
	// RuncPath is the runc binary; empty looks runc up in PATH.
	RuncPath string `json:"runcPath"`
	// ShimPath is the plinth-shim binary; empty means plinth-shim next to the plinthd
	// binary, else in PATH.
	ShimPath string `json:"shimPath"`
	// RuntimeDir holds what lives as long as the machine is up: runc's state (runc/),
	// the pods' runtime directories (pods/) and their network namespaces (netns/).
	RuntimeDir string `json:"runtimeDir"`
	// PodsDir holds bundles, emptyDir volumes and termination logs; empty means
	// stateDir/pods.
	PodsDir string `json:"podsDir"`
	// CheckpointsDir holds one file per container so a restarted plinthd adopts it;
	// empty means stateDir/checkpoints.
	CheckpointsDir string `json:"checkpointsDir"`
	// ImagesDir is the image store; empty means stateDir/images.
	ImagesDir string `json:"imagesDir"`
	// SeccompRoot is where Localhost seccomp profiles live; empty means
	// stateDir/seccomp.
	SeccompRoot string `json:"seccompRoot"`
	// SeccompDefault makes RuntimeDefault the profile of containers that name none.
	SeccompDefault bool `json:"seccompDefault"`
	// CgroupParent is the cgroup holding the pod cgroups.
	CgroupParent string `json:"cgroupParent"`
	// ResolvConf is the file pods get as /etc/resolv.conf.
	ResolvConf    string `json:"resolvConf"`
	ClusterDomain string `json:"clusterDomain"`
	// PodPidsLimit caps the processes of each pod; 0 or less means no limit.
	PodPidsLimit int64 `json:"podPidsLimit"`
	// BridgeName and NetworkTable name the pod bridge and its masquerade table.
	BridgeName   string `json:"bridgeName"`
	NetworkTable string `json:"networkTable"`
	// NetworkNamespace is the network namespace holding the pod bridge (a file such as
	// /run/netns/NAME); empty is plinthd's own. Tests use it to keep pods off the host.
	NetworkNamespace string `json:"networkNamespace"`
}

func defaultPodsConfig() PodsConfig {
	return PodsConfig{
		RuntimeDir:    "/run/plinth",
		CgroupParent:  "/plinth",
		ResolvConf:    "/etc/resolv.conf",
		ClusterDomain: "cluster.local",
		BridgeName:    "plinth0",
		NetworkTable:  "plinth-podnet",
	}
}

// PodsEnabled reports whether plinthd runs the pods bound to its node.
func (c Config) PodsEnabled() bool {
	if c.Pods.Enabled != nil {
		return *c.Pods.Enabled
	}
	return c.Kubeconfig != ""
}

// PodsDir, CheckpointsDir, ImagesDir and SeccompRoot resolve the pods section's paths
// that default to directories under stateDir.
func (c Config) PodsDir() string { return orUnder(c.Pods.PodsDir, c.StateDir, "pods") }
func (c Config) CheckpointsDir() string {
	return orUnder(c.Pods.CheckpointsDir, c.StateDir, "checkpoints")
}
func (c Config) ImagesDir() string   { return orUnder(c.Pods.ImagesDir, c.StateDir, "images") }
func (c Config) SeccompRoot() string { return orUnder(c.Pods.SeccompRoot, c.StateDir, "seccomp") }

func orUnder(p, dir, name string) string {
	if p != "" {
		return p
	}
	return filepath.Join(dir, name)
}

func (p PodsConfig) validate(path *field.Path) field.ErrorList {
	var errs field.ErrorList
	for _, f := range []struct {
		name, value string
		required    bool
	}{
		{"runcPath", p.RuncPath, false}, {"shimPath", p.ShimPath, false},
		{"runtimeDir", p.RuntimeDir, true}, {"podsDir", p.PodsDir, false},
		{"checkpointsDir", p.CheckpointsDir, false}, {"imagesDir", p.ImagesDir, false},
		{"seccompRoot", p.SeccompRoot, false},
		{"cgroupParent", p.CgroupParent, true}, {"resolvConf", p.ResolvConf, true},
		{"networkNamespace", p.NetworkNamespace, false},
	} {
		if f.value != "" || f.required {
			errs = append(errs, validateAbsPath(path.Child(f.name), f.value)...)
		}
	}
	if p.BridgeName == "" || len(p.BridgeName) > 15 {
		errs = append(errs, field.Invalid(path.Child("bridgeName"), p.BridgeName, "must be a link name of 1 to 15 characters"))
	}
	if p.NetworkTable == "" {
		errs = append(errs, field.Invalid(path.Child("networkTable"), p.NetworkTable, "must name an nftables table"))
	}
	if p.ClusterDomain == "" {
		errs = append(errs, field.Invalid(path.Child("clusterDomain"), p.ClusterDomain, "must be a DNS domain such as cluster.local"))
	}
	return errs
}
