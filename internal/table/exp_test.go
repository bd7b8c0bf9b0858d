package table

import (
	"hash/maphash"
	"strconv"
	"sync/atomic"
	"testing"
)

type xent struct {
	key  string
	want atomic.Int64
	plain int64
	pad  [5]uint64
}

func xsetup(n int) (*Table[string, xent], []string, []int) {
	t := New[string, xent](func(e *xent) string { return e.key }, n)
	var buf []byte
	ends := make([]int, n)
	for i := range n {
		buf = append(buf, "key-"...)
		buf = strconv.AppendInt(buf, int64(i), 10)
		ends[i] = len(buf)
	}
	all := string(buf)
	keys := make([]string, n)
	st := 0
	for i, e := range ends {
		keys[i] = all[st:e]
		st = e
	}
	for _, k := range keys {
		e := &xent{key: k}
		t.Put(e, t.Hash(k))
	}
	order := make([]int, n)
	s := n*618/1000 | 1
	p := 0
	for i := range order {
		order[i] = p
		p = (p + s) % n
	}
	return t, keys, order
}

const xn = 1 << 20

func BenchmarkXSeqAtomic(b *testing.B) {
	t, keys, order := xsetup(xn)
	b.ResetTimer()
	for i := range b.N {
		k := keys[order[i&(xn-1)]]
		e := t.Get(k, t.Hash(k))
		e.want.Store(int64(i))
	}
}

func BenchmarkXSeqPlain(b *testing.B) {
	t, keys, order := xsetup(xn)
	b.ResetTimer()
	for i := range b.N {
		k := keys[order[i&(xn-1)]]
		e := t.Get(k, t.Hash(k))
		e.plain = int64(i)
	}
}

type xop struct {
	key  string
	when int64
}

func BenchmarkXBatched(b *testing.B) {
	t, keys, order := xsetup(xn)
	const bs = 128
	batch := make([]xop, 0, bs)
	hs := make([]uint64, bs)
	var sink uint64
	b.ResetTimer()
	for i := range b.N {
		batch = append(batch, xop{keys[order[i&(xn-1)]], int64(i)})
		if len(batch) == bs || i == b.N-1 {
			// stage 0: touch key bytes
			for _, op := range batch {
				sink += uint64(op.key[0])
			}
			for j, op := range batch {
				hs[j] = t.Hash(op.key)
			}
			a := t.arr.Load()
			for j := range batch {
				sink += a.groups[hs[j]&a.mask].tags.Load()
			}
			for j := range batch {
				grp := &a.groups[hs[j]&a.mask]
				tags := grp.tags.Load()
				if m := matches(tags, tagOf(hs[j])); m != 0 {
					if e := grp.slots[bitsTZ(m)].Load(); e != nil {
						sink += uint64(len(e.key))
					}
				}
			}
			for j, op := range batch {
				e := t.Get(op.key, hs[j])
				e.want.Store(op.when)
			}
			batch = batch[:0]
		}
	}
	_ = sink
}

func bitsTZ(m uint64) int {
	i := 0
	for m&0xff == 0 {
		m >>= 8
		i++
	}
	return i
}

func BenchmarkXHarness(b *testing.B) {
	_, keys, order := xsetup(xn)
	var sink uint64
	b.ResetTimer()
	for i := range b.N {
		k := keys[order[i&(xn-1)]]
		sink += uint64(k[0])
	}
	_ = sink
}

func BenchmarkXHarnessHash(b *testing.B) {
	t, keys, order := xsetup(xn)
	var sink uint64
	b.ResetTimer()
	for i := range b.N {
		k := keys[order[i&(xn-1)]]
		sink += t.Hash(k)
	}
	_ = sink
}

func BenchmarkXHarnessHashString(b *testing.B) {
	t, keys, order := xsetup(xn)
	var sink uint64
	b.ResetTimer()
	for i := range b.N {
		k := keys[order[i&(xn-1)]]
		sink += maphash.String(t.seed, k)
	}
	_ = sink
}
