package kernel

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// TestWarningsOnlyThroughTheKernel: no production file but warnings.go names
// the Warning event type (corev1.EventTypeWarning or "Warning"), so every
// Warning Event passes through Warning and is counted. Tests and the test/
// tree (which read Events) are not scanned.
func TestWarningsOnlyThroughTheKernel(t *testing.T) {
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(root, "go.mod")); err != nil {
		t.Fatalf("module root not found from reconcilers/kernel: %v", err)
	}
	// The scan itself finds what it looks for: this package's own emission.
	if got := namesWarning(t, filepath.Join(root, "reconcilers", "kernel", "warnings.go")); len(got) == 0 {
		t.Fatal("the scan does not see warnings.go's own corev1.EventTypeWarning")
	}
	scanned := 0
	err = filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		rel = filepath.ToSlash(rel)
		if d.IsDir() {
			switch {
			case rel == ".":
				return nil
			case strings.HasPrefix(d.Name(), "."), d.Name() == "vendor", d.Name() == "testdata", d.Name() == "node_modules",
				rel == "test", rel == "bin":
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(rel, ".go") || strings.HasSuffix(rel, "_test.go") || rel == "reconcilers/kernel/warnings.go" {
			return nil
		}
		scanned++
		for _, at := range namesWarning(t, path) {
			t.Errorf("%s:%s emits a Warning Event past the kernel: use kernel.Warning (or kernel.ObjectEvents), which counts it in gitops_service_warning_events_total", rel, at)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if scanned < 100 {
		t.Fatalf("scanned only %d Go files under %s", scanned, root)
	}
}

// namesWarning are the positions (line:column) in the Go file at path that
// name the Warning event type: the identifier EventTypeWarning or the string
// "Warning".
func namesWarning(t *testing.T, path string) []string {
	t.Helper()
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
	if err != nil {
		t.Fatal(err)
	}
	var at []string
	ast.Inspect(f, func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.Ident:
			if n.Name != "EventTypeWarning" {
				return true
			}
		case *ast.BasicLit:
			if s, err := strconv.Unquote(n.Value); n.Kind != token.STRING || err != nil || s != "Warning" {
				return true
			}
		default:
			return true
		}
		p := fset.Position(n.Pos())
		at = append(at, strconv.Itoa(p.Line)+":"+strconv.Itoa(p.Column))
		return true
	})
	return at
}
