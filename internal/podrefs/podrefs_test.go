package podrefs

import (
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
)

func TestAPIObjects(t *testing.T) {
	bundle := "ca"
	spec := &corev1.PodSpec{
		ServiceAccountName: "builder",
		ImagePullSecrets:   []corev1.LocalObjectReference{{Name: "pull"}},
		Volumes: []corev1.Volume{
			{Name: "host", VolumeSource: corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: "/etc"}}},
			{Name: "s", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: "tls"}}},
			{Name: "c", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{LocalObjectReference: corev1.LocalObjectReference{Name: "conf"}}}},
			{Name: "pvc", VolumeSource: corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: "data"}}},
			{Name: "p", VolumeSource: corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{Sources: []corev1.VolumeProjection{
				{ServiceAccountToken: &corev1.ServiceAccountTokenProjection{Path: "token"}},
				{ClusterTrustBundle: &corev1.ClusterTrustBundleProjection{Name: &bundle, Path: "ca.pem"}},
				{DownwardAPI: &corev1.DownwardAPIProjection{}},
			}}}},
			{Name: "csi", VolumeSource: corev1.VolumeSource{CSI: &corev1.CSIVolumeSource{Driver: "d", NodePublishSecretRef: &corev1.LocalObjectReference{Name: "csi-secret"}}}},
		},
		InitContainers: []corev1.Container{{Name: "init", EnvFrom: []corev1.EnvFromSource{{ConfigMapRef: &corev1.ConfigMapEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: "env"}}}}}},
		Containers: []corev1.Container{{Name: "app", Env: []corev1.EnvVar{
			{Name: "PLAIN", Value: "x"},
			{Name: "PW", ValueFrom: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: "db"}, Key: "pw"}}},
			{Name: "NODE", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "spec.nodeName"}}},
		}}},
	}
	var got []string
	for _, r := range APIObjects(spec) {
		got = append(got, r.String())
	}
	want := []string{
		`spec.serviceAccountName (ServiceAccount "builder")`,
		`spec.imagePullSecrets[0] (Secret "pull")`,
		`spec.volumes[1].secret.secretName (Secret "tls")`,
		`spec.volumes[2].configMap.name (ConfigMap "conf")`,
		`spec.volumes[3].persistentVolumeClaim.claimName (PersistentVolumeClaim "data")`,
		`spec.volumes[4].projected.sources[0].serviceAccountToken (ServiceAccount)`,
		`spec.volumes[4].projected.sources[1].clusterTrustBundle (ClusterTrustBundle "ca")`,
		`spec.volumes[5].csi.nodePublishSecretRef (Secret "csi-secret")`,
		`spec.initContainers[0].envFrom[0].configMapRef (ConfigMap "env")`,
		`spec.containers[0].env[1].valueFrom.secretKeyRef (Secret "db")`,
	}
	if !slices.Equal(got, want) {
		t.Errorf("references\n%q\nwant\n%q", got, want)
	}
	plain := &corev1.PodSpec{Containers: []corev1.Container{{Name: "a", Image: "busybox"}},
		Volumes: []corev1.Volume{{Name: "e", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}}}
	if refs := APIObjects(plain); len(refs) != 0 {
		t.Errorf("a pod with an emptyDir and no references: %v", refs)
	}
}
