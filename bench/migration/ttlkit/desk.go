package app

import (
	"fmt"
	"io"
	"slices"
	"time"

	"github.com/ttlkit/ttlkit/collection"
)

// peakBucket is a bucket of the program's own: the largest value added in
// its interval.
type peakBucket struct{ peak int64 }

func (b *peakBucket) Add(v int64) { b.peak = max(b.peak, v) }
func (b *peakBucket) Reset()      { b.peak = 0 }

var _ collection.BucketInterface[int64] = (*peakBucket)(nil)

// total adds up the buckets of a window, for any numerical type.
func total[T collection.Numerical](w *collection.RollingWindow[T, *collection.Bucket[T]]) (sum T, n int64) {
	w.Reduce(func(b *collection.Bucket[T]) {
		sum += b.Sum
		n += b.Count
	})
	return sum, n
}

// Desk is the service's operations desk: the last requests in a Ring,
// background jobs in a Queue, feature tags in a Set, and request latencies
// in RollingWindows. Its windows have one-hour buckets, so everything it
// adds lands in the current bucket and the output is the same on every
// run.
func Desk(w io.Writer) error {
	recent := collection.NewRing(3)
	for _, path := range []string{"/login", "/whoami", "/profile", "/whoami", "/logout"} {
		recent.Add(path)
	}
	fmt.Fprintf(w, "desk: last 3 requests: %v\n", recent.Take())

	jobs := collection.NewQueue(1)
	for _, job := range []string{"resize avatar", "send welcome mail", "rebuild index"} {
		jobs.Put(job)
	}
	for !jobs.Empty() {
		job, _ := jobs.Take()
		fmt.Fprintf(w, "desk: ran job %v\n", job)
	}
	_, more := jobs.Take()
	fmt.Fprintf(w, "desk: more jobs: %v\n", more)

	tags := collection.NewSet[string]()
	tags.Add("sessions", "cache", "sessions", "timers")
	tags.Remove("cache")
	keys := tags.Keys()
	slices.Sort(keys)
	fmt.Fprintf(w, "desk: %d tags %v, cache: %v\n", tags.Count(), keys, tags.Contains("cache"))
	tags.Clear()

	latency := collection.NewRollingWindow(func() *collection.Bucket[float64] {
		return new(collection.Bucket[float64])
	}, 10, time.Hour)
	for _, ms := range []float64{12, 9, 30, 14} {
		latency.Add(ms)
	}
	sum, n := total(latency)
	fmt.Fprintf(w, "desk: %d requests, mean latency %.2fms\n", n, sum/float64(n))

	var completeOnly collection.RollingWindowOption[int64, *peakBucket] = collection.IgnoreCurrentBucket[int64, *peakBucket]()
	peaks := collection.NewRollingWindow(func() *peakBucket { return new(peakBucket) }, 4, time.Hour, completeOnly)
	peaks.Add(250)
	buckets, peak := 0, int64(0)
	peaks.Reduce(func(b *peakBucket) {
		buckets++
		peak = max(peak, b.peak)
	})
	fmt.Fprintf(w, "desk: peak over %d complete hours: %d (the current hour is left out)\n", buckets, peak)

	var counter collection.Bucket[int]
	counter.Add(2)
	counter.Add(3)
	fmt.Fprintf(w, "desk: bucket sum %d of %d values\n", counter.Sum, counter.Count)
	counter.Reset()
	return nil
}
