package collection_test

import (
	"fmt"
	"slices"
	"time"

	"github.com/ttlkit/ttlkit/collection"
)

// handTicker is a Ticker that ticks when the example says so, which keeps
// the TimingWheel example's output the same on every run.
type handTicker chan time.Time

func (h handTicker) Chan() <-chan time.Time { return h }
func (h handTicker) Stop()                  {}

func ExampleTimingWheel() {
	ticks := make(handTicker)
	fired := make(chan string)
	tw, err := collection.NewTimingWheelWithTicker(time.Second, 60, func(key, value any) {
		fired <- fmt.Sprintf("%v: %v", key, value) // on a worker goroutine
	}, ticks)
	if err != nil {
		panic(err)
	}
	defer tw.Stop()

	tw.SetTimer("order:7", "cancel unpaid order", 3*time.Second)
	tw.SetTimer("order:8", "cancel unpaid order", 3*time.Second)
	tw.MoveTimer("order:7", 2*time.Second) // now due on the 2nd tick
	tw.RemoveTimer("order:8")              // paid: never fires

	for range 3 {
		ticks <- time.Time{}
	}
	fmt.Println(<-fired)
	// Output: order:7: cancel unpaid order
}

func ExampleCache() {
	c, err := collection.NewCache(time.Minute, collection.WithLimit(1000), collection.WithName("profiles"))
	if err != nil {
		panic(err)
	}
	defer c.Close() // go-zero's Cache has no Close

	loads := 0
	load := func() (any, error) {
		loads++
		return "Ada Lovelace", nil
	}
	v, err := c.Take("user:1", load) // a miss: runs load
	fmt.Println(v, err)
	v, err = c.Take("user:1", load) // a hit
	fmt.Println(v, err, "loads:", loads)

	c.Del("user:1")
	_, ok := c.Get("user:1")
	fmt.Println("after Del:", ok)
	// Output:
	// Ada Lovelace <nil>
	// Ada Lovelace <nil> loads: 1
	// after Del: false
}

func ExampleSafeMap() {
	m := collection.NewSafeMap()
	m.Set("alice", 30)
	m.Set("bob", 25)
	m.Del("bob")
	age, ok := m.Get("alice")
	fmt.Println(age, ok, m.Size())

	// Range calls f with no lock held, so f may write to the map.
	m.Range(func(key, val any) bool {
		m.Set(key, val.(int)+1)
		return true
	})
	fmt.Println(m.Get("alice"))
	// Output:
	// 30 true 1
	// 31 true
}

func ExampleSet() {
	var tags collection.Set[string] // the zero value is ready; NewSet works too
	tags.Add("go", "cache", "go")
	tags.Remove("cache")
	tags.Add("timer")
	fmt.Println(tags.Count(), tags.Contains("go"), tags.Contains("cache"))
	fmt.Println(slices.Sorted(slices.Values(tags.Keys()))) // Keys has no order
	// Output:
	// 2 true false
	// [go timer]
}

func ExampleQueue() {
	q := collection.NewQueue(2) // grows past 2 as needed
	for _, job := range []string{"resize", "upload", "notify"} {
		q.Put(job)
	}
	for !q.Empty() {
		job, _ := q.Take()
		fmt.Println(job)
	}
	_, ok := q.Take()
	fmt.Println("more:", ok)
	// Output:
	// resize
	// upload
	// notify
	// more: false
}

func ExampleRing() {
	last3 := collection.NewRing(3)
	for _, ms := range []int{12, 9, 30, 14, 11} {
		last3.Add(ms)
	}
	fmt.Println(last3.Take()) // the three most recent, oldest first
	fmt.Println(last3.Take()) // Take does not remove them
	// Output:
	// [30 14 11]
	// [30 14 11]
}

func ExampleRollingWindow() {
	// Ten buckets of one minute: a sliding window over the last ten minutes.
	// (This example runs well within one minute, so every value lands in the
	// current bucket.)
	latencies := collection.NewRollingWindow(func() *collection.Bucket[float64] {
		return new(collection.Bucket[float64])
	}, 10, time.Minute)
	for _, ms := range []float64{12, 9, 30} {
		latencies.Add(ms)
	}

	var sum float64
	var n int64
	latencies.Reduce(func(b *collection.Bucket[float64]) {
		sum += b.Sum
		n += b.Count
	})
	fmt.Printf("%d requests, mean %.0fms\n", n, sum/float64(n))
	// Output: 3 requests, mean 17ms
}

func ExampleIgnoreCurrentBucket() {
	// A window that leaves out the bucket still being filled: right after
	// the Adds, nothing is complete yet.
	w := collection.NewRollingWindow(func() *collection.Bucket[int] {
		return new(collection.Bucket[int])
	}, 5, time.Minute, collection.IgnoreCurrentBucket[int, *collection.Bucket[int]]())
	w.Add(1)
	w.Add(2)
	var total int64
	w.Reduce(func(b *collection.Bucket[int]) { total += b.Count })
	fmt.Println("complete buckets hold", total, "values")
	// Output: complete buckets hold 0 values
}
