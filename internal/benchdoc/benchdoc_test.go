package benchdoc

import (
	"os"
	"path/filepath"
	"testing"
)

func TestReplace(t *testing.T) {
	path := filepath.Join(t.TempDir(), "b.md")
	if err := os.WriteFile(path, []byte("# B\n\nintro\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, body := range []string{"first", "second\n"} {
		if err := Replace(path, "<!-- x:begin -->", "<!-- x:end -->", "## X", body); err != nil {
			t.Fatal(err)
		}
	}
	got, _ := os.ReadFile(path)
	want := "# B\n\nintro\n\n## X\n\n<!-- x:begin -->\nsecond\n<!-- x:end -->\n"
	if string(got) != want {
		t.Errorf("got %q\nwant %q", got, want)
	}
}
