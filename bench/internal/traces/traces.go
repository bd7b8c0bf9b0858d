// Package traces reads the real cache access traces that the hit-ratio
// benchmarks replay. The files are third-party and are not part of the
// repository: they live in a folder shared by the machines that measure
// (`../shared/traces` from the repository root, see [Dir]), and a clone
// without that folder skips the benchmarks that need them.
//
// Each [Trace] names one file, its compression (chosen by its extension:
// .zst, .xz or .gz, decoded in Go, no external command) and its record
// format ([Format]). [Load] returns the first accesses of a trace as uint64
// keys, in order. The formats are the ones Caffeine's simulator reads; the
// README next to the files says where each comes from.
package traces

import (
	"bufio"
	"compress/gzip"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/klauspost/compress/zstd"
	"github.com/ulikunitz/xz"
)

// EnvDir is the environment variable that overrides where the traces are.
const EnvDir = "TTLKIT_TRACES"

// DefaultRel is where the traces are from the bench module's directory:
// `../shared/traces` from the repository root.
const DefaultRel = "../../shared/traces"

// A Format is how a trace file lays out its accesses (after decompression).
type Format int

const (
	formatInvalid Format = iota
	// ARC is the .lis format of the ARC paper's traces: one line per
	// request, "start count ignored ignored"; blocks start through
	// start+count-1 are accessed one after the other.
	ARC
	// Int64BE is 8-byte big-endian keys back to back (Scarab's traces).
	Int64BE
	// Int32BE is 4-byte big-endian keys back to back (cache2k's traces).
	Int32BE
	// LIRS is one decimal key per line; a line "*" is a marker, skipped
	// (the LIRS paper's traces).
	LIRS
)

func (f Format) String() string {
	switch f {
	case ARC:
		return "arc"
	case Int64BE:
		return "int64be"
	case Int32BE:
		return "int32be"
	case LIRS:
		return "lirs"
	}
	return "invalid"
}

// A Trace is one file of the shared folder.
type Trace struct {
	Name   string // short name used in benchmark names: "oltp"
	File   string // file name in the folder
	Format Format
}

// All lists the traces of the shared folder, in the order they are
// reported.
var All = []Trace{
	{Name: "oltp", File: "OLTP.lis.zst", Format: ARC},
	{Name: "scarab", File: "scarab-recs.trace.xz", Format: Int64BE},
	{Name: "web12", File: "web12.trace.xz", Format: Int32BE},
	{Name: "loop", File: "loop.trace.gz", Format: LIRS},
	{Name: "sprite", File: "sprite.trace.gz", Format: LIRS},
}

// ErrNoTraces is returned (wrapped) by Dir when the folder does not exist.
var ErrNoTraces = errors.New("traces: folder not found")

// Dir returns the folder holding the traces: $TTLKIT_TRACES if set,
// otherwise DefaultRel resolved from benchDir (the bench module's
// directory, where go test runs its package). The error wraps ErrNoTraces
// and says where it looked when the folder is missing.
func Dir(benchDir string) (string, error) {
	dir := os.Getenv(EnvDir)
	from := EnvDir
	if dir == "" {
		dir = filepath.Join(benchDir, DefaultRel)
		from = "../shared/traces from the repository root"
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return "", err
	}
	st, err := os.Stat(abs)
	if err != nil || !st.IsDir() {
		return "", fmt.Errorf("%w: no directory %s (%s); set %s to the folder of real cache traces", ErrNoTraces, abs, from, EnvDir)
	}
	return abs, nil
}

// Load returns the first max accesses of t (all of them if max <= 0 or the
// trace is shorter) read from dir.
func Load(dir string, t Trace, max int) ([]uint64, error) {
	f, err := os.Open(filepath.Join(dir, t.File))
	if err != nil {
		return nil, err
	}
	defer f.Close()
	r, closeDec, err := decompress(f, t.File)
	if err != nil {
		return nil, fmt.Errorf("traces: %s: %w", t.File, err)
	}
	defer closeDec()
	keys, err := Read(r, t.Format, max)
	if err != nil {
		return nil, fmt.Errorf("traces: %s: %w", t.File, err)
	}
	return keys, nil
}

// decompress wraps r in the decoder its file name's extension asks for; a
// name with none of .zst, .xz and .gz is read as is.
func decompress(r io.Reader, name string) (io.Reader, func(), error) {
	br := bufio.NewReaderSize(r, 1<<16)
	switch filepath.Ext(name) {
	case ".zst":
		d, err := zstd.NewReader(br, zstd.WithDecoderConcurrency(1))
		if err != nil {
			return nil, nil, err
		}
		return d, d.Close, nil
	case ".xz":
		d, err := xz.NewReader(br)
		if err != nil {
			return nil, nil, err
		}
		return d, func() {}, nil
	case ".gz":
		d, err := gzip.NewReader(br)
		if err != nil {
			return nil, nil, err
		}
		return d, func() { d.Close() }, nil
	}
	return br, func() {}, nil
}

// Read parses accesses in format f from r, at most max of them (no limit if
// max <= 0). A malformed record is an error naming its line or offset; a
// binary trace that ends inside a key is an error too.
func Read(r io.Reader, f Format, max int) ([]uint64, error) {
	full := func(keys []uint64) bool { return max > 0 && len(keys) >= max }
	var keys []uint64
	switch f {
	case Int64BE, Int32BE:
		size := 8
		if f == Int32BE {
			size = 4
		}
		br := bufio.NewReaderSize(r, 1<<16)
		buf := make([]byte, size)
		for off := int64(0); !full(keys); off += int64(size) {
			if _, err := io.ReadFull(br, buf); err != nil {
				if errors.Is(err, io.EOF) {
					break
				}
				return nil, fmt.Errorf("key at byte %d: %w", off, err)
			}
			if size == 8 {
				keys = append(keys, binary.BigEndian.Uint64(buf))
			} else {
				keys = append(keys, uint64(binary.BigEndian.Uint32(buf)))
			}
		}
		return keys, nil
	case ARC, LIRS:
		sc := bufio.NewScanner(r)
		for line := 1; !full(keys) && sc.Scan(); line++ {
			text := strings.TrimSpace(sc.Text())
			if text == "" || (f == LIRS && text == "*") {
				continue
			}
			var err error
			if f == LIRS {
				var k uint64
				k, err = strconv.ParseUint(text, 10, 64)
				keys = append(keys, k)
			} else {
				keys, err = appendARC(keys, text, max)
			}
			if err != nil {
				return nil, fmt.Errorf("line %d: %w", line, err)
			}
		}
		if err := sc.Err(); err != nil {
			return nil, err
		}
		return keys, nil
	}
	return nil, fmt.Errorf("format %d: %w", f, fs.ErrInvalid)
}

// appendARC appends the blocks of one .lis request line, stopping at max
// keys in all.
func appendARC(keys []uint64, line string, max int) ([]uint64, error) {
	fields := strings.Fields(line)
	if len(fields) < 2 {
		return keys, fmt.Errorf("%q: want start and count", line)
	}
	start, err := strconv.ParseUint(fields[0], 10, 64)
	if err != nil {
		return keys, err
	}
	count, err := strconv.ParseUint(fields[1], 10, 64)
	if err != nil {
		return keys, err
	}
	for i := range count {
		if max > 0 && len(keys) >= max {
			break
		}
		keys = append(keys, start+i)
	}
	return keys, nil
}

// Distinct returns the number of distinct keys in keys.
func Distinct(keys []uint64) int {
	seen := make(map[uint64]struct{}, len(keys)/4)
	for _, k := range keys {
		seen[k] = struct{}{}
	}
	return len(seen)
}
