package main

import (
	"bytes"
	"fmt"
	"io"
	"regexp"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"
)

// Template text cannot pass through the YAML encoder (it would quote `{{` or refuse a line
// that is not YAML), so each piece stands in the tree as a unique plain token and is put in
// after encoding, at the token's place and indentation.
type fragments struct {
	byToken map[string]fragment
}

type fragmentKind int

const (
	// The token becomes text where it stands.
	valueFragment fragmentKind = iota
	// "key: TOKEN" becomes "key:" and, on the next line, `{{- toYaml text | nindent N }}`.
	blockFragment
	// The line holding the token becomes text's lines, each indented as that line; in text,
	// @0 stands for that indentation and @2 for two more (for nindent).
	linesFragment
)

type fragment struct {
	kind fragmentKind
	text string
}

var tokenPattern = regexp.MustCompile(`CHARTGEN[0-9]+Z`)

func newFragments() *fragments {
	return &fragments{byToken: map[string]fragment{}}
}

func (f *fragments) add(kind fragmentKind, text string) string {
	token := fmt.Sprintf("CHARTGEN%dZ", len(f.byToken))
	f.byToken[token] = fragment{kind: kind, text: text}
	return token
}

// value returns a scalar node rendering `{{ expr }}`.
func (f *fragments) value(expr string) *yaml.Node {
	return f.text("{{ " + expr + " }}")
}

// text returns a scalar node rendering text, which may mix template actions and plain text.
func (f *fragments) text(text string) *yaml.Node {
	return scalar(f.add(valueFragment, text))
}

// block returns a node rendering expr's value as YAML below its key.
func (f *fragments) block(expr string) *yaml.Node {
	return scalar(f.add(blockFragment, expr))
}

// lines returns a node whose whole line becomes text (see linesFragment).
func (f *fragments) lines(text string) *yaml.Node {
	return scalar(f.add(linesFragment, text))
}

// addLines puts a lines fragment into mapping m as a key of its own (its line is replaced
// whole, so the key and its empty value never reach the output).
func (f *fragments) addLines(m *yaml.Node, text string) {
	m.Content = append(m.Content, f.lines(text), scalar(""))
}

// encode writes doc as YAML (indent 2) and puts the fragments in.
func (f *fragments) encode(doc *yaml.Node) (string, error) {
	var out bytes.Buffer
	encoder := yaml.NewEncoder(&out)
	encoder.SetIndent(2)
	if err := encoder.Encode(doc); err != nil {
		return "", err
	}
	if err := encoder.Close(); err != nil {
		return "", err
	}
	var result []string
	for _, line := range strings.Split(strings.TrimSuffix(out.String(), "\n"), "\n") {
		expanded, err := f.expand(line)
		if err != nil {
			return "", err
		}
		result = append(result, expanded...)
	}
	return strings.Join(result, "\n") + "\n", nil
}

func (f *fragments) expand(line string) ([]string, error) {
	tokens := tokenPattern.FindAllString(line, -1)
	indent := len(line) - len(strings.TrimLeft(line, " "))
	pad := strings.Repeat(" ", indent)
	for _, token := range tokens {
		frag, ok := f.byToken[token]
		if !ok {
			return nil, fmt.Errorf("unknown token %s in %q", token, line)
		}
		switch frag.kind {
		case valueFragment:
			line = strings.Replace(line, token, frag.text, 1)
		case blockFragment:
			key, found := strings.CutSuffix(line, " "+token)
			if !found {
				return nil, fmt.Errorf("a block token not at the end of %q", line)
			}
			nested := indent + 2
			return []string{key, fmt.Sprintf("%s{{- toYaml %s | nindent %d }}", strings.Repeat(" ", nested), frag.text, nested)}, nil
		case linesFragment:
			text := strings.NewReplacer("@0", strconv.Itoa(indent), "@2", strconv.Itoa(indent+2)).Replace(frag.text)
			var lines []string
			for _, l := range strings.Split(text, "\n") {
				lines = append(lines, pad+l)
			}
			return lines, nil
		}
	}
	return []string{line}, nil
}

func scalar(value string) *yaml.Node {
	return &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: value}
}

func bytesReader(content []byte) io.Reader {
	return bytes.NewReader(content)
}

// includeIfAny is lines text that includes the helper template name, at the line's
// indentation, and leaves nothing (not even an empty line) when it renders nothing.
func includeIfAny(name string) string {
	return fmt.Sprintf(`{{- with include %q $ | trim }}{{ . | nindent @0 }}{{- end }}`, name)
}
