// Package docs checks that the documents people rely on stay true to the
// code.
package docs

import (
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

var testName = regexp.MustCompile(`\bTest[A-Z][A-Za-z0-9_]*`)

// Every row of docs/kafka-semantics.md names, in its last column, at least
// one test that pins the broker behaviour, and every test it names exists:
// a behaviour the proof relies on without a test is a row to fix.
func TestKafkaSemanticsRowsNameExistingTests(t *testing.T) {
	root := filepath.Join("..", "..")
	doc, err := os.ReadFile(filepath.Join(root, "docs", "kafka-semantics.md"))
	if err != nil {
		t.Fatal(err)
	}
	defined := map[string]bool{}
	err = filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == ".git" || d.Name() == "bin" || d.Name() == "dist") {
			return filepath.SkipDir
		}
		if !strings.HasSuffix(path, "_test.go") {
			return nil
		}
		src, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		for _, m := range regexp.MustCompile(`(?m)^func (Test[A-Za-z0-9_]+)\(`).FindAllSubmatch(src, -1) {
			defined[string(m[1])] = true
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}

	rows := 0
	for _, line := range strings.Split(string(doc), "\n") {
		if !strings.HasPrefix(line, "| ") || strings.HasPrefix(line, "| behaviour ") || strings.HasPrefix(line, "|---") {
			continue
		}
		cells := strings.Split(strings.Trim(line, "|"), " | ")
		if len(cells) < 4 {
			t.Errorf("row without a test column: %s", line)
			continue
		}
		rows++
		names := testName.FindAllString(cells[len(cells)-1], -1)
		if len(names) == 0 {
			t.Errorf("row names no test: %s", cells[0])
		}
		for _, n := range names {
			if !defined[n] {
				t.Errorf("row %q names %s, which no _test.go file defines", cells[0][:min(60, len(cells[0]))], n)
			}
		}
	}
	if rows < 20 {
		t.Errorf("only %d rows read from docs/kafka-semantics.md", rows)
	}
}
