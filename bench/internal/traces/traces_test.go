package traces

import (
	"bytes"
	"compress/gzip"
	"encoding/binary"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/klauspost/compress/zstd"
	"github.com/ulikunitz/xz"
)

func TestRead(t *testing.T) {
	be64 := func(ks ...uint64) string {
		var b []byte
		for _, k := range ks {
			b = binary.BigEndian.AppendUint64(b, k)
		}
		return string(b)
	}
	be32 := func(ks ...uint32) string {
		var b []byte
		for _, k := range ks {
			b = binary.BigEndian.AppendUint32(b, k)
		}
		return string(b)
	}
	tests := []struct {
		name   string
		format Format
		in     string
		max    int
		want   []uint64
	}{
		{"arc blocks", ARC, "5 3 0 0\n1 1 0 0\n", 0, []uint64{5, 6, 7, 1}},
		{"arc max inside a request", ARC, "5 3 0 0\n1 1 0 0\n", 2, []uint64{5, 6}},
		{"arc blank lines", ARC, "\n9 2 0 0\n\n", 0, []uint64{9, 10}},
		{"lirs markers skipped", LIRS, "3\n*\n4\n3\n", 0, []uint64{3, 4, 3}},
		{"lirs max", LIRS, "3\n4\n5\n", 2, []uint64{3, 4}},
		{"int64be", Int64BE, be64(1, 1<<40, 1<<63), 0, []uint64{1, 1 << 40, 1 << 63}},
		{"int64be max", Int64BE, be64(1, 2, 3), 1, []uint64{1}},
		{"int32be", Int32BE, be32(7, 0xffffffff), 0, []uint64{7, 0xffffffff}},
		{"empty", Int32BE, "", 0, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := Read(strings.NewReader(tc.in), tc.format, tc.max)
			if err != nil {
				t.Fatalf("Read: %v", err)
			}
			if !slices.Equal(got, tc.want) {
				t.Errorf("got %v, want %v", got, tc.want)
			}
		})
	}
}

func TestReadErrors(t *testing.T) {
	tests := []struct {
		name   string
		format Format
		in     string
		want   string
	}{
		{"truncated int64", Int64BE, "\x00\x00\x00\x00\x00\x00\x00\x01\x00\x02", "byte 8"},
		{"truncated int32", Int32BE, "\x00\x00\x00", "byte 0"},
		{"arc without count", ARC, "1 1 0 0\n17\n", "line 2"},
		{"arc not a number", ARC, "x 1 0 0\n", "line 1"},
		{"lirs not a number", LIRS, "1\n2\nab\n", "line 3"},
		{"no format", formatInvalid, "1\n", "invalid"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Read(strings.NewReader(tc.in), tc.format, 0)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("err = %v, want one mentioning %q", err, tc.want)
			}
		})
	}
}

// TestLoadDecompresses writes one small LIRS trace under each compression
// and loads it back through Load.
func TestLoadDecompresses(t *testing.T) {
	const text = "10\n*\n11\n10\n12\n"
	want := []uint64{10, 11, 10, 12}
	compress := map[string]func(*bytes.Buffer) error{
		"plain.trace": func(b *bytes.Buffer) error { b.WriteString(text); return nil },
		"t.trace.gz": func(b *bytes.Buffer) error {
			w := gzip.NewWriter(b)
			w.Write([]byte(text))
			return w.Close()
		},
		"t.trace.xz": func(b *bytes.Buffer) error {
			w, err := xz.NewWriter(b)
			if err != nil {
				return err
			}
			w.Write([]byte(text))
			return w.Close()
		},
		"t.trace.zst": func(b *bytes.Buffer) error {
			w, err := zstd.NewWriter(b)
			if err != nil {
				return err
			}
			w.Write([]byte(text))
			return w.Close()
		},
	}
	dir := t.TempDir()
	for name, enc := range compress {
		t.Run(name, func(t *testing.T) {
			var b bytes.Buffer
			if err := enc(&b); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(dir, name), b.Bytes(), 0o644); err != nil {
				t.Fatal(err)
			}
			got, err := Load(dir, Trace{Name: "t", File: name, Format: LIRS}, 0)
			if err != nil {
				t.Fatalf("Load: %v", err)
			}
			if !slices.Equal(got, want) {
				t.Errorf("got %v, want %v", got, want)
			}
		})
	}
	t.Run("corrupt", func(t *testing.T) {
		name := "bad.trace.gz"
		if err := os.WriteFile(filepath.Join(dir, name), []byte("not gzip"), 0o644); err != nil {
			t.Fatal(err)
		}
		if _, err := Load(dir, Trace{File: name, Format: LIRS}, 0); err == nil || !strings.Contains(err.Error(), name) {
			t.Errorf("err = %v, want one naming %s", err, name)
		}
	})
}

func TestDir(t *testing.T) {
	t.Run("env override", func(t *testing.T) {
		d := t.TempDir()
		t.Setenv(EnvDir, d)
		got, err := Dir("/nonexistent")
		if err != nil || got != d {
			t.Errorf("Dir = %q, %v; want %q, nil", got, err, d)
		}
	})
	t.Run("default relative to the bench dir", func(t *testing.T) {
		t.Setenv(EnvDir, "")
		root := t.TempDir()
		bench := filepath.Join(root, "repo", "bench")
		shared := filepath.Join(root, "shared", "traces")
		for _, d := range []string{bench, shared} {
			if err := os.MkdirAll(d, 0o755); err != nil {
				t.Fatal(err)
			}
		}
		got, err := Dir(bench)
		if err != nil || got != shared {
			t.Errorf("Dir = %q, %v; want %q, nil", got, err, shared)
		}
	})
	t.Run("missing", func(t *testing.T) {
		t.Setenv(EnvDir, filepath.Join(t.TempDir(), "none"))
		_, err := Dir(".")
		if !errors.Is(err, ErrNoTraces) || !strings.Contains(err.Error(), EnvDir) {
			t.Errorf("err = %v, want ErrNoTraces naming %s", err, EnvDir)
		}
	})
}

func TestDistinct(t *testing.T) {
	if got := Distinct([]uint64{3, 1, 3, 2, 1}); got != 3 {
		t.Errorf("Distinct = %d, want 3", got)
	}
}
