package golden

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
)

func TestReadHex(t *testing.T) {
	dir := t.TempDir()
	good := filepath.Join(dir, "good")
	os.WriteFile(good, []byte("# header\n0a0B  ff # a field\n\n  01\n"), 0o644)
	b, err := ReadHex(good)
	if err != nil || !bytes.Equal(b, []byte{0x0a, 0x0b, 0xff, 0x01}) {
		t.Fatalf("ReadHex = %x, %v", b, err)
	}
	bad := filepath.Join(dir, "bad")
	os.WriteFile(bad, []byte("0g\n"), 0o644)
	if _, err := ReadHex(bad); err == nil {
		t.Fatal("ReadHex accepted a non-hex digit")
	}
	if _, err := ReadHex(filepath.Join(dir, "missing")); err == nil {
		t.Fatal("ReadHex accepted a missing file")
	}
}
