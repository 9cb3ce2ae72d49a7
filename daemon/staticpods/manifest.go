package staticpods

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"

	yamlv2 "go.yaml.in/yaml/v2"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
	kjson "sigs.k8s.io/json"
	"sigs.k8s.io/yaml"

	"github.com/plinth/plinth/internal/poddefaults"
	"github.com/plinth/plinth/internal/podrefs"
)

// Annotations kubelet puts on pods from files and on their mirror pods; the names are
// kubelet's, so tools that recognise static and mirror pods recognise Plinth's.
const (
	// AnnotationConfigSource says where a pod came from: "file" here.
	AnnotationConfigSource = "kubernetes.io/config.source"
	// AnnotationConfigHash is the static pod's hash (equal to its UID).
	AnnotationConfigHash = "kubernetes.io/config.hash"
	// AnnotationConfigSeen is when plinthd first read this version of the pod (RFC 3339).
	AnnotationConfigSeen = "kubernetes.io/config.seen"
	// AnnotationConfigMirror marks a mirror pod; its value is the static pod's hash.
	AnnotationConfigMirror = "kubernetes.io/config.mirror"

	// SourceFile is AnnotationConfigSource's value for static pods from files.
	SourceFile = "file"
)

// Priorities of the two built-in system priority classes, which the API server's
// priority admission would fill in; a static pod never passes through it.
var criticalPriorities = map[string]int32{
	"system-node-critical":    2000001000,
	"system-cluster-critical": 2000000000,
}

// maxManifestBytes bounds what is read of one file: a pod manifest is a few KiB, and a
// stray log or image file in the directory must not be slurped into memory.
const maxManifestBytes = 10 << 20

// ManifestError is a manifest that could not be turned into a pod.
type ManifestError struct {
	File string
	Err  error
}

func (e *ManifestError) Error() string { return e.File + ": " + e.Err.Error() }
func (e *ManifestError) Unwrap() error { return e.Err }

// DecodeManifest decodes data, the content of file, as exactly one core/v1 Pod, YAML or
// JSON, strictly: unknown or duplicate fields, a second document, another kind, or
// references to other API objects (Secrets, ConfigMaps, ServiceAccounts...) are
// errors naming the file and the field. The pod is returned as written, not defaulted.
func DecodeManifest(file string, data []byte) (*corev1.Pod, error) {
	pod, err := decodePod(data)
	if err != nil {
		return nil, &ManifestError{File: file, Err: err}
	}
	if errs := validateManifest(pod); len(errs) > 0 {
		return nil, &ManifestError{File: file, Err: errs.ToAggregate()}
	}
	return pod, nil
}

func decodePod(data []byte) (*corev1.Pod, error) {
	if err := checkOneDocument(data); err != nil {
		return nil, err
	}
	js, err := yaml.YAMLToJSONStrict(data)
	if err != nil {
		return nil, err
	}
	if t := bytes.TrimSpace(js); len(t) == 0 || bytes.Equal(t, []byte("null")) {
		return nil, errors.New("holds no pod (the file is empty)")
	}
	if js[0] != '{' {
		return nil, errors.New("must be a Pod object (a mapping with apiVersion: v1 and kind: Pod)")
	}
	var pod corev1.Pod
	strict, err := kjson.UnmarshalStrict(js, &pod)
	if err != nil {
		return nil, err
	}
	if len(strict) > 0 {
		msgs := make([]string, len(strict))
		for i, e := range strict {
			msgs[i] = e.Error()
		}
		return nil, errors.New(strings.Join(msgs, "; "))
	}
	if pod.APIVersion != "v1" || pod.Kind != "Pod" {
		return nil, fmt.Errorf("apiVersion %q, kind %q: a static pod manifest holds one object of apiVersion v1, kind Pod", pod.APIVersion, pod.Kind)
	}
	return &pod, nil
}

// checkOneDocument refuses content after the first YAML document, which the YAML to
// JSON conversion would silently drop: a second pod in the file would never run.
func checkOneDocument(data []byte) error {
	dec := yamlv2.NewDecoder(bytes.NewReader(data))
	for n := 1; ; n++ {
		var v any
		err := dec.Decode(&v)
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err
		}
		if n > 1 && v != nil {
			return fmt.Errorf("document %d: a manifest file holds one pod; put each pod in its own file", n)
		}
	}
}

// validateManifest checks what a pod must have before plinthd can name and run it.
// The full pod rules are the runtime's and the API server's; these are the ones that
// decide whether the manifest means a pod at all.
func validateManifest(pod *corev1.Pod) field.ErrorList {
	var errs field.ErrorList
	meta := field.NewPath("metadata")
	if pod.Name == "" {
		errs = append(errs, field.Required(meta.Child("name"), "a static pod needs a name"))
	} else {
		for _, msg := range validation.IsDNS1123Subdomain(pod.Name) {
			errs = append(errs, field.Invalid(meta.Child("name"), pod.Name, msg))
		}
	}
	if pod.Namespace != "" {
		for _, msg := range validation.IsDNS1123Label(pod.Namespace) {
			errs = append(errs, field.Invalid(meta.Child("namespace"), pod.Namespace, msg))
		}
	}
	if _, ok := pod.Annotations[AnnotationConfigMirror]; ok {
		errs = append(errs, field.Forbidden(meta.Child("annotations").Key(AnnotationConfigMirror), "marks mirror pods in the API, never a pod to run"))
	}
	if pod.UID != "" {
		errs = append(errs, field.Forbidden(meta.Child("uid"), "plinthd derives a static pod's UID from its manifest; remove it"))
	}
	spec := field.NewPath("spec")
	if len(pod.Spec.Containers) == 0 {
		errs = append(errs, field.Required(spec.Child("containers"), "a pod runs at least one container"))
	}
	names := map[string]bool{}
	checkContainer := func(p *field.Path, name, image string) {
		switch {
		case name == "":
			errs = append(errs, field.Required(p.Child("name"), ""))
		case names[name]:
			errs = append(errs, field.Duplicate(p.Child("name"), name))
		default:
			for _, msg := range validation.IsDNS1123Label(name) {
				errs = append(errs, field.Invalid(p.Child("name"), name, msg))
			}
		}
		names[name] = true
		if strings.TrimSpace(image) == "" {
			errs = append(errs, field.Required(p.Child("image"), "a static pod's containers name their image"))
		}
	}
	for i, c := range pod.Spec.InitContainers {
		checkContainer(spec.Child("initContainers").Index(i), c.Name, c.Image)
	}
	for i, c := range pod.Spec.Containers {
		checkContainer(spec.Child("containers").Index(i), c.Name, c.Image)
	}
	if len(pod.Spec.EphemeralContainers) > 0 {
		errs = append(errs, field.Forbidden(spec.Child("ephemeralContainers"), "are added to running pods through the API, never in a manifest"))
	}
	for _, ref := range podrefs.APIObjects(&pod.Spec) {
		errs = append(errs, field.Forbidden(field.NewPath(ref.Path),
			fmt.Sprintf("a static pod may not refer to other API objects (it names %s %q); use hostPath volumes or literal values", ref.Kind, ref.Name)))
	}
	if p, ok := criticalPriorities[pod.Spec.PriorityClassName]; ok && pod.Spec.Priority != nil && *pod.Spec.Priority != p {
		errs = append(errs, field.Invalid(spec.Child("priority"), *pod.Spec.Priority,
			fmt.Sprintf("priorityClassName %s has priority %d; leave spec.priority out", pod.Spec.PriorityClassName, p)))
	}
	return errs
}

// StaticPodName is the name of the static pod, and of its mirror pod, that a manifest
// named name gets on node: kubelet's convention, so names are unique across nodes.
func StaticPodName(name, node string) string { return name + "-" + strings.ToLower(node) }

// applyDefaults turns a decoded manifest from file into the static pod this node runs,
// as kubelet does for file pods. The UID, also the config hash, is a digest of the
// decoded pod (so editing comments or indentation restarts nothing), the node name (so
// the same manifest on two nodes makes two pods) and the file's path (so two files
// with the same content are two pods). The Source stamps config.seen.
func applyDefaults(pod *corev1.Pod, file, node string) error {
	canonical, err := json.Marshal(pod)
	if err != nil {
		return err
	}
	h := sha256.New()
	h.Write(canonical)
	fmt.Fprintf(h, "\x00node:%s\x00file:%s", node, file)
	hash := hex.EncodeToString(h.Sum(nil)[:16])

	pod.UID = types.UID(hash)
	pod.Name = StaticPodName(pod.Name, node)
	if pod.Namespace == "" {
		pod.Namespace = metav1.NamespaceDefault
	}
	pod.Spec.NodeName = node
	// The spec defaults the API would fill, as kubelet fills them for its manifests:
	// without them a limit alone would request nothing (and the pod be Burstable
	// instead of Guaranteed), and a pod naming no restart policy would have none. They
	// come after the hash, which stays that of the manifest as written.
	poddefaults.Apply(&pod.Spec)
	// A static pod stays on its node whatever taints the node gets: the node runs it
	// from a file, so the taint eviction that NoExecute asks for has nothing to move.
	pod.Spec.Tolerations = append(pod.Spec.Tolerations, corev1.Toleration{Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute})
	if p, ok := criticalPriorities[pod.Spec.PriorityClassName]; ok {
		pod.Spec.Priority = &p
	}
	if pod.Annotations == nil {
		pod.Annotations = map[string]string{}
	}
	pod.Annotations[AnnotationConfigSource] = SourceFile
	pod.Annotations[AnnotationConfigHash] = hash
	if len(validation.IsDNS1123Subdomain(pod.Name)) > 0 {
		return field.Invalid(field.NewPath("metadata", "name"), pod.Name, "with the node name appended the name is not a valid DNS subdomain (at most 253 characters)")
	}
	return nil
}

// IsStaticPod reports whether pod came from a manifest file.
func IsStaticPod(pod *corev1.Pod) bool { return pod.Annotations[AnnotationConfigSource] == SourceFile }

// IsMirrorPod reports whether pod is a mirror pod: the API's view of a static pod,
// which the runtime must not run (it runs the static pod itself). Whether a static or
// mirror pod is critical is daemon/pressure's IsCritical (both always are).
func IsMirrorPod(pod *corev1.Pod) bool {
	_, ok := pod.Annotations[AnnotationConfigMirror]
	return ok
}
