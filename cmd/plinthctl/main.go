// Command plinthctl is the node-local operator tool for plinthd.
//
//	plinthctl check [--config FILE] [-o json]      kernel preflight: PASS, WARN or FAIL per feature
//	plinthctl status [--address 127.0.0.1:10248]   plinthd's health checks
//	plinthctl pressure [--address 127.0.0.1:10248] live eviction signals, feeds and conditions
//	plinthctl join --server URL --token ID.SECRET --ca-cert-hash sha256:HEX
//	                                               join the cluster: write plinthd's kubeconfig
//	plinthctl image import [--root DIR] FILE...    store docker-save or OCI layout archives
//	plinthctl image list [--root DIR]              list the node's images
//	plinthctl seccomp check FILE                   validate a seccomp profile as plinthd will
//	plinthctl seccomp default [--cap CAP ...]      print the RuntimeDefault profile
//	plinthctl proxy dump [--netns PATH]            the live Service rules (nftables) as nft prints them
//	plinthctl version
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/plinth/plinth/controlclient"
	"github.com/plinth/plinth/daemon/health"
	"github.com/plinth/plinth/daemon/images/imagectl"
	"github.com/plinth/plinth/daemon/preflight"
	"github.com/plinth/plinth/daemon/pressurereport"
	"github.com/plinth/plinth/daemon/proxy/nftrules"
	"github.com/plinth/plinth/daemon/seccomp"
	"github.com/plinth/plinth/internal/version"
)

const usage = `usage: plinthctl COMMAND [flags]

commands:
  check     check every kernel and system feature plinthd uses (PASS, WARN or FAIL
            and why; exit 1 on a FAIL; -o json for machines)
  status    show plinthd's health checks (exit 1 when one fails)
  pressure  show the live eviction signals and thresholds, the feeds and the pressure conditions
  join      obtain this node's client certificate with a bootstrap token and write
            plinthd's kubeconfig (see plinthctl join -h)
  image     import image archives into the node's image store, list its images
            (see plinthctl image)
  seccomp   check FILE: validate a seccomp profile as plinthd will before creating a
            container with it; default: print the RuntimeDefault profile
  proxy     proxy dump: print the live Service rules (the plinth nftables tables) as nft does
  version   print the version
`

func main() {
	if len(os.Args) < 2 {
		fmt.Fprint(os.Stderr, usage)
		os.Exit(2)
	}
	switch os.Args[1] {
	case "version":
		fmt.Println("plinthctl", version.String())
	case "join":
		ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
		code := controlclient.JoinCommand(ctx, os.Args[2:], os.Stdout, os.Stderr)
		stop()
		os.Exit(code)
	case "image":
		ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
		code := imagectl.Command(ctx, os.Args[2:], os.Stdout, os.Stderr)
		stop()
		os.Exit(code)
	case "check":
		ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
		code := preflight.Command(ctx, preflight.HostEnv(), os.Args[2:], os.Stdout, os.Stderr)
		stop()
		os.Exit(code)
	case "seccomp":
		os.Exit(seccomp.CheckCommand(seccomp.Libseccomp{}, os.Args[2:], os.Stdout, os.Stderr))
	case "status":
		fs := flag.NewFlagSet("plinthctl status", flag.ExitOnError)
		addr := fs.String("address", "127.0.0.1:10248", "plinthd's healthzBindAddress")
		_ = fs.Parse(os.Args[2:])
		report, healthy, err := health.Fetch(*addr)
		if err != nil {
			fmt.Fprintln(os.Stderr, "plinthctl status:", err)
			os.Exit(1)
		}
		fmt.Print(report)
		if !healthy {
			os.Exit(1)
		}
	case "pressure":
		fs := flag.NewFlagSet("plinthctl pressure", flag.ExitOnError)
		addr := fs.String("address", "127.0.0.1:10248", "plinthd's healthzBindAddress")
		_ = fs.Parse(os.Args[2:])
		r, err := pressurereport.Fetch(context.Background(), *addr)
		if err != nil {
			fmt.Fprintln(os.Stderr, "plinthctl pressure:", err)
			os.Exit(1)
		}
		if err := pressurereport.Print(os.Stdout, r, time.Now()); err != nil {
			fmt.Fprintln(os.Stderr, "plinthctl pressure:", err)
			os.Exit(1)
		}
	case "proxy":
		if len(os.Args) < 3 || os.Args[2] != "dump" {
			fmt.Fprintf(os.Stderr, "usage: plinthctl proxy dump [--netns PATH]\n")
			os.Exit(2)
		}
		ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
		code := nftrules.DumpCommand(ctx, os.Args[3:], os.Stdout, os.Stderr)
		stop()
		os.Exit(code)
	default:
		fmt.Fprintf(os.Stderr, "plinthctl: unknown command %q\n\n%s", os.Args[1], usage)
		os.Exit(2)
	}
}
