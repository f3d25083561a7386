// Command kubeconfig-oracle loads kubeconfig files as kubectl does (client-go's clientcmd) and
// prints, for each case, the client config it builds or the error it refuses it with: the
// oracle of skiff's differential kubeconfig test (tests/client/kubeconfig_diff.rs).
//
// Each argument is one case: a file, or several joined by the path list separator, loaded as
// $KUBECONFIG lists them. One JSON object a line is printed per case, in order.
package main

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"

	// The auth providers kubectl registers: oidc, and the stubs that refuse gcp and azure.
	_ "k8s.io/client-go/plugin/pkg/client/auth"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
)

type exec struct {
	Command         string            `json:"command"`
	Args            []string          `json:"args"`
	Env             map[string]string `json:"env"`
	APIVersion      string            `json:"apiVersion"`
	InteractiveMode string            `json:"interactiveMode"`
	ClusterInfo     bool              `json:"provideClusterInfo"`
}

type result struct {
	Case          string              `json:"case"`
	Error         string              `json:"error,omitempty"`
	Server        string              `json:"server,omitempty"`
	Insecure      bool                `json:"insecure,omitempty"`
	ServerName    string              `json:"serverName,omitempty"`
	CA            string              `json:"ca,omitempty"`
	Cert          string              `json:"cert,omitempty"`
	Key           bool                `json:"key,omitempty"`
	Token         string              `json:"token,omitempty"`
	TokenFile     string              `json:"tokenFile,omitempty"`
	Exec          *exec               `json:"exec,omitempty"`
	Proxy         string              `json:"proxy,omitempty"`
	Namespace     string              `json:"namespace,omitempty"`
	Impersonate   string              `json:"impersonate,omitempty"`
	ImpersonateID string              `json:"impersonateUID,omitempty"`
	Groups        []string            `json:"impersonateGroups,omitempty"`
	Extra         map[string][]string `json:"impersonateExtra,omitempty"`
}

// digest is the SHA-256 of data, else of the file at path, else empty.
func digest(data []byte, path string) (string, error) {
	if len(data) == 0 && path != "" {
		var err error
		if data, err = os.ReadFile(path); err != nil {
			return "", err
		}
	}
	if len(data) == 0 {
		return "", nil
	}
	sum := sha256.Sum256(data)
	return hex.EncodeToString(sum[:]), nil
}

func load(name string) (r result) {
	r.Case = name
	fail := func(err error) result { return result{Case: name, Error: err.Error()} }
	rules := &clientcmd.ClientConfigLoadingRules{Precedence: filepath.SplitList(name)}
	if len(rules.Precedence) == 1 {
		rules = &clientcmd.ClientConfigLoadingRules{ExplicitPath: name}
	}
	loader := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, &clientcmd.ConfigOverrides{})
	rc, err := loader.ClientConfig()
	if err != nil {
		return fail(err)
	}
	if _, err := rest.HTTPClientFor(rc); err != nil {
		return fail(err)
	}
	raw, err := loader.RawConfig()
	if err != nil {
		return fail(err)
	}
	if context := raw.Contexts[raw.CurrentContext]; context != nil {
		if cluster := raw.Clusters[context.Cluster]; cluster != nil {
			r.Proxy = cluster.ProxyURL
		}
	}
	if r.Namespace, _, err = loader.Namespace(); err != nil {
		return fail(err)
	}
	server, _, err := rest.DefaultServerUrlFor(rc)
	if err != nil {
		return fail(err)
	}
	tls := rc.TLSClientConfig
	r.Server, r.Insecure, r.ServerName = server.String(), tls.Insecure, tls.ServerName
	if r.CA, err = digest(tls.CAData, tls.CAFile); err != nil {
		return fail(err)
	}
	if r.Cert, err = digest(tls.CertData, tls.CertFile); err != nil {
		return fail(err)
	}
	r.Key = len(tls.KeyData) > 0 || tls.KeyFile != ""
	r.Token, r.TokenFile = rc.BearerToken, rc.BearerTokenFile
	if r.TokenFile != "" {
		r.Token = ""
	}
	if e := rc.ExecProvider; e != nil {
		r.Exec = &exec{Command: e.Command, Args: e.Args, Env: map[string]string{}, APIVersion: e.APIVersion,
			InteractiveMode: string(e.InteractiveMode), ClusterInfo: e.ProvideClusterInfo}
		for _, v := range e.Env {
			r.Exec.Env[v.Name] = v.Value
		}
	}
	im := rc.Impersonate
	r.Impersonate, r.ImpersonateID, r.Groups, r.Extra = im.UserName, im.UID, im.Groups, im.Extra
	sort.Strings(r.Groups)
	return r
}

func main() {
	out := json.NewEncoder(os.Stdout)
	for _, name := range os.Args[1:] {
		if err := out.Encode(load(name)); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
	}
}
