// Package safemap provides [SafeMap], a generic map that is safe for
// concurrent use and gives memory back after deletions.
//
//	var sessions safemap.SafeMap[string, *Session] // the zero value is ready
//	sessions.Set(id, s)
//	s, ok := sessions.Get(id)
//	sessions.Delete(id)
//	for id, s := range sessions.All() { // holds no lock while the loop body runs
//		...
//	}
//
// A built-in Go map never shrinks (golang/go#20135): a map that once held a
// million entries keeps the tables for a million entries after all but a few
// are deleted. A SafeMap notices when most of its table is empty and moves
// the live entries into a fresh one, a few per write, so its memory follows
// the live set without a stop-the-world copy.
//
// In plain words: every method is safe for concurrent use; Range and All
// never hold a lock while your code runs, so it may change the map; a map
// that has shrunk to a quarter of its peak size (from a peak of at least 64
// entries) starts giving its memory back, and holds at most a small factor
// more than a freshly filled map once that is done. There are no options.
//
// Costs: one read or write lock per call, and a delete pays amortized O(1)
// for the moves; no call moves more than 4 entries. Range costs about 60ns
// per entry, against 20ns for a for-range over a built-in map. How it works
// is in doc/design/safemap-collection.md.
//
// # Memory
//
// Let peak be the largest Len since the table was last rebuilt. After a
// delete that leaves Len below peak/4 (with peak at least 64), the map
// starts a migration: new keys go to a fresh table, and every later Set,
// Delete or LoadAndDelete moves at most 4 entries from the old table,
// which is dropped when it is empty. Maps whose peak stays below 64
// entries are never rebuilt.
//
//   - Amortized O(1) per delete. A migration copies Len entries and starts
//     only after at least three times as many deletes since the previous
//     one, so each delete pays for at most a third of a copied entry.
//   - No long pause. A call moves at most 4 entries. Skipping the old
//     table's empty slots is O(1) amortized too; a single call can still
//     scan a long run of empty slots when the caller has deleted most of
//     the entries not yet moved (about 3 ms per million empty slots in the
//     worst case, one entry left at the far end of a table sized for
//     millions).
//   - Bounded duration. A migration of n entries ends within n/4+1
//     mutating calls made while no Range runs, before the next one can be
//     due.
//   - Memory. Outside a migration (and unless a Range postponed one, see
//     Iteration), the table was last sized for fewer than 4 × Len entries:
//     the package tests assert at most 4x the heap of a map freshly filled
//     with the live entries (a peak of 1M shrunk to 5,000 entries measures
//     2.1x on go1.26/amd64, against about 250x for a built-in map). During
//     a migration the old table is held as well: that is the memory being
//     given back.
//   - Lookups of keys not yet moved cost two hash lookups during a
//     migration. Get never moves entries: a map that only sees reads after
//     its deletions keeps its migration, and the old table, until the next
//     write.
//
// # Iteration
//
// [SafeMap.Range] and [SafeMap.All] never hold a lock while calling the
// caller's function. They read entries in batches of at most 64 under the
// read lock and then pass that batch on with no lock held, so f may call any
// method of the map, including Range itself. Relative to changes made during
// the call, by f or by other goroutines, the outcome is that of a for-range
// loop over a built-in map whose body made the same changes, widened by one
// batch:
//
//   - every key present, and not deleted, for the whole call is passed
//     exactly once;
//   - a key deleted before its batch is read is not passed; one deleted
//     after its batch was read may still be passed, with the value it had
//     when its batch was read;
//   - a key added during the call may or may not be passed, and a key
//     deleted and added again may be passed twice (as with a built-in map);
//   - after [SafeMap.Clear], nothing more is passed.
//
// To keep these guarantees no entry moves between the tables while any
// Range is running: migrations pause (and none starts) until every Range
// has returned. A Range that never returns, for example an All iterator
// whose loop blocks forever, therefore keeps memory from being given back.
//
// # Zero value, nil values and special keys
//
// The zero SafeMap is empty and ready to use; [New] only saves writing &.
// A SafeMap must not be copied after first use, and its methods panic on a
// nil *SafeMap. A stored nil value (nil pointer, interface, slice or map) is
// an entry like any other: Get reports it with ok == true.
//
// Keys behave as in a built-in map. If K is an interface type, storing or
// looking up a key whose dynamic type is not comparable (a slice, a map, a
// func) panics, exactly as a built-in map does; the lock is released first,
// so the map stays usable. A floating-point key that is NaN is never equal
// to itself: each Set with a NaN key adds a new entry that Get and Delete
// cannot reach, and only Range, Len and Clear see it; a migration carries
// such entries over in one extra pass over the old table when it ends.
//
// All methods are safe for concurrent use.
package safemap
