// Package deps pins the project's chosen modules while the packages that use them are
// being written, so `go mod tidy` keeps them. It is removed once every module has a
// real importer.
package deps

import (
	_ "github.com/coreos/go-systemd/v22/daemon"
	_ "github.com/prometheus/client_golang/prometheus"
	_ "github.com/prometheus/client_golang/prometheus/collectors"
	_ "github.com/prometheus/client_golang/prometheus/promhttp"
	_ "go.etcd.io/etcd/client/v3"
	_ "go.etcd.io/etcd/server/v3/embed"
	_ "k8s.io/api/coordination/v1"
	_ "k8s.io/api/core/v1"
	_ "k8s.io/apimachinery/pkg/apis/meta/v1"
	_ "k8s.io/apimachinery/pkg/util/strategicpatch"
	_ "k8s.io/client-go/kubernetes"
	_ "k8s.io/client-go/kubernetes/fake"
	_ "k8s.io/client-go/tools/clientcmd"
	_ "k8s.io/utils/clock/testing"
	_ "sigs.k8s.io/yaml"
	_ "github.com/evanphx/json-patch/v5"
)
