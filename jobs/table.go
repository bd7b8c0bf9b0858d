package jobs

import (
	"hash/maphash"
	"sync"
	"sync/atomic"

	"github.com/ttlkit/ttlkit/internal/table"
)

// tableShards is the number of shards of the job table: a power of two,
// enough that a shard's rebuild (O(its jobs), under its lock) stays short
// at millions of jobs.
const tableShards = 64

// jobTable is the table of jobs by ID: tableShards open-addressing tables
// (internal/table), each under its own mutex. A slot is one pointer and a
// tag byte, and one probe both checks an ID and finds the slot to insert
// it in: against a built-in map[string]*job, Add touches half the memory
// (no copy of the ID's header beside the pointer), and growing a shard
// rehashes only that shard's jobs.
type jobTable struct {
	seed   maphash.Seed // every shard's: one hash picks the shard and the slot
	shards [tableShards]tableShard
	n      atomic.Int64 // jobs in the table; written under a shard's lock
}

// tableShard is one shard. t is replaced, not cleared, at Shutdown, so
// that the old one can still be read without the lock.
type tableShard struct {
	mu sync.Mutex
	t  *table.Table[string, job]
}

func jobID(j *job) string { return j.id }

func (tb *jobTable) init() {
	tb.seed = maphash.MakeSeed()
	for i := range tb.shards {
		tb.shards[i].t = tb.fresh()
	}
}

// fresh returns an empty table that hashes as tb's others do.
func (tb *jobTable) fresh() *table.Table[string, job] {
	t := new(table.Table[string, job])
	t.InitSeed(jobID, 0, tb.seed)
	return t
}

// hash returns id's hash and its shard.
func (tb *jobTable) hash(id string) (uint64, *tableShard) {
	h := maphash.Comparable(tb.seed, id) // as the shards' Hash, which InitSeed gave tb.seed
	return h, &tb.shards[table.Shard(h, tableShards)]
}

// insert puts j in the table under its ID, unless closing is set. If
// another job has the ID, it returns ErrDuplicate, or with replace
// puts j in its place and returns it.
func (tb *jobTable) insert(j *job, replace bool, closing *atomic.Bool) (old *job, err error) {
	h, sh := tb.hash(j.id)
	sh.mu.Lock()
	defer sh.mu.Unlock()
	if closing.Load() {
		return nil, ErrClosed
	}
	old, pos := sh.t.Find(j.id, h)
	switch {
	case old == nil:
		sh.t.Insert(pos, j, h)
		tb.n.Add(1)
	case replace:
		sh.t.Put(j, h)
	default:
		return nil, ErrDuplicate
	}
	return old, nil
}

// detach empties the table and returns what it held, shard by shard: the
// tables, now read by the caller alone.
func (tb *jobTable) detach() []*table.Table[string, job] {
	old := make([]*table.Table[string, job], 0, tableShards)
	for i := range tb.shards {
		sh := &tb.shards[i]
		sh.mu.Lock()
		old = append(old, sh.t)
		tb.n.Add(-int64(sh.t.Len()))
		sh.t = tb.fresh()
		sh.mu.Unlock()
	}
	return old
}

// get returns the job with the ID id, or nil.
func (tb *jobTable) get(id string) *job {
	h, sh := tb.hash(id)
	sh.mu.Lock()
	j := sh.t.Get(id, h)
	sh.mu.Unlock()
	return j
}

// remove takes the job with the ID id out of the table and returns it, or
// nil if there is none.
func (tb *jobTable) remove(id string) *job {
	h, sh := tb.hash(id)
	sh.mu.Lock()
	j := sh.t.Delete(id, h)
	if j != nil {
		tb.n.Add(-1)
	}
	sh.mu.Unlock()
	return j
}

// removeJob takes j out of the table if it is still there under its ID.
func (tb *jobTable) removeJob(j *job) {
	h, sh := tb.hash(j.id)
	sh.mu.Lock()
	if sh.t.DeleteEntry(j, h) {
		tb.n.Add(-1)
	}
	sh.mu.Unlock()
}

// all calls f, with no shard locked, for every job in the table when the
// call begins (jobs added or removed meanwhile may or may not be seen).
func (tb *jobTable) all(f func(*job)) {
	var batch []*job
	for i := range tb.shards {
		sh := &tb.shards[i]
		batch = batch[:0]
		sh.mu.Lock()
		sh.t.All(func(j *job) bool {
			batch = append(batch, j)
			return true
		})
		sh.mu.Unlock()
		for _, j := range batch {
			f(j)
		}
	}
}
