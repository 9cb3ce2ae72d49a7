// Package podrefs lists the API objects a pod spec refers to by name: Secrets,
// ConfigMaps, ServiceAccounts, PersistentVolumeClaims, ClusterTrustBundles and
// resource claims. A static pod may refer to none of them (the node runs it without
// the API server, and its mirror pod must not become a way for a node to read objects
// it could not read otherwise), so both plinthd's manifest decoder and the control
// service's NodeRestriction ask this one list.
//
// It owns nothing and touches nothing: pure functions over a PodSpec.
package podrefs

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// Reference is one reference from a pod spec to another API object.
type Reference struct {
	Path string // the field, as a JSON path: spec.volumes[0].secret.secretName
	Kind string // Secret, ConfigMap, ServiceAccount, PersistentVolumeClaim, ClusterTrustBundle, ResourceClaim
	Name string // empty where the field names no object (an ephemeral volume's claim)
}

func (r Reference) String() string {
	if r.Name == "" {
		return fmt.Sprintf("%s (%s)", r.Path, r.Kind)
	}
	return fmt.Sprintf("%s (%s %q)", r.Path, r.Kind, r.Name)
}

// APIObjects returns every reference spec makes to another API object, in field order.
func APIObjects(spec *corev1.PodSpec) []Reference {
	var out []Reference
	add := func(p *field.Path, kind, name string) {
		out = append(out, Reference{Path: p.String(), Kind: kind, Name: name})
	}
	path := field.NewPath("spec")
	if spec.ServiceAccountName != "" {
		add(path.Child("serviceAccountName"), "ServiceAccount", spec.ServiceAccountName)
	}
	for i, s := range spec.ImagePullSecrets {
		add(path.Child("imagePullSecrets").Index(i), "Secret", s.Name)
	}
	for i := range spec.Volumes {
		volumeRefs(&spec.Volumes[i], path.Child("volumes").Index(i), add)
	}
	for i, c := range spec.ResourceClaims {
		add(path.Child("resourceClaims").Index(i), "ResourceClaim", c.Name)
	}
	for i := range spec.InitContainers {
		envRefs(spec.InitContainers[i].Env, spec.InitContainers[i].EnvFrom, path.Child("initContainers").Index(i), add)
	}
	for i := range spec.Containers {
		envRefs(spec.Containers[i].Env, spec.Containers[i].EnvFrom, path.Child("containers").Index(i), add)
	}
	for i := range spec.EphemeralContainers {
		c := &spec.EphemeralContainers[i].EphemeralContainerCommon
		envRefs(c.Env, c.EnvFrom, path.Child("ephemeralContainers").Index(i), add)
	}
	return out
}

func volumeRefs(v *corev1.Volume, p *field.Path, add func(*field.Path, string, string)) {
	secretRef := func(child string, ref *corev1.LocalObjectReference) {
		if ref != nil {
			add(p.Child(child, "secretRef"), "Secret", ref.Name)
		}
	}
	switch {
	case v.Secret != nil:
		add(p.Child("secret", "secretName"), "Secret", v.Secret.SecretName)
	case v.ConfigMap != nil:
		add(p.Child("configMap", "name"), "ConfigMap", v.ConfigMap.Name)
	case v.PersistentVolumeClaim != nil:
		add(p.Child("persistentVolumeClaim", "claimName"), "PersistentVolumeClaim", v.PersistentVolumeClaim.ClaimName)
	case v.Ephemeral != nil:
		add(p.Child("ephemeral"), "PersistentVolumeClaim", "")
	case v.Projected != nil:
		for j, s := range v.Projected.Sources {
			sp := p.Child("projected", "sources").Index(j)
			if s.Secret != nil {
				add(sp.Child("secret", "name"), "Secret", s.Secret.Name)
			}
			if s.ConfigMap != nil {
				add(sp.Child("configMap", "name"), "ConfigMap", s.ConfigMap.Name)
			}
			if s.ServiceAccountToken != nil {
				add(sp.Child("serviceAccountToken"), "ServiceAccount", "")
			}
			if s.ClusterTrustBundle != nil {
				name := ""
				if s.ClusterTrustBundle.Name != nil {
					name = *s.ClusterTrustBundle.Name
				}
				add(sp.Child("clusterTrustBundle"), "ClusterTrustBundle", name)
			}
		}
	case v.CSI != nil:
		if v.CSI.NodePublishSecretRef != nil {
			add(p.Child("csi", "nodePublishSecretRef"), "Secret", v.CSI.NodePublishSecretRef.Name)
		}
	case v.CephFS != nil:
		secretRef("cephfs", v.CephFS.SecretRef)
	case v.RBD != nil:
		secretRef("rbd", v.RBD.SecretRef)
	case v.ISCSI != nil:
		secretRef("iscsi", v.ISCSI.SecretRef)
	case v.FlexVolume != nil:
		secretRef("flexVolume", v.FlexVolume.SecretRef)
	case v.ScaleIO != nil:
		secretRef("scaleIO", v.ScaleIO.SecretRef)
	case v.StorageOS != nil:
		secretRef("storageos", v.StorageOS.SecretRef)
	case v.AzureFile != nil:
		add(p.Child("azureFile", "secretName"), "Secret", v.AzureFile.SecretName)
	}
}

func envRefs(env []corev1.EnvVar, envFrom []corev1.EnvFromSource, p *field.Path, add func(*field.Path, string, string)) {
	for i, e := range env {
		if e.ValueFrom == nil {
			continue
		}
		ep := p.Child("env").Index(i).Child("valueFrom")
		if r := e.ValueFrom.SecretKeyRef; r != nil {
			add(ep.Child("secretKeyRef"), "Secret", r.Name)
		}
		if r := e.ValueFrom.ConfigMapKeyRef; r != nil {
			add(ep.Child("configMapKeyRef"), "ConfigMap", r.Name)
		}
	}
	for i, e := range envFrom {
		ep := p.Child("envFrom").Index(i)
		if e.SecretRef != nil {
			add(ep.Child("secretRef"), "Secret", e.SecretRef.Name)
		}
		if e.ConfigMapRef != nil {
			add(ep.Child("configMapRef"), "ConfigMap", e.ConfigMapRef.Name)
		}
	}
}
