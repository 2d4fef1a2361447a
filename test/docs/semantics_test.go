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
// a behaviour the proof relies on without a test is a row to fix. Every
// table has a real-broker column (its last), and every row names there a
// test that runs on Apache Kafka (test/realkafka, the harness), unless the
// row is the observer's own rule and says so ("not a broker behaviour"), or
// says why no real broker here can show it ("none: …", e.g. MSK's IAM,
// which is not Apache Kafka).
func TestKafkaSemanticsRowsNameExistingTests(t *testing.T) {
	root := filepath.Join("..", "..")
	doc, err := os.ReadFile(filepath.Join(root, "docs", "kafka-semantics.md"))
	if err != nil {
		t.Fatal(err)
	}
	defined := map[string]bool{}
	onRealBroker := map[string]bool{} // tests under test/realkafka and the harness
	err = walkGo(root, func(path string, src []byte) error {
		if !strings.HasSuffix(path, "_test.go") {
			return nil
		}
		real := strings.Contains(filepath.ToSlash(path), "test/realkafka/") || strings.Contains(filepath.ToSlash(path), "internal/kafka/apachekafka/")
		for _, m := range regexp.MustCompile(`(?m)^func (Test[A-Za-z0-9_]+)\(`).FindAllSubmatch(src, -1) {
			defined[string(m[1])] = true
			if real {
				onRealBroker[string(m[1])] = true
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}

	rows := 0
	header := ""
	for _, line := range strings.Split(string(doc), "\n") {
		if strings.HasPrefix(line, "| behaviour ") {
			header = line
			cells := strings.Split(strings.Trim(line, "| "), " | ")
			if !strings.HasPrefix(cells[len(cells)-1], "real broker") {
				t.Errorf("a table without a real-broker column (its last): %s", line)
			}
			continue
		}
		if !strings.HasPrefix(line, "| ") || strings.HasPrefix(line, "|---") || header == "" {
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
		real := false
		for _, n := range names {
			if !defined[n] {
				t.Errorf("row %q names %s, which no _test.go file defines", cells[0][:min(60, len(cells[0]))], n)
			}
			real = real || onRealBroker[n]
		}
		last := strings.TrimSpace(cells[len(cells)-1])
		if !real && !strings.HasPrefix(last, "not a broker behaviour") && !strings.HasPrefix(last, "none: ") {
			t.Errorf("row %q names no test on a real broker (test/realkafka) in its last column", cells[0][:min(60, len(cells[0]))])
		}
	}
	if rows < 20 {
		t.Errorf("only %d rows read from docs/kafka-semantics.md", rows)
	}
}

// walkGo calls fn with every Go file of the repository under root and its
// source, skipping .git and build outputs.
func walkGo(root string, fn func(path string, src []byte) error) error {
	return filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == ".git" || d.Name() == "bin" || d.Name() == "dist" || d.Name() == "node_modules") {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(path, ".go") {
			return nil
		}
		src, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		return fn(path, src)
	})
}
