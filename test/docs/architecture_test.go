package docs

import (
	"go/scanner"
	"go/token"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

var (
	codeSpan   = regexp.MustCompile("`([^`\n]+)`")
	pathLike   = regexp.MustCompile(`^[A-Za-z0-9_.-]+(/[A-Za-z0-9_.-]+)+/?$`)
	goFile     = regexp.MustCompile(`^[A-Za-z0-9_]+\.go$`)
	identChain = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*$`)
	jsonTag    = regexp.MustCompile(`json:"([A-Za-z0-9_]+)`)
	hasUpper   = regexp.MustCompile(`[A-Z]`)
)

// architectureElsewhere are names docs/architecture.md uses that are not
// the tree's: examples of what a contributor would add, and Kubernetes'
// own names.
var architectureElsewhere = map[string]bool{
	"internal/proof/myclause.go": true, // example
	"myclause_test.go":           true, // example
	"coordination.k8s.io":        true, // the Lease's API group
	"status.podIP":               true, // a Pod's field
}

// docs/architecture.md is where a newcomer learns the house: every file,
// package and Go name it puts in code spans exists. A path (with a
// slash) is a file or directory from the repository's root; a Go file
// name is a file somewhere in the tree; a Go name (a chain like
// Coalescer.ObserveNow, or one word with a capital: lossReasons,
// checkedAt) is, each part, an identifier of the Go code or a field's
// JSON name. Lowercase words (check, scan, a package name) and commands
// are prose, not checked. Issue 35 checked these names once by hand; this
// keeps them true.
func TestArchitectureNamesExist(t *testing.T) {
	root := filepath.Join("..", "..")
	doc, err := os.ReadFile(filepath.Join(root, "docs", "architecture.md"))
	if err != nil {
		t.Fatal(err)
	}
	idents := map[string]bool{}
	goFiles := map[string]bool{}
	err = walkGo(root, func(path string, src []byte) error {
		goFiles[filepath.Base(path)] = true
		var s scanner.Scanner
		fset := token.NewFileSet()
		s.Init(fset.AddFile(path, -1, len(src)), src, nil, 0)
		for {
			_, tok, lit := s.Scan()
			if tok == token.EOF {
				break
			}
			switch tok {
			case token.IDENT:
				idents[lit] = true
			case token.STRING:
				// Reasons, condition types and clauses are string values:
				// "NotRead", "Connected", "CursorInRange".
				if v := strings.Trim(lit, "\"`"); identChain.MatchString(v) && !strings.Contains(v, ".") {
					idents[v] = true
				}
			}
		}
		for _, m := range jsonTag.FindAllSubmatch(src, -1) {
			idents[string(m[1])] = true
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}

	checked := 0
	for i, line := range strings.Split(string(doc), "\n") {
		for _, m := range codeSpan.FindAllStringSubmatch(line, -1) {
			name := strings.TrimSuffix(strings.TrimSuffix(m[1], "()"), "[]")
			if architectureElsewhere[name] {
				continue
			}
			switch {
			case pathLike.MatchString(name) && !strings.Contains(strings.SplitN(name, "/", 2)[0], "."):
				// retentionguard.io/shard, coordination.k8s.io/...: a
				// label key or an API group, not a path.
				checked++
				if _, err := os.Stat(filepath.Join(root, filepath.FromSlash(strings.TrimSuffix(name, "/")))); err != nil {
					t.Errorf("docs/architecture.md:%d names %s, which is not in the repository", i+1, name)
				}
			case goFile.MatchString(name):
				checked++
				if !goFiles[name] {
					t.Errorf("docs/architecture.md:%d names the Go file %s, which is nowhere in the tree", i+1, name)
				}
			case identChain.MatchString(name) && (strings.Contains(name, ".") || hasUpper.MatchString(name)):
				if strings.Contains(name, ".") && !hasUpper.MatchString(name) && !strings.Contains(name, "_") &&
					strings.Count(name, ".") == 1 && len(strings.SplitN(name, ".", 2)[1]) <= 4 {
					continue // a file name or a host: layout.go, denial.layout
				}
				checked++
				for _, part := range strings.Split(name, ".") {
					if !idents[part] {
						t.Errorf("docs/architecture.md:%d names %s, but %s is no identifier or JSON field of the Go code", i+1, name, part)
						break
					}
				}
			}
		}
	}
	if checked < 100 {
		t.Errorf("only %d names checked: the spans were not found as expected", checked)
	}
}
