package safemap_test

import (
	"fmt"
	"slices"

	"github.com/ttlkit/ttlkit/safemap"
)

func Example() {
	sessions := safemap.New[string, int]()
	sessions.Set("alice", 3)
	sessions.Set("bob", 5)

	if n, ok := sessions.Get("alice"); ok {
		fmt.Println("alice:", n)
	}
	if old, ok := sessions.LoadAndDelete("bob"); ok {
		fmt.Println("removed bob:", old)
	}
	_, ok := sessions.Get("bob")
	fmt.Println("bob present:", ok, "len:", sessions.Len())
	// Output:
	// alice: 3
	// removed bob: 5
	// bob present: false len: 1
}

// Range does not hold a lock while calling f, so f may modify the map:
// here it deletes every expired entry it is passed.
func ExampleSafeMap_Range() {
	ttl := safemap.New[string, int]()
	for i, name := range []string{"a", "b", "c", "d", "e"} {
		ttl.Set(name, i)
	}
	ttl.Range(func(key string, remaining int) bool {
		if remaining < 2 {
			ttl.Delete(key)
		}
		return true
	})
	var left []string
	for key := range ttl.All() {
		left = append(left, key)
	}
	slices.Sort(left)
	fmt.Println(left)
	// Output: [c d e]
}

// A map that grew large and then shrank gives its memory back: after the
// deletes it holds tables sized for its live entries, not for its peak.
func ExampleSafeMap_Delete() {
	var m safemap.SafeMap[int, []byte] // the zero value is ready to use
	for i := range 100_000 {
		m.Set(i, make([]byte, 16))
	}
	for i := range 99_000 {
		m.Delete(i)
	}
	fmt.Println(m.Len())
	// Output: 1000
}
