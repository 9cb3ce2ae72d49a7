package registry

import (
	"fmt"
	"net/http"
	"net/url"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"github.com/plinth/plinth/control/apiserver"
)

// NodeLogProxy carries a container log request to the node that runs the pod and
// streams the answer back (control/nodeproxy).
type NodeLogProxy interface {
	ProxyContainerLogs(w http.ResponseWriter, req *http.Request, nodeName, namespace, pod, container string, query url.Values)
}

// podLogParams are the PodLogOptions forwarded to the node.
var podLogParams = []string{"follow", "previous", "timestamps", "tailLines", "sinceSeconds", "sinceTime", "limitBytes"}

// logReader is pods/log: it picks the container, checks the pod is on a node and hands
// the request to the node's API.
func logReader(proxy NodeLogProxy) apiserver.Reader {
	return apiserver.Reader{
		Kind: "Pod",
		Serve: func(w http.ResponseWriter, req *http.Request, pods apiserver.Objects, namespace, name string) {
			q := req.URL.Query()
			if v := q.Get("insecureSkipTLSVerifyBackend"); v == "true" || v == "1" {
				apiserver.WriteError(w, apierrors.NewBadRequest("insecureSkipTLSVerifyBackend: true is refused: the node's serving certificate is always verified"))
				return
			}
			obj, err := pods.Get(req.Context(), namespace, name)
			if err != nil {
				apiserver.WriteError(w, err)
				return
			}
			p := obj.(*corev1.Pod)
			container, err := logContainer(p, q.Get("container"))
			if err != nil {
				apiserver.WriteError(w, err)
				return
			}
			if p.Spec.NodeName == "" {
				apiserver.WriteError(w, apierrors.NewBadRequest(fmt.Sprintf("pod %s does not have a host assigned", name)))
				return
			}
			fwd := url.Values{}
			for _, k := range podLogParams {
				if v, ok := q[k]; ok {
					fwd[k] = v
				}
			}
			proxy.ProxyContainerLogs(w, req, p.Spec.NodeName, namespace, name, container, fwd)
		},
	}
}

// logContainer names the container whose log is wanted: the one asked for, else the
// default-container annotation, else the only container.
func logContainer(p *corev1.Pod, asked string) (string, error) {
	var names []string
	for _, list := range [][]corev1.Container{p.Spec.InitContainers, p.Spec.Containers} {
		for _, c := range list {
			names = append(names, c.Name)
		}
	}
	for _, c := range p.Spec.EphemeralContainers {
		names = append(names, c.Name)
	}
	if asked == "" {
		asked = p.Annotations["kubectl.kubernetes.io/default-container"]
	}
	switch {
	case asked == "" && len(p.Spec.Containers) == 1:
		return p.Spec.Containers[0].Name, nil
	case asked == "":
		return "", apierrors.NewBadRequest(fmt.Sprintf("a container name must be specified for pod %s, choose one of: [%s]", p.Name, strings.Join(names, " ")))
	}
	for _, n := range names {
		if n == asked {
			return asked, nil
		}
	}
	return "", apierrors.NewBadRequest(fmt.Sprintf("container %s is not valid for pod %s", asked, p.Name))
}

// withPodLogs adds pods/log to the pods resource when a proxy is configured.
func withPodLogs(pods *apiserver.Resource, proxy NodeLogProxy) *apiserver.Resource {
	if proxy != nil {
		pods.Readers = map[string]apiserver.Reader{"log": logReader(proxy)}
	}
	return pods
}
