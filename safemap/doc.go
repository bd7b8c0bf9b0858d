// Package safemap provides [SafeMap], a generic map that is safe for
// concurrent use and gives memory back after deletions.
//
// A built-in Go map never shrinks (golang/go#20135): a map that once held a
// million entries keeps the tables for a million entries after all but a few
// are deleted. SafeMap tracks how large its table has been and, once most of
// it is empty, moves the live entries into a fresh map a few at a time, so
// memory follows the live set without a stop-the-world copy.
//
// # Model
//
// A SafeMap is one sync.RWMutex over up to two built-in maps:
//
//	cur  receives every new key; always present once the map has been written
//	old  the previous table while it is being emptied into cur; nil otherwise
//
// A key lives in exactly one of them. Get looks in cur, then in old. Set of a
// key still in old updates it there; any other Set writes to cur. Delete
// removes the key from whichever map holds it.
//
// # Shrink policy
//
// peak is the largest Len since cur was created. After a delete, when
//
//	peak >= 64  and  Len < peak/4
//
// and no migration is running, cur becomes old, an empty map becomes cur,
// and peak is reset to Len. From then on every mutating call (Set, Delete,
// LoadAndDelete) first finishes its own work and then moves at most 4 entries
// from old to cur, following one resumable iteration over old. When that
// iteration ends, old is dropped and the garbage collector reclaims its
// tables. If old empties sooner (the caller deleted what was left), it is
// dropped at once. A map whose live set falls to zero is simply replaced.
//
// Costs, with n = Len when a migration starts:
//
//   - Amortized O(1) per delete. A migration copies n entries, and it starts
//     only after at least 3n deletes since the previous one (peak >= 4n), so
//     each delete pays for at most one third of a copied entry.
//   - No long pause. A mutating call moves at most 4 entries. The resumable
//     iteration visits every slot of old once over the whole migration, so
//     skipping empty slots is also O(1) amortized; a single call can still
//     scan a long run of empty slots if the caller has deleted most of the
//     entries that were not yet moved (about 3 ms per million empty slots
//     on a 2020s x86 core, in the worst case when one entry is left at the
//     far end of a table sized for millions).
//   - Bounded duration. A migration ends within n/4+1 mutating calls made
//     while no Range runs, before the next one can be due (that needs 3n/4
//     deletes).
//   - Memory. Outside a migration (and unless a Range postponed one, see
//     Iteration), Len >= peak/4, so the table was last sized
//     for fewer than 4*Len entries: the heap it holds is within a small
//     factor of what a map freshly filled with the live entries holds (the
//     package tests assert 4x; a peak of 1M shrunk to 5,000 entries measures
//     2.1x on go1.26/amd64, against about 250x for a built-in map). During
//     a migration old, still sized for the previous peak, is held as well:
//     that is the memory being given back, and it becomes garbage when the
//     migration ends.
//   - Range costs about 60 ns per entry (the iteration is resumable, so it
//     goes through reflect.MapIter), against about 20 ns for a for-range
//     over a built-in map.
//   - Lookups of keys not yet moved cost two hash lookups during a migration.
//     Get never moves entries: a map that only sees reads after its
//     deletions keeps its migration, and old, until the next write.
//   - Maps whose peak stays below 64 entries are never rebuilt.
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
// To keep these guarantees no entry moves between old and cur while any
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
// such entries over in one extra pass over old when it ends.
//
// All methods are safe for concurrent use.
package safemap
