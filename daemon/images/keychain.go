package images

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"path"
	"sort"
	"strings"

	"github.com/google/go-containerregistry/pkg/authn"
	corev1 "k8s.io/api/core/v1"
)

// registryCredential is one entry of a docker config: the registry key it was filed
// under (scheme and trailing slash stripped, Docker Hub's aliases folded to
// index.docker.io) and what to authenticate with.
type registryCredential struct {
	host string // may hold glob labels, e.g. *.example.com
	path string // repository prefix, "" for the whole registry
	auth authn.AuthConfig
}

// dockerConfigEntry is one value of docker's "auths" map (and of .dockercfg's top level).
type dockerConfigEntry struct {
	Auth          string `json:"auth,omitempty"`
	Username      string `json:"username,omitempty"`
	Password      string `json:"password,omitempty"`
	IdentityToken string `json:"identitytoken,omitempty"`
	RegistryToken string `json:"registrytoken,omitempty"`
}

// ParseDockerConfigJSON parses the .dockerconfigjson key of a
// kubernetes.io/dockerconfigjson Secret: {"auths": {"REGISTRY": {...}}}.
func ParseDockerConfigJSON(data []byte) ([]registryCredential, error) {
	var cfg struct {
		Auths map[string]dockerConfigEntry `json:"auths"`
	}
	if err := json.Unmarshal(data, &cfg); err != nil {
		return nil, fmt.Errorf("%s: %w", corev1.DockerConfigJsonKey, err)
	}
	return credentialsFromEntries(corev1.DockerConfigJsonKey, cfg.Auths)
}

// ParseDockerCfg parses the .dockercfg key of a kubernetes.io/dockercfg Secret: the
// legacy format, {"REGISTRY": {...}} without the "auths" wrapper.
func ParseDockerCfg(data []byte) ([]registryCredential, error) {
	var entries map[string]dockerConfigEntry
	if err := json.Unmarshal(data, &entries); err != nil {
		return nil, fmt.Errorf("%s: %w", corev1.DockerConfigKey, err)
	}
	return credentialsFromEntries(corev1.DockerConfigKey, entries)
}

func credentialsFromEntries(key string, entries map[string]dockerConfigEntry) ([]registryCredential, error) {
	creds := make([]registryCredential, 0, len(entries))
	for registry, e := range entries {
		cfg := authn.AuthConfig{
			Username: e.Username, Password: e.Password,
			IdentityToken: e.IdentityToken, RegistryToken: e.RegistryToken,
		}
		if e.Auth != "" {
			raw, err := base64.StdEncoding.DecodeString(e.Auth)
			if err != nil {
				return nil, fmt.Errorf("%s: field %q: auth is not base64: %w", key, "auths."+registry+".auth", err)
			}
			user, pass, ok := strings.Cut(string(raw), ":")
			if !ok {
				return nil, fmt.Errorf("%s: field %q: auth does not decode to user:password", key, "auths."+registry+".auth")
			}
			cfg.Username, cfg.Password = user, pass
		}
		host, repoPath := splitRegistryKey(registry)
		if host == "" {
			return nil, fmt.Errorf("%s: registry key %q names no registry", key, registry)
		}
		creds = append(creds, registryCredential{host: host, path: repoPath, auth: cfg})
	}
	// Most specific first, as kubelet tries them: a longer host, then a longer path.
	sort.SliceStable(creds, func(i, j int) bool {
		if len(creds[i].host) != len(creds[j].host) {
			return len(creds[i].host) > len(creds[j].host)
		}
		if len(creds[i].path) != len(creds[j].path) {
			return len(creds[i].path) > len(creds[j].path)
		}
		return creds[i].host+"/"+creds[i].path < creds[j].host+"/"+creds[j].path
	})
	return creds, nil
}

// splitRegistryKey turns a docker config key ("https://index.docker.io/v1/",
// "registry:5000", "quay.io/org", "*.example.com") into a host and repository prefix.
func splitRegistryKey(key string) (host, repoPath string) {
	key = strings.TrimPrefix(strings.TrimPrefix(key, "https://"), "http://")
	key = strings.TrimRight(key, "/")
	host, repoPath, _ = strings.Cut(key, "/")
	host = canonicalRegistryHost(strings.ToLower(host))
	if host == "index.docker.io" && (repoPath == "v1" || repoPath == "v2") {
		repoPath = ""
	}
	return host, repoPath
}

func canonicalRegistryHost(h string) string {
	switch h {
	case "docker.io", "registry-1.docker.io", "index.docker.io":
		return "index.docker.io"
	}
	return h
}

// matches reports whether the credential applies to repository repo ("repo/name") on
// registry host (with port): hosts match label by label with globs, and the key's path,
// if any, must prefix the repository.
func (c registryCredential) matches(host, repo string) bool {
	if !hostMatches(c.host, canonicalRegistryHost(strings.ToLower(host))) {
		return false
	}
	return c.path == "" || repo == c.path || strings.HasPrefix(repo, c.path+"/")
}

func hostMatches(pattern, host string) bool {
	if pattern == host {
		return true
	}
	pHost, pPort, _ := strings.Cut(pattern, ":")
	hHost, hPort, _ := strings.Cut(host, ":")
	if pPort != hPort {
		return false
	}
	pl, hl := strings.Split(pHost, "."), strings.Split(hHost, ".")
	if len(pl) != len(hl) {
		return false
	}
	for i := range pl {
		if ok, err := path.Match(pl[i], hl[i]); err != nil || !ok {
			return false
		}
	}
	return true
}

// secretKeychain resolves a registry to the first matching credential of the pod's
// pull secrets, in the order the pod lists them; no match means anonymous.
type secretKeychain struct {
	creds []registryCredential
}

// Resolve implements authn.Keychain.
func (k secretKeychain) Resolve(r authn.Resource) (authn.Authenticator, error) {
	host := r.RegistryStr()
	repo := strings.TrimPrefix(r.String(), host+"/")
	if repo == r.String() { // a bare registry resource
		repo = ""
	}
	for _, c := range k.creds {
		if c.matches(host, repo) {
			return authn.FromConfig(c.auth), nil
		}
	}
	return authn.Anonymous, nil
}

// KeychainFromSecrets builds the keychain for a pod's imagePullSecrets:
// kubernetes.io/dockerconfigjson and kubernetes.io/dockercfg Secrets are read, other
// types are ignored as kubelet ignores them. A malformed Secret is an error naming it.
func KeychainFromSecrets(secrets []corev1.Secret) (authn.Keychain, error) {
	var all []registryCredential
	for _, s := range secrets {
		var creds []registryCredential
		var err error
		switch s.Type {
		case corev1.SecretTypeDockerConfigJson:
			creds, err = ParseDockerConfigJSON(s.Data[corev1.DockerConfigJsonKey])
		case corev1.SecretTypeDockercfg:
			creds, err = ParseDockerCfg(s.Data[corev1.DockerConfigKey])
		default:
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("image pull secret %s/%s: %w", s.Namespace, s.Name, err)
		}
		all = append(all, creds...)
	}
	return secretKeychain{creds: all}, nil
}
