package auth

import (
	"bytes"
	"context"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"text/tabwriter"
	"time"

	"k8s.io/client-go/rest"

	"github.com/plinth/plinth/control/auth/authapi"
)

// TokenClient manages bootstrap tokens through a running control service, as an
// administrator (plinth-control token ...). The embedded etcd is reachable only from
// inside the control service process, so the subcommands go through its API.
type TokenClient struct {
	host   string
	client *http.Client
	caPEM  []byte
}

// NewTokenClient returns a client for the control service cfg points at (usually from
// the admin kubeconfig).
func NewTokenClient(cfg *rest.Config) (*TokenClient, error) {
	client, err := rest.HTTPClientFor(cfg)
	if err != nil {
		return nil, fmt.Errorf("client for %s: %w", cfg.Host, err)
	}
	caPEM := cfg.CAData
	if len(caPEM) == 0 && cfg.CAFile != "" {
		// Only the join command hint needs the CA; a missing file shows up there.
		caPEM, _ = os.ReadFile(cfg.CAFile)
	}
	return &TokenClient{host: strings.TrimSuffix(cfg.Host, "/"), client: client, caPEM: caPEM}, nil
}

// Create asks for a token valid for ttl (0: forever).
func (c *TokenClient) Create(ctx context.Context, ttl time.Duration, description string) (authapi.BootstrapToken, error) {
	if ttl < 0 {
		return authapi.BootstrapToken{}, fmt.Errorf("--ttl: %v is negative: want a positive duration, or 0 for a token that never expires", ttl)
	}
	if ttl > 0 && ttl < time.Second {
		return authapi.BootstrapToken{}, fmt.Errorf("--ttl: %v is shorter than a second", ttl)
	}
	body, err := json.Marshal(authapi.BootstrapTokenRequest{
		TypeMeta:   authapi.TypeMeta{APIVersion: authapi.APIVersion, Kind: authapi.KindBootstrapTokenRequest},
		TTLSeconds: int64(ttl / time.Second), Description: description,
	})
	if err != nil {
		return authapi.BootstrapToken{}, err
	}
	var out authapi.BootstrapToken
	err = c.do(ctx, http.MethodPost, authapi.BootstrapTokensPath, body, http.StatusCreated, &out)
	return out, err
}

// List returns the stored tokens, without their secrets.
func (c *TokenClient) List(ctx context.Context) ([]authapi.BootstrapToken, error) {
	var out authapi.BootstrapTokenList
	if err := c.do(ctx, http.MethodGet, authapi.BootstrapTokensPath, nil, http.StatusOK, &out); err != nil {
		return nil, err
	}
	return out.Items, nil
}

// Delete removes token id (the part before the dot; a whole token is accepted too).
func (c *TokenClient) Delete(ctx context.Context, id string) error {
	if tok, err := authapi.ParseToken(id); err == nil {
		id = tok.ID
	}
	if err := authapi.ValidateTokenID(id); err != nil {
		return err
	}
	return c.do(ctx, http.MethodDelete, authapi.BootstrapTokensPath+"/"+id, nil, http.StatusOK, nil)
}

// JoinCommand returns the plinthctl join command line for token, pinning the CA the
// client trusts.
func (c *TokenClient) JoinCommand(token string) (string, error) {
	block, _ := pem.Decode(c.caPEM)
	if block == nil {
		return "", fmt.Errorf("the kubeconfig for %s has no CA certificate to pin", c.host)
	}
	ca, err := x509.ParseCertificate(block.Bytes)
	if err != nil {
		return "", fmt.Errorf("the kubeconfig's CA certificate: %w", err)
	}
	return fmt.Sprintf("plinthctl join --server %s --token %s --ca-cert-hash %s", c.host, token, authapi.CACertHash(ca)), nil
}

func (c *TokenClient) do(ctx context.Context, method, path string, body []byte, want int, out any) error {
	req, err := http.NewRequestWithContext(ctx, method, c.host+path, bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Accept", "application/json")
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := c.client.Do(req)
	if err != nil {
		return fmt.Errorf("%s %s: %w", method, c.host+path, err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, 4<<20))
	if err != nil {
		return fmt.Errorf("%s %s: reading the answer: %w", method, c.host+path, err)
	}
	if resp.StatusCode != want {
		return statusError(resp, data)
	}
	if out == nil {
		return nil
	}
	if err := json.Unmarshal(data, out); err != nil {
		return fmt.Errorf("%s %s: decoding the answer: %w", method, c.host+path, err)
	}
	return nil
}

// statusError turns an error answer into an error carrying the server's message.
func statusError(resp *http.Response, data []byte) error {
	var st authapi.Status
	if json.Unmarshal(data, &st) == nil && st.Message != "" {
		return fmt.Errorf("%s %s: %s (%s)", resp.Request.Method, resp.Request.URL.Path, st.Message, resp.Status)
	}
	return fmt.Errorf("%s %s: %s", resp.Request.Method, resp.Request.URL.Path, resp.Status)
}

// WriteTokenTable prints tokens as plinth-control token list does: ID, TTL left,
// expiry, description. It never prints secrets (the list has none).
func WriteTokenTable(w io.Writer, tokens []authapi.BootstrapToken, now time.Time) error {
	tw := tabwriter.NewWriter(w, 0, 8, 3, ' ', 0)
	fmt.Fprintln(tw, "ID\tTTL\tEXPIRES\tDESCRIPTION")
	for _, t := range tokens {
		ttl, expires := "<forever>", "<never>"
		if t.Expires != nil {
			expires = t.Expires.UTC().Format(time.RFC3339)
			if left := t.Expires.Sub(now); left > 0 {
				ttl = left.Round(time.Second).String()
			} else {
				ttl = "<expired>"
			}
		}
		desc := t.Description
		if desc == "" {
			desc = "<none>"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", t.ID, ttl, expires, strings.ReplaceAll(desc, "\n", " "))
	}
	return tw.Flush()
}
