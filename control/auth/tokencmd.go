package auth

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"path/filepath"
	"strings"
	"time"

	"k8s.io/client-go/tools/clientcmd"
)

const tokenUsage = `usage: plinth-control token COMMAND [flags]

Manage bootstrap tokens through the running control service (as its administrator).

commands:
  create [--ttl 24h] [--description TEXT] [--print-join-command]
                 print a new token ID.SECRET (the secret is shown only once)
  list           show tokens: ID, time left, expiry, description (never secrets)
  delete ID      delete a token; nodes can no longer join with it

flags:
`

// TokenCommand runs `plinth-control token ARGS` and returns the exit code. dataDir is
// the control service's default data directory, where the admin kubeconfig lives.
func TokenCommand(ctx context.Context, args []string, dataDir string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("plinth-control token", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprint(stderr, tokenUsage)
		fs.PrintDefaults()
	}
	fs.StringVar(&dataDir, "data-dir", dataDir, "the control service's data directory")
	kubeconfig := fs.String("kubeconfig", "", "administrator kubeconfig (default <data-dir>/admin.kubeconfig)")
	ttl := fs.Duration("ttl", 24*time.Hour, "create: lifetime of the token; 0 never expires")
	description := fs.String("description", "", "create: what the token is for")
	printJoin := fs.Bool("print-join-command", false, "create: print the whole plinthctl join command line instead of the token")
	if len(args) == 0 {
		fs.Usage()
		return 2
	}
	command := args[0]
	if err := parseInterspersed(fs, args[1:]); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	if *kubeconfig == "" {
		*kubeconfig = filepath.Join(dataDir, "admin.kubeconfig")
	}
	fail := func(err error) int {
		fmt.Fprintf(stderr, "plinth-control token %s: %v\n", command, err)
		return 1
	}
	wantArgs := map[string]int{"create": 0, "list": 0, "delete": 1}
	n, known := wantArgs[command]
	if !known {
		fmt.Fprintf(stderr, "plinth-control token: unknown command %q\n\n", command)
		fs.Usage()
		return 2
	}
	if fs.NArg() != n {
		fmt.Fprintf(stderr, "plinth-control token %s: want %d argument(s), got %q\n", command, n, fs.Args())
		return 2
	}
	cfg, err := clientcmd.BuildConfigFromFlags("", *kubeconfig)
	if err != nil {
		return fail(fmt.Errorf("--kubeconfig %s: %w (run this on the control host, or pass the administrator kubeconfig)", *kubeconfig, err))
	}
	client, err := NewTokenClient(cfg)
	if err != nil {
		return fail(err)
	}
	switch command {
	case "create":
		tok, err := client.Create(ctx, *ttl, *description)
		if err != nil {
			return fail(err)
		}
		if *printJoin {
			line, err := client.JoinCommand(tok.Token)
			if err != nil {
				return fail(err)
			}
			fmt.Fprintln(stdout, line)
			return 0
		}
		fmt.Fprintln(stdout, tok.Token)
	case "list":
		tokens, err := client.List(ctx)
		if err != nil {
			return fail(err)
		}
		if err := WriteTokenTable(stdout, tokens, time.Now()); err != nil {
			return fail(err)
		}
	case "delete":
		if err := client.Delete(ctx, fs.Arg(0)); err != nil {
			return fail(err)
		}
		id, _, _ := strings.Cut(fs.Arg(0), ".")
		fmt.Fprintf(stdout, "bootstrap token %q deleted\n", id)
	}
	return 0
}

// parseInterspersed parses flags that come before, between or after the positional
// arguments, as operators type them.
func parseInterspersed(fs *flag.FlagSet, args []string) error {
	var positional []string
	for {
		if err := fs.Parse(args); err != nil {
			return err
		}
		if fs.NArg() == 0 {
			break
		}
		positional = append(positional, fs.Arg(0))
		args = fs.Args()[1:]
	}
	return fs.Parse(append([]string{"--"}, positional...))
}
