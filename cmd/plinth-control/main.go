// Command plinth-control is the Plinth control service: a strict subset of the
// Kubernetes API over etcd, and the controllers that keep nodes honest.
//
//	plinth-control [flags]                                  serve
//	plinth-control issue-node-credentials NAME [--out F]     write a node kubeconfig
//	plinth-control token create|list|delete [flags]         manage bootstrap tokens
//	plinth-control version
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/plinth/plinth/control/auth"
	"github.com/plinth/plinth/control/service"
	"github.com/plinth/plinth/internal/version"
	"github.com/plinth/plinth/internal/watchdog"
)

func main() {
	if len(os.Args) > 1 {
		switch os.Args[1] {
		case "version":
			fmt.Println("plinth-control", version.String())
			return
		case "issue-node-credentials":
			os.Exit(issueNodeCredentials(os.Args[2:]))
		case "token":
			ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
			code := auth.TokenCommand(ctx, os.Args[2:], service.DefaultOptions().DataDir, os.Stdout, os.Stderr)
			stop()
			os.Exit(code)
		}
	}
	opts := service.DefaultOptions()
	fs := flag.NewFlagSet("plinth-control", flag.ExitOnError)
	opts.BindFlags(fs)
	_ = fs.Parse(os.Args[1:])
	if fs.NArg() > 0 {
		fmt.Fprintf(os.Stderr, "plinth-control: unexpected argument %q (subcommands: issue-node-credentials, token, version)\n", fs.Arg(0))
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := service.RunNotifying(ctx, opts, opts.NewLogger(os.Stderr), watchdog.NewSystemdNotifier(), nil); err != nil {
		fmt.Fprintln(os.Stderr, "plinth-control:", err)
		os.Exit(1)
	}
}

func issueNodeCredentials(args []string) int {
	fs := flag.NewFlagSet("plinth-control issue-node-credentials", flag.ExitOnError)
	dataDir := fs.String("data-dir", service.DefaultOptions().DataDir, "the control service's data directory")
	server := fs.String("server", "https://127.0.0.1:6443", "API URL the node will use")
	out := fs.String("out", "", "kubeconfig to write (default ./NAME.kubeconfig)")
	fs.Usage = func() {
		fmt.Fprintln(fs.Output(), "usage: plinth-control issue-node-credentials [flags] NAME")
		fs.PrintDefaults()
	}
	// Accept flags before and after NAME.
	_ = fs.Parse(args)
	if fs.NArg() < 1 {
		fs.Usage()
		return 2
	}
	name := fs.Arg(0)
	_ = fs.Parse(fs.Args()[1:])
	if fs.NArg() > 0 {
		fmt.Fprintf(os.Stderr, "plinth-control issue-node-credentials: unexpected argument %q\n", fs.Arg(0))
		return 2
	}
	if *out == "" {
		*out = name + ".kubeconfig"
	}
	if err := service.IssueNodeCredentials(*dataDir, name, *server, *out); err != nil {
		fmt.Fprintln(os.Stderr, "plinth-control issue-node-credentials:", err)
		return 1
	}
	fmt.Println(*out)
	return 0
}
