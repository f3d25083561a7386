// Command yaml2json reads a stream of YAML documents on stdin (as `helm template`, `helm get
// manifest` and `kubectl kustomize` write them) and writes them to stdout as one JSON array,
// empty documents left out.
//
// skiff's chart tests read Helm's and kustomize's output with it: a full YAML reader (block
// scalars, flow collections, several documents), the one Kubernetes itself uses, where the tests
// have none of their own.
package main

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"

	"k8s.io/apimachinery/pkg/util/yaml"
)

func main() {
	decoder := yaml.NewYAMLOrJSONDecoder(bufio.NewReader(os.Stdin), 4096)
	documents := []any{}
	for {
		var document any
		err := decoder.Decode(&document)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			fmt.Fprintf(os.Stderr, "yaml2json: document %d: %v\n", len(documents)+1, err)
			os.Exit(1)
		}
		if document != nil {
			documents = append(documents, document)
		}
	}
	if err := json.NewEncoder(os.Stdout).Encode(documents); err != nil {
		fmt.Fprintln(os.Stderr, "yaml2json:", err)
		os.Exit(1)
	}
}
