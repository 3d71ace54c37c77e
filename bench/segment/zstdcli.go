package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// The reference C implementation, through the Debian zstd command: each
// raw block compressed on its own at a level, and dictionary training.

// cliRatio compresses every block as its own file with `zstd -<level>`
// (no frame checksum: the segment index holds a CRC) and returns the raw
// and compressed byte totals.
func cliRatio(zstdBin, dir string, blocks [][]byte, level int) (raw, comp int64, err error) {
	names, err := writeFiles(dir, blocks)
	if err != nil {
		return 0, 0, err
	}
	defer os.RemoveAll(dir)
	args := append([]string{fmt.Sprintf("-%d", level), "-q", "-f", "--no-check", "--rm"}, names...)
	if out, err := exec.Command(zstdBin, args...).CombinedOutput(); err != nil {
		return 0, 0, fmt.Errorf("%s %s: %v: %s", zstdBin, strings.Join(args[:5], " "), err, out)
	}
	for i, name := range names {
		st, err := os.Stat(name + ".zst")
		if err != nil {
			return 0, 0, err
		}
		raw += int64(len(blocks[i]))
		comp += st.Size()
	}
	return raw, comp, nil
}

// trainDict trains a dictionary of at most maxBytes on the samples with
// `zstd --train` (fastcover, the CLI's default trainer).
func trainDict(zstdBin, dir string, samples [][]byte, maxBytes int) ([]byte, error) {
	names, err := writeFiles(dir, samples)
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	out := filepath.Join(dir, "dict")
	args := append([]string{"--train", "-q", "-f", fmt.Sprintf("--maxdict=%d", maxBytes), "-o", out}, names...)
	if msg, err := exec.Command(zstdBin, args...).CombinedOutput(); err != nil {
		return nil, fmt.Errorf("%s --train: %v: %s", zstdBin, err, msg)
	}
	return os.ReadFile(out)
}

func writeFiles(dir string, blobs [][]byte) ([]string, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("cannot create %q: %w", dir, err)
	}
	names := make([]string, len(blobs))
	for i, b := range blobs {
		names[i] = filepath.Join(dir, fmt.Sprintf("%06d", i))
		if err := os.WriteFile(names[i], b, 0o644); err != nil {
			return nil, err
		}
	}
	return names, nil
}
