package controlclient

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"time"
)

// JoinCommand runs `plinthctl join ARGS` and returns the exit code.
func JoinCommand(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("plinthctl join", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var o JoinOptions
	fs.StringVar(&o.Server, "server", "", "URL of the control service, https://HOST:6443 (required)")
	fs.StringVar(&o.Token, "token", "", "bootstrap token ID.SECRET, from plinth-control token create (required)")
	fs.StringVar(&o.CACertHash, "ca-cert-hash", "", "sha256:<hex> of the cluster CA's public key; the server is trusted only if its CA matches (required)")
	fs.StringVar(&o.NodeName, "node-name", "", "name of this node (default: the lower-cased hostname; must match plinthd's hostnameOverride)")
	fs.StringVar(&o.Kubeconfig, "kubeconfig", DefaultKubeconfig, "where to write plinthd's kubeconfig")
	fs.StringVar(&o.CertDir, "cert-dir", DefaultCertDir, "where to keep the node's certificate, key and the cluster CA")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: plinthctl join --server URL --token ID.SECRET --ca-cert-hash sha256:HEX [flags]")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "plinthctl join: unexpected argument %q\n", fs.Arg(0))
		return 2
	}
	var missing []string
	for _, f := range []struct{ name, value string }{{"--server", o.Server}, {"--token", o.Token}, {"--ca-cert-hash", o.CACertHash}} {
		if f.value == "" {
			missing = append(missing, f.name)
		}
	}
	if len(missing) > 0 {
		fmt.Fprintf(stderr, "plinthctl join: missing %v\n", missing)
		fs.Usage()
		return 2
	}
	o.Logger = slog.New(slog.NewTextHandler(stderr, nil))
	res, err := Join(ctx, o)
	if err != nil {
		fmt.Fprintln(stderr, "plinthctl join:", err)
		return 1
	}
	fmt.Fprintf(stdout, "node %s joined: kubeconfig %s, client certificate %s valid until %s\n",
		res.NodeName, res.Kubeconfig, res.CertFile, res.NotAfter.UTC().Format(time.RFC3339))
	fmt.Fprintf(stdout, "set kubeconfig: %s in /etc/plinth/plinthd.yaml (hostnameOverride: %s if the hostname differs), then start plinthd\n",
		res.Kubeconfig, res.NodeName)
	return 0
}
