package nodeclient

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// PullSecrets reads the Secrets a pod names in imagePullSecrets, in its namespace and
// in order. Like kubelet, it returns those it could read and an error for each it
// could not (missing, or refused because the pod is no longer bound to this node), so
// a pull can still try with the rest and the caller can report what was left out.
// Empty names are skipped.
func PullSecrets(ctx context.Context, c Interface, pod *corev1.Pod) ([]corev1.Secret, []error) {
	var secrets []corev1.Secret
	var errs []error
	for i, ref := range pod.Spec.ImagePullSecrets {
		if ref.Name == "" {
			continue
		}
		s, err := c.Secrets(pod.Namespace).Get(ctx, ref.Name, metav1.GetOptions{})
		if err != nil {
			errs = append(errs, fmt.Errorf("pod %s/%s: spec.imagePullSecrets[%d] %q: %w", pod.Namespace, pod.Name, i, ref.Name, err))
			continue
		}
		secrets = append(secrets, *s)
	}
	return secrets, errs
}
